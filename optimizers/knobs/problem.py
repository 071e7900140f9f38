"""The knob problem every knob optimizer is given, and the knob optimizers' base (its ``_check``: every proposed
value is valid for the server's catalog)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.domain import KnobChange
from advisor.core.errors import AdvisorError
from advisor.core.knobconfig import KnobConfig
from optimizers.base import Config, ContractViolation, Optimizer
from optimizers.knobs.space import KnobSpace


@dataclass(frozen=True)
class KnobProblem:
    """A knob space (knobs, ranges, constraints; the catalog, hardware and the engine's knob profile inside) and
    what rules need besides: the workload's kind (web | oltp | dw | desktop | mixed, ``workloads.statements.shape``) and the
    connection count to plan for (None: the server's own)."""

    space: KnobSpace
    workload_kind: str = "mixed"
    max_connections: int | None = None

    def config(self, changes: Config) -> KnobConfig:
        """The full configuration of the searched knobs: the server's current values with ``changes`` on top."""
        return self.space.full(changes)


class KnobOptimizer(Optimizer[KnobProblem]):
    kind = "knobs"
    change_types = (KnobChange,)

    def _check(self, config: Config) -> None:
        catalog = self.problem.space.catalog
        for change in config:
            try:
                self.problem.space.units.validate_change(catalog, change)
            except AdvisorError as e:
                raise ContractViolation(f"{self.name} proposed an invalid knob value: {e}") from None
