"""The store's guards on production: each target's recorded identity (which database it is, whatever its DSN),
and the claim an apply or rollback puts on a recommendation while it changes production, so that no store lock
is held while remote statements run and two processes never change production for one recommendation at once.
A mixin of ``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

import json
import time

from advisor.core.errors import NotFound
from advisor.storage.schema import changes_lists


class ClaimTables:
    # --- target identity ------------------------------------------------------------------------------------

    def target_identity(self, target_id: str) -> dict | None:
        """The identity recorded for the target (``advisor.core.identity``), None when none was yet."""
        row = self.db.execute("SELECT identity FROM targets WHERE id = ?", [target_id]).fetchone()
        if row is None:
            raise NotFound(f"no target {target_id!r}")
        return json.loads(row[0]) if row[0] else None

    def set_target_identity(self, target_id: str, identity: dict) -> None:
        self.db.execute("UPDATE targets SET identity = ? WHERE id = ?", [json.dumps(identity), target_id])

    @changes_lists
    def set_target_dsn(self, target_id: str, dsn_redacted: str, credentials: str, identity: dict | None) -> None:
        """An explicit change of a registered target's DSN (the caller audits it)."""
        self.db.execute("UPDATE targets SET dsn = ?, credentials = ?, identity = coalesce(?, identity) WHERE id = ?",
                        [dsn_redacted, credentials, json.dumps(identity) if identity else None, target_id])

    # --- claims on recommendations while production changes ------------------------------------------------

    def claim(self, rec_id: str, state: str, claim: str, replace: str | None = None) -> bool:
        """Mark the recommendation as being changed by ``claim`` when it is in ``state`` and unclaimed (or claimed
        by ``replace``, a claim the caller judged abandoned). True when the claim is now ours. The conditional
        UPDATE makes this safe between processes on a shared store."""
        with self.lock:
            self.db.execute("UPDATE recommendations SET claim = ?, claimed_at = ? WHERE id = ? AND state = ? AND "
                            "(claim IS NULL OR claim = ?)", [claim, time.time(), rec_id, state, replace])
            return self.current_claim(rec_id)[0] == claim

    def current_claim(self, rec_id: str) -> tuple[str | None, float | None]:
        """(claim, claimed at) of the recommendation; (None, None) when nobody is changing production for it."""
        row = self.db.execute("SELECT claim, claimed_at FROM recommendations WHERE id = ?", [rec_id]).fetchone()
        if row is None:
            raise NotFound(f"no recommendation {rec_id!r}")
        return row[0], row[1]

    def release(self, rec_id: str, claim: str) -> None:
        with self.lock:
            self.db.execute("UPDATE recommendations SET claim = NULL, claimed_at = NULL WHERE id = ? AND claim = ?",
                            [rec_id, claim])
