"""The store's access tables: API tokens and web sessions (secrets only as SHA-256 hashes). A mixin of
``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

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
