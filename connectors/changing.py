"""Changing a database through a connector, the same for every engine (``Changing``: a connector's
``plan_changes``, ``apply``, ``revert``, ``ownership`` and ``lock_waits``): each engine says how in two modules of
its package, ``applying`` (check every change, render the SQL that applies and reverts it, apply all or undo what
was done when one fails midway, revert) and ``owning`` (whose is each change's object; how long sessions wait on
locks), and its connector names them (``applying``, ``owning``: class attributes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from advisor.core.domain import Applied, Change


class Changing:
    applying: ClassVar[Any]  # the engine's ``connectors/<engine>/applying.py``
    owning: ClassVar[Any]  # the engine's ``connectors/<engine>/owning.py``

    def plan_changes(self, changes: Sequence[Change], catalog: dict | None = None) -> Applied:
        """Check every change and render the SQL that applies and reverts it, without running anything."""
        return self.applying.plan_changes(self, changes, catalog)

    def apply(self, changes: Sequence[Change], lock_timeout_s: float | None = None) -> Applied:
        """Apply the changes (all checked first); on a failure midway, undo what was done and raise."""
        return self.applying.apply(self, changes, lock_timeout_s)

    def revert(self, applied: Applied, lock_timeout_s: float | None = None) -> None:
        self.applying.revert(self, applied, lock_timeout_s)

    def ownership(self, changes: Sequence[Change]) -> list[tuple[str, str | None]]:
        return self.owning.ownership(self, changes)

    def lock_waits(self, samples: int = 5, interval_s: float = 0.2) -> float:
        return self.owning.lock_waits(self, samples, interval_s)
