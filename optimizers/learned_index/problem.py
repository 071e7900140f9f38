"""The learned-index kind's problem and its optimizers' base (issue 31, spec C).

``LearnedIndexProblem``: the index's parameter space (``advisor.core.params.ParamSpace``), the index's name (for
people and model files; never branched on), this run's dataset + workload descriptor, the safety fraction, an
optional memory bound (bytes) and, for meta-learning tuners such as LITune, the training environments
(``TrainingTask``: a dataset x workload whose ``evaluate(config)`` runs the index and returns a ``TrialResult``
with objective = ns per operation, lower better, and its metrics).

``LearnedIndexOptimizer``: kind ``learned_index``; its configurations hold ``LearnedIndexParam`` changes, and
``ask`` checks every value against the space.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from advisor.core.domain import LearnedIndexParam, TrialResult
from advisor.core.errors import AdvisorError
from advisor.core.params import ParamSpace
from optimizers.base import Config, ContractViolation, Optimizer


@dataclass(frozen=True)
class TrainingTask:
    """One environment for meta-training (a dataset x workload)."""

    name: str
    features: tuple[float, ...]  # dataset + workload descriptor (describe(keys) and the mix)
    evaluate: Callable[[Mapping[str, str]], TrialResult]  # objective = ns per op (lower better), metrics set


@dataclass(frozen=True)
class LearnedIndexProblem:
    space: ParamSpace
    index: str  # the engine's name, for people and model files; never branched on
    features: tuple[float, ...]  # this run's dataset + workload descriptor
    safety: float = 0.5  # a trial below this fraction of the default's throughput is unsafe
    memory_limit_bytes: int | None = None
    training: Callable[[], Sequence[TrainingTask]] | None = None  # meta-training environments (LITune's)

    def config(self, changes: Iterable[LearnedIndexParam]) -> dict[str, str]:
        """Every parameter: the defaults with ``changes`` on top (validated)."""
        return self.space.full({c.name: c.value for c in changes})


class LearnedIndexOptimizer(Optimizer[LearnedIndexProblem]):
    kind = "learned_index"
    change_types = (LearnedIndexParam,)

    def _check(self, config: Config) -> None:
        names = [c.name for c in config]
        if len(set(names)) != len(names):
            raise ContractViolation(f"{self.name} set a parameter twice")
        try:
            self.problem.space.validate({c.name: c.value for c in config})
        except AdvisorError as e:
            raise ContractViolation(f"{self.name} proposed an invalid value: {e}") from None
