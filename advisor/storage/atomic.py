"""Changes whose check and write must be one store call: starting a run unless its database has one going on
(``add_run_unless_active``), and merging keys into a recommendation's ``applied`` (``merge_applied``). Each runs
under the store's ``lock``; a call forwarded from another process runs in the holder under the holder's lock
(``advisor.storage.remote``), so two processes sharing a DuckDB store never both pass the check. A mixin of
``advisor.storage.store.Store`` (it uses its ``lock``, ``db`` and table methods)."""

from __future__ import annotations

import json

from advisor.core.errors import Conflict
from advisor.storage import codec
from advisor.storage.schema import changes_lists


class AtomicChanges:
    @changes_lists
    def add_run_unless_active(self, run_id: str, target_id: str, kind: str, optimizer: str, options: dict, *,
                              active: tuple[str, ...], state: str = "queued", started_by: str | None = None,
                              schedule_id: str | None = None, owner: dict | None = None,
                              job_id: str | None = None) -> None:
        """``add_run``, unless a run in one of the ``active`` states is recorded on the target's database (under
        any of its targets): then ``Conflict``, naming that run."""
        with self.lock, self._database.exclusive():  # this process's threads, and every process sharing the store
            # keyed by the database, not the name: two targets of one database (a store from before PATCH checked
            # it) never run on it at once
            found = [r for tid in self.targets_of_database(target_id) for st in active
                     for r in self.runs(tid, state=st)]
            if found:
                name = self.target_by_id(target_id)["name"]
                other = self.target_by_id(found[0]["target_id"])["name"]
                whose = "" if other == name else f" on its database, as target {other!r}"
                raise Conflict(f"target {name} already has tuning run {found[0]['id']} ({found[0]['state']})"
                               f"{whose}; runs of one database never overlap")
            self.add_run(run_id, target_id, kind, optimizer, options, state=state, started_by=started_by,
                         schedule_id=schedule_id, owner=owner, job_id=job_id)

    @changes_lists
    def merge_applied(self, rec_id: str, applied: dict) -> None:
        """Set the keys of ``applied`` in a recommendation's ``applied`` record, keeping its other keys."""
        with self.lock:
            before = self.recommendation(rec_id).applied or {}
            self.db.execute("UPDATE recommendations SET applied = ? WHERE id = ?",
                            [json.dumps(codec.plain({**before, **applied})), rec_id])
