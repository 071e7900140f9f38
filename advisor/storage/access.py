"""The store's access tables: API tokens and web sessions (secrets only as SHA-256 hashes) and schedules. A mixin
of ``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

import json
import time

from advisor.core.errors import Ambiguous, NotFound, StoreError
from advisor.core.inputs import check_name
from advisor.storage.schema import changes_lists, new_id


class AccessTables:
    # --- API tokens and web sessions (secrets are stored only as SHA-256 hashes) ------------------------------

    def add_token(self, name: str, role: str, secret_hash: str, created_by: str) -> str:
        check_name("token", name)
        with self.lock:
            if self.db.execute("SELECT 1 FROM api_tokens WHERE name = ?", [name]).fetchone():
                raise StoreError(f"a token named {name!r} exists already; revoke it or choose another name")
            tid = new_id()
            self.db.execute("INSERT INTO api_tokens VALUES (?, ?, ?, ?, ?, NULL, ?)",
                            [tid, name, role, secret_hash, time.time(), created_by])
            return tid

    _TOKEN_COLS = ("id", "name", "role", "created_at", "revoked_at", "created_by")

    def tokens(self) -> list[dict]:
        rows = self.db.execute(f"SELECT {', '.join(self._TOKEN_COLS)} FROM api_tokens ORDER BY created_at").fetchall()
        return [dict(zip(self._TOKEN_COLS, r)) for r in rows]

    def token_by_hash(self, secret_hash: str) -> dict | None:
        row = self.db.execute(f"SELECT {', '.join(self._TOKEN_COLS)} FROM api_tokens WHERE secret_hash = ?",
                              [secret_hash]).fetchone()
        return dict(zip(self._TOKEN_COLS, row)) if row else None

    def token(self, ref: str) -> dict:
        """A token by its id or name (``Ambiguous`` when it is one token's id and another's name)."""
        rows = self.db.execute(f"SELECT {', '.join(self._TOKEN_COLS)} FROM api_tokens WHERE id = ? OR name = ?",
                               [ref, ref]).fetchall()
        if not rows:
            raise NotFound(f"no API token {ref!r}")
        if len(rows) > 1:
            raise Ambiguous(f"{ref!r} is one API token's id and another's name; refer to a token by its id")
        return dict(zip(self._TOKEN_COLS, rows[0]))

    def token_by_id(self, token_id: str) -> dict:
        row = self.db.execute(f"SELECT {', '.join(self._TOKEN_COLS)} FROM api_tokens WHERE id = ?",
                              [token_id]).fetchone()
        if row is None:
            raise NotFound(f"no API token with id {token_id!r}")
        return dict(zip(self._TOKEN_COLS, row))

    @changes_lists
    def revoke_token(self, token_id: str) -> None:
        self.db.execute("UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                        [time.time(), token_id])
        self.db.execute("DELETE FROM web_sessions WHERE token_id = ?", [token_id])

    def add_session(self, id_hash: str, token_id: str, csrf: str, ttl_s: float) -> None:
        now = time.time()
        self.db.execute("DELETE FROM web_sessions WHERE expires_at < ?", [now])
        self.db.execute("INSERT INTO web_sessions VALUES (?, ?, ?, ?, ?)", [id_hash, token_id, csrf, now, now + ttl_s])

    def session(self, id_hash: str) -> dict | None:
        row = self.db.execute("SELECT token_id, csrf, expires_at FROM web_sessions WHERE id_hash = ? AND expires_at >= ?",
                              [id_hash, time.time()]).fetchone()
        return {"token_id": row[0], "csrf": row[1], "expires_at": row[2]} if row else None

    def drop_session(self, id_hash: str) -> None:
        self.db.execute("DELETE FROM web_sessions WHERE id_hash = ?", [id_hash])

    # --- schedules ------------------------------------------------------------------------------------------

    def add_schedule(self, target_id: str, cron: str, timezone: str, plan: dict, created_by: str) -> str:
        sid = new_id()
        self.db.execute("INSERT INTO schedules VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                        [sid, target_id, cron, timezone, json.dumps(plan), time.time(), created_by])
        return sid

    _SCHEDULE_COLS = ("id", "target_id", "cron", "timezone", "plan", "created_at", "created_by", "last_fire_at")

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
