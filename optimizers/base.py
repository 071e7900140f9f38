"""The Optimizer base class: ask/tell. Public ``suggest``/``observe`` check invariants, then call the plugin's
``_suggest``/``_observe``. A plugin never touches a database; it gets what it needs in the TuningContext."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from advisor.core import knobvalues
from advisor.core.domain import Change, Evidence, Hardware, IndexChange, KnobChange, KnobSpec, TrialResult, Workload

if TYPE_CHECKING:
    from optimizers.indexes.problem import IndexProblem

CHANGE_TYPES: dict[str, type] = {"knobs": KnobChange, "indexes": IndexChange}


@dataclass(frozen=True)
class TuningContext:
    catalog: dict[str, KnobSpec]
    workload: Workload
    hardware: Hardware
    workload_kind: str = "mixed"  # web | oltp | dw | desktop | mixed (PGTune's vocabulary)
    max_connections: int | None = None
    data_bytes: int = 0
    indexes: "IndexProblem | None" = None  # for index optimizers: queries, candidates, budget, what-if coster


class Optimizer(ABC):
    name: ClassVar[str]
    kind: ClassVar[str]  # knobs | indexes | rewrites | learned_index
    description: ClassVar[str] = ""

    def suggest(self, context: TuningContext, n: int = 1) -> list[list[Change]]:
        """Up to ``n`` candidate configurations, each a list of changes, all valid for the catalog."""
        if n < 1:
            raise ValueError("n must be at least 1")
        out = self._suggest(context, n)[:n]
        expected = CHANGE_TYPES.get(self.kind)
        checked: list[list[Change]] = []
        for config in out:
            if expected is not None and any(not isinstance(c, expected) for c in config):
                raise TypeError(f"{self.name} is a {self.kind} optimizer but suggested another kind of change")
            checked.append([knobvalues.validate_change(context.catalog, c) if isinstance(c, KnobChange) else c
                            for c in config])
        return checked

    def observe(self, config: list[Change], evidence: Evidence | TrialResult) -> None:
        """Tell the optimizer what a configuration measured: a validation's Evidence or a trial's result."""
        self._observe(config, evidence)

    @abstractmethod
    def _suggest(self, context: TuningContext, n: int) -> list[list[Change]]: ...

    def _observe(self, config: list[Change], evidence: Evidence | TrialResult) -> None:  # stateless plugins ignore feedback
        return None
