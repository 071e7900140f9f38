"""The engine-neutral connector protocol. Postgres implements it first; MySQL/MariaDB joins later."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from advisor.core.domain import Applied, Change, IndexChange, KnobSpec, Snapshot


class Connector(Protocol):
    engine: str

    def observe(self) -> Snapshot:
        """Statement stats, metrics, settings, schema with statistics, and indexes, as of now."""

    def knob_catalog(self) -> dict[str, KnobSpec]:
        """Every setting, by name, with type, unit, bounds and whether a change needs a restart."""

    def explain_cost(self, sql: str, hypothetical: Sequence[IndexChange] = ()) -> float:
        """The planner's total cost of ``sql`` (constants bound), optionally with hypothetical indexes."""

    def apply(self, changes: Sequence[Change]) -> Applied:
        """Make the changes; the result says exactly how to undo them."""

    def revert(self, applied: Applied) -> None:
        """Undo what ``apply`` did."""
