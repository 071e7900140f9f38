"""The ids a user's prefix may stand for: ``ids_starting(what, prefix)`` lists the ids of one kind of record
(recommendation, tuning run, schedule, target) that start with ``prefix``, at most ``limit`` of them, so that the
service can take a unique prefix wherever an id is given (``advisor.service.ids``). A mixin of
``advisor.storage.store.Store`` (it uses its ``db``)."""

from __future__ import annotations

import string

# what a user calls a record -> its table and the rows still known by it (a removed schedule is kept, unnamed)
TABLES = {"recommendation": ("recommendations", "TRUE"), "tuning run": ("tuning_runs", "TRUE"),
          "schedule": ("schedules", "removed_at IS NULL"), "target": ("targets", "TRUE")}


class IdTables:
    def ids_starting(self, what: str, prefix: str, limit: int = 5) -> list[str]:
        """The ids of ``what`` (a key of ``TABLES``) starting with ``prefix`` (hexadecimal digits), in order, at
        most ``limit``."""
        if not prefix or any(c not in string.hexdigits for c in prefix):
            return []
        table, kept = TABLES[what]
        rows = self.db.execute(f"SELECT id FROM {table} WHERE {kept} AND id LIKE ? ORDER BY id LIMIT ?",
                               [prefix.lower() + "%", int(limit)]).fetchall()
        return [r[0] for r in rows]
