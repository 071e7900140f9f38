"""The store's schedules: a target's cron schedules, their runs' plans, their last fire. A mixin of
``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

import json
import time

from advisor.core.errors import NotFound
from advisor.storage.schema import new_id


class ScheduleTables:
    # --- schedules ------------------------------------------------------------------------------------------

    def add_schedule(self, target_id: str, cron: str, timezone: str, plan: dict, created_by: str,
                     fleet: str | None = None) -> str:
        """A schedule of one target, or with ``fleet`` (``all``, ``tag:NAME``) of the targets it selects at each
        firing (``target_id`` is then empty)."""
        sid = new_id()
        self.db.execute("INSERT INTO schedules (id, target_id, cron, timezone, plan, created_at, created_by, fleet) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [sid, target_id, cron, timezone, json.dumps(plan), time.time(), created_by, fleet])
        return sid

    _SCHEDULE_COLS = ("id", "target_id", "cron", "timezone", "plan", "created_at", "created_by", "last_fire_at",
                      "fleet")

    def schedules(self, target_id: str | None = None) -> list[dict]:
        rows = self.db.execute(f"SELECT {', '.join(self._SCHEDULE_COLS)} FROM schedules WHERE removed_at IS NULL "
                               "AND (? IS NULL OR target_id = ?) ORDER BY created_at", [target_id, target_id]).fetchall()
        return [{**dict(zip(self._SCHEDULE_COLS, r)), "plan": json.loads(r[4])} for r in rows]

    def schedule(self, schedule_id: str) -> dict:
        found = [s for s in self.schedules() if s["id"] == schedule_id]
        if not found:
            raise NotFound(f"no schedule {schedule_id!r}")
        return found[0]

    def remove_schedule(self, schedule_id: str) -> None:
        self.schedule(schedule_id)
        self.db.execute("UPDATE schedules SET removed_at = ? WHERE id = ?", [time.time(), schedule_id])

    def claim_firing(self, schedule_id: str, at: float, window_s: float = 30.0) -> bool:
        """Record a cron firing at ``at`` unless another process sharing the store recorded one of this schedule
        within ``window_s`` before it (the same cron slot: cron fires at most once a minute). True when this
        firing is the one to run."""
        rows = self.db.execute("UPDATE schedules SET last_fire_at = ? WHERE id = ? AND (last_fire_at IS NULL OR "
                               "last_fire_at < ?) RETURNING id", [at, schedule_id, at - window_s]).fetchall()
        return bool(rows)

    def schedule_fired(self, schedule_id: str, at: float) -> None:
        self.db.execute("UPDATE schedules SET last_fire_at = ? WHERE id = ?", [at, schedule_id])
