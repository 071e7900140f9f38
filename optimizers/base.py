"""The one optimizer contract, for every kind (knobs, indexes, and later rewrites and learned-index parameters).

In the spirit of MLOS's base optimizer and optuna's samplers: the *problem* is given once, at construction; the
public methods check invariants and call private hooks; optional hooks do nothing unless a plugin needs them.
No caller ever tests an optimizer's type or name::

    class Optimizer(Generic[P]):
        name: ClassVar[str]            # unique within its kind
        kind: ClassVar[str]            # knobs | indexes | rewrites | learned_index
        description: ClassVar[str]

        def __init__(self, problem: P, *, seed: int = 0, **options): ...
        def ask(self, n=1, *, current=None, pending=()) -> list[Config]       # 1..n configurations; _ask
        def tell(self, config: Config, outcome: Outcome) -> None               # failed trials too; _tell
        def state(self) -> dict                                                # JSON-safe; _state
        def restore(self, state: dict) -> None                                 # exact resume; _restore

        # hooks with do-nothing defaults
        def prepare(self, model_dir: Path | None, say: Say) -> dict | None     # load or train a model
        def explain(self) -> dict[str, str]                                    # why, per proposed item

A *configuration* (``Config``) is a tuple of changes of the optimizer's kind (``KnobChange`` for knobs,
``IndexChange`` for indexes): what to apply, all together. ``current`` is what the system under test holds now
(a knob optimizer prefers not to change restart-needing knobs without cause). ``pending`` are configurations
asked earlier whose trials still run (parallel trials): a search (``batches``) takes them into account by its own
batch mode (BoTorch's pending points, Optuna's constant liar, SMAC's next challengers, a grid's next cells) and
proposes none of them again, so N trials side by side stay N different ones. An optimizer that picks a whole set
in one go (ILP, Extend, IA2's rollout) is the same contract asked once; telling it is allowed and changes nothing.

``state()`` holds everything the next ``ask`` depends on (history, seed, model hyperparameters, trained weights),
so ``restore(state)`` on a fresh instance over the same problem asks exactly what the original would have.

Problems: ``optimizers.knobs.problem.KnobProblem`` (a knob space with the hardware, the workload kind and the
connection count), ``optimizers.indexes.problem.IndexProblem`` (queries, candidates, budget, a what-if coster).
Optimizers never touch a database: every capability they need is in the problem.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from advisor.core.domain import Change, TrialResult
from advisor.core.progress import Say

P = TypeVar("P")
Config = tuple[Change, ...]
Outcome = TrialResult  # objective (lower is better) or None, status measured | failed | infeasible, reason


class ContractViolation(AssertionError):
    """A plugin broke the optimizer contract (a bug in the plugin, never the user's input)."""


class Optimizer(ABC, Generic[P]):
    name: ClassVar[str]
    kind: ClassVar[str]
    description: ClassVar[str] = ""
    change_types: ClassVar[tuple[type, ...]] = ()  # what its configurations hold (a kind's base class says)
    # a search that proposes n different configurations per ask, none of them pending (parallel trials need it);
    # a one-shot optimizer (a rule set, a whole index set) answers the same with or without pending ones
    batches: ClassVar[bool] = False

    def __init__(self, problem: P, *, seed: int = 0, **options) -> None:
        self.problem = problem
        self.seed = int(seed)
        self._setup(**options)

    # --- the contract (public: checks, then the plugin's hook) ----------------------------------------------

    def ask(self, n: int = 1, *, current: Config | None = None, pending: Sequence[Config] = ()) -> list[Config]:
        """Between 1 and ``n`` configurations to try next, each valid for the problem; ``pending``: those asked
        before whose outcome is not told yet (a batch search proposes none of them again)."""
        if n < 1:
            raise ValueError("n must be at least 1")
        pending = tuple(tuple(c) for c in pending)
        configs = [tuple(c) for c in self._ask(n, tuple(current) if current is not None else None, pending)][:n]
        if self.batches:  # never one already running, never one twice in a batch (while something else is left)
            kept = distinct(configs, pending)
            configs = kept or configs[:1]
        if not configs:
            raise ContractViolation(f"{self.name} proposed nothing (an empty configuration is a proposal; "
                                    "no proposal is not)")
        expected = self.change_types
        for config in configs:
            if expected and any(not isinstance(c, expected) for c in config):
                raise ContractViolation(f"{self.name} is a {self.kind} optimizer but proposed another kind of change")
            self._check(config)
        return configs

    def tell(self, config: Config, outcome: Outcome) -> None:
        """What ``config`` measured (a failed or infeasible trial has ``objective`` None and its reason)."""
        if outcome.status == "measured" and outcome.objective is None:
            raise ValueError("a measured outcome needs an objective")
        self._tell(tuple(config), outcome)

    def state(self) -> dict:
        """A JSON-safe dict from which ``restore`` continues exactly where this optimizer is."""
        return {"optimizer": self.name, "kind": self.kind, "seed": self.seed, **self._state()}

    def restore(self, state: dict) -> None:
        if state.get("optimizer") not in (None, self.name):
            raise ValueError(f"state of {state.get('optimizer')!r} cannot restore a {self.name!r} optimizer")
        self.seed = int(state.get("seed", self.seed))
        self._restore(state)

    # --- optional hooks (do nothing unless a plugin needs them) -------------------------------------------------

    def prepare(self, model_dir: Path | None, say: Say) -> dict | None:
        """Load or train what the optimizer needs before it is asked (a model under ``model_dir``); returns
        statistics to report, or None when there is nothing to prepare."""
        return None

    def explain(self) -> dict[str, str]:
        """Why the last proposal looks as it does, per item (knob name, index name, ...)."""
        return {}

    def report(self) -> dict:
        """What the last proposal cost, for the pipeline to show (e.g. a rewriter's search seconds per statement:
        ``{"seconds": {queryid: s}}``); empty when there is nothing to report."""
        return {}

    # --- plugin hooks ---------------------------------------------------------------------------------------

    def _setup(self, **options) -> None:
        """Take the plugin's own options (called by ``__init__``); unknown options are an error."""
        if options:
            raise TypeError(f"{self.name} takes no option(s) {', '.join(sorted(options))}")

    @abstractmethod
    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]: ...

    def _tell(self, config: Config, outcome: Outcome) -> None:
        return None

    def _check(self, config: Config) -> None:
        """Raise ContractViolation if ``config`` is not valid for the problem (a kind's base class checks)."""
        return None

    def _state(self) -> dict:
        return {}

    def _restore(self, state: dict) -> None:
        return None


def distinct(configs: Sequence[Config], pending: Sequence[Config] = ()) -> list[Config]:
    """``configs`` without those among ``pending`` or earlier in ``configs`` (changes compared as sets).

    >>> distinct([("a",), ("b",), ("a",), ("c",)], pending=[("c",)])
    [('a',), ('b',)]
    """
    seen = {frozenset(c) for c in pending}
    out = []
    for config in configs:
        if frozenset(config) not in seen:
            seen.add(frozenset(config))
            out.append(config)
    return out
