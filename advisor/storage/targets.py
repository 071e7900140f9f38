"""The store's targets: the databases the advisor tunes, by id and by name (a name never reads as an id, and a
reference that could mean two targets is an error), each with its redacted DSN, its encrypted credentials once
registered, and its last observation; a target of its own (``own_target``) holds runs that need no database
(no DSN). A database's identity (``advisor.core.identity``) finds its target whatever
DSN reached it (``target_with_identity``), and targets once observed by hand for it join the registered one
(``adopt_targets``). A mixin of ``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``).
"""

from __future__ import annotations

import json
import time

from advisor.core.errors import Ambiguous, Conflict, NotFound
from advisor.core.identity import same
from advisor.core.inputs import check_name
from advisor.storage.schema import changes_lists, new_id


class TargetTables:
    # --- targets --------------------------------------------------------------------------------------------

    @changes_lists
    def upsert_target(self, name: str, engine: str, dsn_redacted: str) -> str:
        """The id of the target called ``name``, created when new (an observation of a DSN given by hand). A
        registered target keeps its DSN: only ``update`` changes it (``set_target_dsn``), explicitly and audited."""
        with self.lock:
            row = self.db.execute("SELECT id, credentials IS NOT NULL FROM targets WHERE name = ?", [name]).fetchone()
            if row:
                if not row[1]:
                    self.db.execute("UPDATE targets SET dsn = ?, engine = ? WHERE id = ?", [dsn_redacted, engine, row[0]])
                return row[0]
            return self._insert_target(name, engine, dsn_redacted, None)

    @changes_lists
    def own_target(self, name: str, engine: str) -> str:
        """The id of the target of its own called ``name`` (runs that need no database: a learned index's keys
        from a synthetic set or a file), created when new: no DSN, no credentials, ``engine`` saying what it
        is. ``Conflict`` when a database's target holds that name."""
        with self.lock:
            row = self.db.execute("SELECT id, engine, dsn FROM targets WHERE name = ?", [name]).fetchone()
            if row and (row[1] != engine or row[2]):
                raise Conflict(f"target {name!r} is a database's target; runs that need no database cannot be "
                               "stored under it: rename that target")
            return row[0] if row else self._insert_target(name, engine, "", None)

    @changes_lists
    def register_target(self, name: str, engine: str, dsn_redacted: str, credentials: str) -> str:
        """Register ``name`` with its encrypted DSN; ``Conflict`` when a target of that name is registered already
        (a target observed by hand only, without credentials, is registered in place)."""
        check_name("target", name)
        with self.lock:
            row = self.db.execute("SELECT id, credentials IS NOT NULL FROM targets WHERE name = ?", [name]).fetchone()
            if row and row[1]:
                raise Conflict(f"a target named {name!r} is registered already; to change its DSN, update it "
                               "(`advisor targets update`, PATCH /api/targets/{name}), or choose another name")
            if row:
                self.db.execute("UPDATE targets SET dsn = ?, engine = ?, credentials = ? WHERE id = ?",
                                [dsn_redacted, engine, credentials, row[0]])
                return row[0]
            return self._insert_target(name, engine, dsn_redacted, credentials)

    def _insert_target(self, name: str, engine: str, dsn_redacted: str, credentials: str | None) -> str:
        tid = new_id()
        self.db.execute("INSERT INTO targets (id, name, engine, dsn, created_at, credentials) "
                        "VALUES (?, ?, ?, ?, ?, ?)", [tid, name, engine, dsn_redacted, time.time(), credentials])
        return tid

    def target_with_identity(self, identity: dict | None, *, registered_only: bool = False) -> dict | None:
        """The target recorded for the database ``identity`` names (``advisor.core.identity.same``), whatever
        DSN reached it: a registered one first, else (unless ``registered_only``) one observed by hand; None."""
        rows = self.db.execute("SELECT id, identity, credentials IS NOT NULL FROM targets WHERE identity IS NOT NULL "
                               "ORDER BY created_at").fetchall()
        found = sorted((not r[2], age, r[0]) for age, r in enumerate(rows) if same(json.loads(r[1]), identity)
                       and (r[2] or not registered_only))  # registered first, then the oldest
        return self.target_by_id(found[0][2]) if found else None

    def targets_of_database(self, target_id: str) -> list[str]:
        """The ids of every target recorded for the same database as ``target_id`` (itself first): what a run's
        claim on a database covers, whatever names reach it."""
        own = self.db.execute("SELECT identity FROM targets WHERE id = ?", [target_id]).fetchone()
        identity = json.loads(own[0]) if own and own[0] else None
        rows = self.db.execute("SELECT id, identity FROM targets WHERE identity IS NOT NULL AND id <> ?",
                               [target_id]).fetchall()
        return [target_id, *(r[0] for r in rows if same(json.loads(r[1]), identity))]

    @changes_lists
    def adopt_targets(self, target_id: str, identity: dict | None) -> list[str]:
        """Join into the registered target ``target_id`` the history (snapshots, trials, runs, recommendations,
        schedules) of every target observed by hand for the same database (``identity``), and forget those
        targets, so that one database is one target (a store written before DSNs resolved by identity held
        such twins); the names of the targets joined."""
        with self.lock, self._database.transaction():
            rows = self.db.execute("SELECT id, name, identity FROM targets WHERE identity IS NOT NULL AND "
                                   "credentials IS NULL AND id <> ?", [target_id]).fetchall()
            twins = [(r[0], r[1]) for r in rows if same(json.loads(r[2]), identity)]
            for twin, _name in twins:
                for table in ("snapshots", "trials", "tuning_runs", "recommendations", "schedules"):
                    self.db.execute(f"UPDATE {table} SET target_id = ? WHERE target_id = ?", [target_id, twin])
                self.db.execute("DELETE FROM targets WHERE id = ?", [twin])
            return [name for _id, name in twins]

    _TARGET_COLS = "t.id, t.name, t.engine, t.dsn, t.created_at, t.credentials IS NOT NULL, t.hardware, t.tags"

    def _target(self, r: tuple) -> dict:
        return {"id": r[0], "name": r[1], "engine": r[2], "dsn": r[3], "created_at": r[4], "registered": bool(r[5]),
                "hardware": json.loads(r[6]) if r[6] else None, "tags": json.loads(r[7]) if r[7] else [],
                "last_observed_at": r[8], "last_summary": json.loads(r[9]) if r[9] else None}

    @changes_lists
    def set_tags(self, target_id: str, tags: list[str]) -> None:
        """A target's tags (what a fleet schedule selects it by), replacing the ones it had."""
        self.target_by_id(target_id)
        self.db.execute("UPDATE targets SET tags = ? WHERE id = ?", [json.dumps(sorted(set(tags))), target_id])

    @changes_lists
    def set_target_hardware(self, target_id: str, hardware: dict | None) -> None:
        """What the target's server runs on, as its user gave it: ``{"memory_bytes", "cores", "storage"}``, each
        optional (None: forget it). Knob sizes use it when the server does not say (``advisor.core.hardware``)."""
        with self.lock:
            self.target_by_id(target_id)
            kept = {k: v for k, v in (hardware or {}).items() if v is not None}
            self.db.execute("UPDATE targets SET hardware = ? WHERE id = ?",
                            [json.dumps(kept) if kept else None, target_id])

    def _target_query(self, where: str) -> str:
        return (f"SELECT {self._TARGET_COLS}, s.taken_at, s.summary FROM targets t LEFT JOIN (SELECT target_id, "
                "taken_at, summary, row_number() OVER (PARTITION BY target_id ORDER BY taken_at DESC) AS n "
                f"FROM snapshots) s ON s.target_id = t.id AND s.n = 1 {where}")

    def targets(self) -> list[dict]:
        """Every target with its last observation (time and summary); never its credentials."""
        return [self._target(r) for r in self.db.execute(self._target_query("ORDER BY t.name")).fetchall()]

    def target(self, ref: str) -> dict:
        """A target by what a user calls it: its id or its name. ``Ambiguous`` when the reference is one target's id
        and another's name (a store written before such names were refused): never a guess. Internal references
        (a run's, a recommendation's) go by id only: ``target_by_id``."""
        rows = self.db.execute(self._target_query("WHERE t.id = ? OR t.name = ?"), [ref, ref]).fetchall()
        if not rows:
            raise NotFound(f"no target {ref!r}")
        if len(rows) > 1:
            by_id = next(self._target(r) for r in rows if r[0] == ref)
            named = next(self._target(r) for r in rows if r[0] != ref)
            raise Ambiguous(f"{ref!r} is the id of target {by_id['name']!r} and the name of another target (id "
                            f"{named['id']}); names that look like ids are refused now: remove or re-register the "
                            f"target named {ref!r} under another name")
        return self._target(rows[0])

    def target_by_id(self, target_id: str) -> dict:
        """A target by its id only."""
        row = self.db.execute(self._target_query("WHERE t.id = ?"), [target_id]).fetchone()
        if row is None:
            raise NotFound(f"no target with id {target_id!r}")
        return self._target(row)

    def target_credentials(self, target_id: str) -> str | None:
        row = self.db.execute("SELECT credentials FROM targets WHERE id = ?", [target_id]).fetchone()
        if row is None:
            raise NotFound(f"no target {target_id!r}")
        return row[0]

    @changes_lists
    def remove_target(self, target_id: str) -> None:
        """Forget a target, its schedules and its replica's record (the service removes the replica itself first);
        its history (snapshots, runs, recommendations, audit) is kept."""
        with self.lock:
            self.target_by_id(target_id)
            self.db.execute("DELETE FROM replicas WHERE target_id = ?", [target_id])
            self.db.execute("UPDATE schedules SET removed_at = ? WHERE target_id = ? AND removed_at IS NULL",
                            [time.time(), target_id])
            self.db.execute("DELETE FROM targets WHERE id = ?", [target_id])
