"""The learned-index pipeline: propose (the optimizer loop over a harness, with the safety cut) -> pick (the best
few re-measured beside the defaults) -> validate (the pick against the defaults, interleaved) -> the result a
recommendation is made of.

``tune_index`` is what a bench calls: an engine, initial keys, operation streams, an optimizer (built over
``problem(...)``), a budget and a seed in (``search`` does the same over a ``HarnessTarget``); a
``LearnedIndexResult`` out (the default and tuned measurements, the
evaluations, how many were unsafe, every trial, the finalists re-measured, the evidence). Its trials are stored when a store is given
(``kind.run`` gives it, and stores the recommendation).

- A trial's objective is its thread CPU time per operation (wall-time throughput in its metrics beside it), so
  a busy machine does not steer the search.
- Trial 0 is the defaults (no safety cut); every later trial runs with ``max_cpu_ns_per_op`` = the defaults' CPU
  ns per op / ``safety``: a configuration whose CPU time goes over it is stopped early, told to the optimizer as
  ``failed`` with ``metrics["unsafe"] = 1``, and counted in ``unsafe_evaluations``.
- The budget counts evaluations (the search's trials), the defaults' included; the re-measure's and the
  validation's rounds are not evaluations. The loop is the one every searching kind shares
  (``advisor.tuning.trials.TrialLoop``): it ends early when the optimizer asks again what it asked last (it has
  nothing new to try), and given a store it records each trial as it ends, so a killed run resumes.
- Before the defaults' trial and before the validation, a warm-up round that is not measured.
- The pick (``advisor.tuning.learned_index.finalists``): a trial is one round, and the lucky one wins a noisy
  machine, so the ``finalists`` best safe configurations (distinct, changing the defaults) are measured again
  beside the defaults in ``finalist_rounds`` rotating rounds through the measurement engine, and the pick is the
  lowest median CPU ns per operation (within 2% of it: the fewest changes, then the search's ranking; the
  defaults, with none, win their ties, and the run then keeps them); ``finalists`` in the result records every
  arm's medians and rounds. With fewer than two such configurations (or ``finalists`` < 2, or no rounds) the
  search's best is the pick.
- Validation (``advisor.tuning.learned_index.validation``): the defaults against the pick through
  the measurement engine, at most ``rounds`` rounds, decided on thread CPU time per operation (per phase, each
  weighted by its share of the operations), wall-time throughput beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from advisor.core.domain import Evidence, TrialResult
from advisor.core.progress import Say, silent
from advisor.tuning.learned_index import finalists as picking
from advisor.tuning.learned_index.finalists import Finalist
from advisor.tuning.learned_index.target import HarnessRecipe, HarnessTarget
from advisor.tuning.learned_index.validation import validate
from advisor.core.errors import AdvisorError
from advisor.tuning.executors import open_executor, ray_address
from advisor.tuning.trials import TrialLoop, TrialRecord
from optimizers.base import Optimizer
from optimizers.learned_index.problem import LearnedIndexProblem

MIN_OPS, MAX_OPS = 10_000, 200_000  # operations per round: as many as keys, within these ...
INSERT_SHARE = 0.45  # ... and inserts drawing at most this share of the keys (held out of the initial build)


def operations(n_keys: int, insert: float) -> int:
    """Operations per round for ``n_keys`` keys and an insert fraction: as many as keys (within ``MIN_OPS`` ..
    ``MAX_OPS``), fewer where the inserts would need more than ``INSERT_SHARE`` of the keys held out.

    >>> operations(20_000, 0.05), operations(20_000, 0.8), operations(1_000_000, 0.0)
    (20000, 11250, 200000)
    """
    n = min(max(n_keys, MIN_OPS), MAX_OPS)
    return min(n, int(INSERT_SHARE * n_keys / insert)) if insert > 0 else n


Trial = TrialRecord  # a learned index's trial is the one trial record of every searching kind


@dataclass
class LearnedIndexResult:
    """What a search found: ``default`` / ``tuned`` measurements ({"throughput_ops", "cpu_ns_per_op", "p99_ns",
    "memory_bytes"}: medians over the validation's kept rounds; the trials' own when not validated), ``best``
    (the best safe configuration, every parameter), ``evaluations`` and ``unsafe_evaluations``, every trial, and
    the evidence (None when not validated or when the defaults stayed best); ``finalists``: the re-measure's
    arms (``finalists.Finalist``: the defaults first; empty when there was none) and ``picked``, why the pick.
    The default and tuned figures are the re-measure's medians where there was one and no validation."""

    index: str
    best: dict[str, str]
    default: dict[str, float]
    tuned: dict[str, float]
    evaluations: int
    unsafe_evaluations: int
    trials: list[Trial] = field(default_factory=list)
    evidence: Evidence | None = None
    changes: tuple = ()
    finalists: list[Finalist] = field(default_factory=list)
    picked: str = ""

    @property
    def improved(self) -> bool:
        return bool(self.changes) and (self.evidence is None or self.evidence.accepted)


def problem(space, index: str, features: Sequence[float] = (), *, safety: float = 0.5,
            memory_limit_bytes: int | None = None, training=None) -> LearnedIndexProblem:
    return LearnedIndexProblem(space, index, tuple(float(f) for f in features), safety, memory_limit_bytes, training)


def evaluate(target: HarnessTarget, config: Mapping[str, str]) -> TrialResult:
    """One trial over the protocol (``HarnessTarget.trial``): its result alone."""
    return target.trial(config)[0]


def figures_of(result: TrialResult) -> dict[str, float]:
    m = result.metrics or {}
    return {k: float(m[k]) for k in ("throughput_ops", "cpu_ns_per_op", "p99_ns", "memory_bytes") if k in m}


def tune_index(engine, initial_keys, streams: Sequence[object], optimizer: Optimizer, budget: int, *,
               seed: int = 0, rounds: int = 5, finalists: int = picking.FINALISTS,
               finalist_rounds: int = picking.ROUNDS, say: Say = silent,
               on_trial: Callable[[Trial], None] | None = None, **stored) -> LearnedIndexResult:
    """``search`` over a harness of ``engine`` built over ``initial_keys`` running ``streams`` (the bench's entry
    point): the optimizer's problem gives the safety fraction and the memory bound. ``stored``: ``search``'s
    store, run_id, target_id and resume, and where the evaluations run (parallel, ray)."""
    prob: LearnedIndexProblem = optimizer.problem
    target = HarnessTarget(engine, initial_keys, list(streams), memory_limit_bytes=prob.memory_limit_bytes,
                           safety=prob.safety)
    return search(target, optimizer, budget, rounds=rounds, finalists=finalists, finalist_rounds=finalist_rounds,
                  seed=seed, say=say, on_trial=on_trial, **stored)


def _copies(target: HarnessTarget):
    """``n`` more copies of ``target``'s harness, warmed up (nothing to close)."""
    def make(n: int):
        recipe = HarnessRecipe.of(target)
        return [recipe.make() for _ in range(n)], lambda: None
    return make


def search(target: HarnessTarget, optimizer: Optimizer, budget: int, *, rounds: int = 5,
           finalists: int = picking.FINALISTS, finalist_rounds: int = picking.ROUNDS, seed: int = 0, say: Say = silent,
           on_trial: Callable[[Trial], None] | None = None, store=None, run_id: str | None = None,
           target_id: str | None = None, resume: bool = False, parallel: int = 1,
           ray: str | None = None) -> LearnedIndexResult:
    """The one trial loop (``advisor.tuning.trials.TrialLoop``: ``budget`` evaluations, the defaults' first,
    each stored under ``run_id`` when a ``store`` is given, and with ``resume`` the stored ones taken up again;
    ``parallel`` evaluations side by side on copies of the harness, or on Ray workers with ``ray``: see
    ``advisor.tuning.executors``),
    the pick (the ``finalists`` best safe configurations re-measured beside the defaults in ``finalist_rounds``
    rounds), then, with ``rounds`` > 0, the validation of the pick against the defaults; see the module
    docstring."""
    prob: LearnedIndexProblem = optimizer.problem

    def bounded(base: TrialRecord) -> None:  # the safety cut, from the defaults' CPU time per operation
        if base.result.status != "measured":
            raise AdvisorError(f"the index does not run with its default parameters: {base.result.reason}")
        cpu = (base.result.metrics or {}).get("cpu_ns_per_op")
        if not cpu:  # a trial stored before its CPU time was (its objective was wall time then)
            raise AdvisorError("the stored run has no CPU time for its defaults (stored by an older version): "
                               "start a new run")
        target.max_cpu_ns_per_op = cpu / prob.safety
        executor.configure(max_cpu_ns_per_op=target.max_cpu_ns_per_op)

    target.warm_up()
    with open_executor(target, parallel=parallel, ray=ray_address(ray), copies=_copies(target),
                       recipe=lambda: HarnessRecipe.of(target), say=say) as executor:
        if executor.slots > 1 or ray_address(ray):
            say(f"evaluations: {executor.describe()}")
        loop = TrialLoop(store, run_id, target_id, target, optimizer, budget, say=say, on_trial=on_trial,
                         after_default=bounded, label="evaluation", executor=executor)
        if resume:
            loop.resume_from_store()
        trials = loop.execute()
    base = next(t for t in trials if t.source == "default")
    safe = [t for t in trials if t.result.status == "measured" and t.result.objective is not None]
    best = min(safe, key=lambda t: (t.result.objective, t.number))
    unsafe = sum(1 for t in trials if (t.result.metrics or {}).get("unsafe"))
    result = LearnedIndexResult(prob.index, dict(best.config), figures_of(base.result), figures_of(best.result),
                                len(trials), unsafe, trials)
    contenders = picking.candidates(trials, prob.space, finalists)
    if len(contenders) >= 2 and finalist_rounds >= 1:
        again = picking.remeasure(target, base, contenders, prob.space, finalist_rounds, seed, say)
        best = again.chosen
        result.best, result.default, result.tuned = dict(best.config), again.default, again.tuned
        result.finalists, result.picked = again.finalists, again.why
    result.changes = tuple(prob.space.changes(best.config))
    if not result.changes or rounds < 1:
        return result
    evidence, default, tuned = validate(target, base.config, best.config, rounds, seed, say)
    result.evidence, result.default, result.tuned = evidence, default, tuned
    return result
