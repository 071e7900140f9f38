"""The store's record of each target's warm replica: where its data lives (a directory under the advisor's home),
its engine, when it was built, and its state ("building", "ready", "failed: <one-line reason>") with the last
progress line of a build under way and the process building it (``owner``: a build whose process was killed is
stale, ``advisor.core.processes``). The replica server itself is the connectors' (``connectors.replica``); this is
only what the advisor remembers of it, so that a later process finds it again. A mixin of
``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

import json
import time

from advisor.storage.schema import changes_lists

_COLS = "target_id, engine, directory, state, built_at, progress, owner, updated_at"


def _row(r: tuple) -> dict:
    return {"target_id": r[0], "engine": r[1], "directory": r[2], "state": r[3], "built_at": r[4],
            "progress": r[5], "owner": json.loads(r[6]) if r[6] else None, "updated_at": r[7]}


class ReplicaTables:
    @changes_lists
    def set_replica(self, target_id: str, engine: str, directory: str, state: str, *,
                    built_at: float | None = None, progress: str | None = None, owner: dict | None = None) -> None:
        """Record (or replace) the replica of ``target_id``."""
        with self.lock, self._database.transaction():
            self.db.execute("DELETE FROM replicas WHERE target_id = ?", [target_id])
            self.db.execute(f"INSERT INTO replicas ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            [target_id, engine, directory, state, built_at, progress,
                             json.dumps(owner) if owner else None, time.time()])

    def replica_progress(self, target_id: str, line: str) -> None:
        """The last progress line of a build under way (shown on the targets page while it builds)."""
        self.db.execute("UPDATE replicas SET progress = ?, updated_at = ? WHERE target_id = ?",
                        [line, time.time(), target_id])

    def replica(self, target_id: str) -> dict | None:
        """The replica recorded for ``target_id``, None when it has none."""
        row = self.db.execute(f"SELECT {_COLS} FROM replicas WHERE target_id = ?", [target_id]).fetchone()
        return _row(row) if row else None

    def replicas(self) -> dict[str, dict]:
        """Every recorded replica, by target id."""
        return {r[0]: _row(r) for r in self.db.execute(f"SELECT {_COLS} FROM replicas").fetchall()}

    @changes_lists
    def forget_replica(self, target_id: str) -> None:
        with self.lock:
            self.db.execute("DELETE FROM replicas WHERE target_id = ?", [target_id])
