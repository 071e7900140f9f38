"""The learned-index problem every learned-index optimizer is given (``LearnedIndexProblem``), the meta-training
environments a learned tuner may train on (``TrainingTask``), and the kind's optimizer base
(``LearnedIndexOptimizer``: its ``_check`` validates every proposed value against the problem's space).

The objective told to every learned-index optimizer is thread CPU nanoseconds per operation (lower is better;
time spent waiting for a core on a busy machine is not in it), with ``TrialResult.metrics`` = {"cpu_ns_per_op",
"throughput_ops" (wall time), "p99_ns", "memory_bytes", "unsafe": 0/1, **the index's statistics}. A trial stopped
by the safety cut (CPU time per operation over the default's / ``safety``) is ``failed`` with reason
"unsafe: ..." and ``metrics["unsafe"] = 1``. A trained LITune's manifest records the unit it was rewarded on
(``OBJECTIVE``); LITune refuses a model rewarded on another (one without the field: ``EARLIER``, wall time).

>>> from advisor.core.params import ParamSpec, ParamSpace
>>> from advisor.core.domain import LearnedIndexParam
>>> p = LearnedIndexProblem(ParamSpace((ParamSpec("density", 0.1, 1.0, default="0.7"),)), "alex", (0.5,))
>>> p.config((LearnedIndexParam("density", 0.9),))
{'density': '0.9'}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from advisor.core.domain import LearnedIndexParam, TrialResult
from advisor.core.errors import AdvisorError
from advisor.core.params import ParamSpace, as_text
from optimizers.base import Config, ContractViolation, Optimizer


OBJECTIVE = "thread CPU ns per operation"  # what the objective (and a trained LITune's reward) is measured in
EARLIER = "wall-time ns per operation"  # ... and what it was for a model whose manifest does not say (before)


@dataclass(frozen=True)
class TrainingTask:
    """One environment for meta-training (a dataset x workload): its descriptor and a function that runs one
    configuration there (objective = thread CPU ns per op, lower better; metrics set as for a trial)."""

    name: str
    features: tuple[float, ...]
    evaluate: Callable[[Mapping[str, str]], TrialResult]


@dataclass(frozen=True)
class LearnedIndexProblem:
    """A learned index's parameter space and what a tuner may read besides: the index's name (for people and
    model files; never branched on), this run's dataset + workload descriptor, the safety fraction (a trial
    whose CPU time per operation is over the default's / ``safety`` is unsafe), a memory bound (bytes) and the meta-training tasks."""

    space: ParamSpace
    index: str
    features: tuple[float, ...] = ()
    safety: float = 0.5
    memory_limit_bytes: int | None = None
    training: Callable[[], Sequence[TrainingTask]] | None = None

    def config(self, changes: Config) -> dict[str, str]:
        """Every parameter: the defaults with ``changes`` (typed values) on top, as texts."""
        return {**self.space.default_config(),
                **{c.name: as_text(c.value) for c in changes if isinstance(c, LearnedIndexParam)}}


class LearnedIndexOptimizer(Optimizer[LearnedIndexProblem]):
    kind = "learned-index"
    change_types = (LearnedIndexParam,)

    def _check(self, config: Config) -> None:
        try:
            self.problem.space.validate({c.name: c.value for c in config})
        except AdvisorError as e:
            raise ContractViolation(f"{self.name} proposed an invalid parameter value: {e}") from None
