"""The advisor's own state in one database (a DuckDB file, or a shared PostgreSQL database): targets, workload
snapshots, trials, recommendations, audit log.

Rules: rows are only appended, except a recommendation's state (and its ``updated_at``), which changes only
along ``domain.TRANSITIONS`` and is audited; JSON columns hold ``codec.plain`` dicts; credentials are never
stored (DSNs are redacted); ``meta.schema_version`` says which migrations ran, and a store written by a newer
version is refused rather than guessed at. A DuckDB file is opened by one process at a time (DuckDB's file lock;
the process that holds it answers the others' calls, reads and changes: ``advisor.storage.remote``); a
PostgreSQL store (``postgresql://`` URL) by any number, which is why a transition is one conditional UPDATE and
``version`` is a counter in the database (``advisor.storage.database`` runs the same SQL on both).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from advisor.core import processes
from advisor.storage import codec
from advisor.storage.database import connect
from advisor.storage.access import AccessTables
from advisor.storage.atomic import AtomicChanges
from advisor.storage.remote import RemoteStore, StoreServer, reach
from advisor.storage.claims import ClaimTables
from advisor.storage.ids import IdTables
from advisor.storage.replicas import ReplicaTables
from advisor.storage.targets import TargetTables
from advisor.storage.schema import MIGRATIONS, SCHEMA_VERSION, changes_lists, new_id
from advisor.core.domain import TRANSITIONS, Evidence, Recommendation, Snapshot, Workload, state_word
from advisor.core.errors import Conflict, InvalidTransition, NotFound, StoreError
from advisor.core.inputs import check_text

__all__ = ["SCHEMA_VERSION", "Store", "new_id", "open_store"]

class Store(TargetTables, AccessTables, ClaimTables, ReplicaTables, IdTables, AtomicChanges):
    server: StoreServer | None = None  # answering other processes' calls while this one holds the file (``serve``)

    def __init__(self, path: str | Path):
        # a DuckDB file path, or a postgresql:// URL (then ``path`` shows it without its password)
        self._database = connect(str(path))
        self.path = self._database.name
        self.shared = self._database.shared  # other processes may write it at the same time (PostgreSQL)
        # serializes read-check-write sequences (state transitions, starting a run) between threads
        self.lock = threading.RLock()
        self._migrate()

    @property
    def version(self) -> int:
        """Bumped by every write that changes what a list of recommendations, runs or targets shows, so that a
        reader can cache a list until the next such write (by any process sharing the store)."""
        return self._database.version()

    def _bump(self) -> None:
        self._database.bump()

    @property
    def db(self):
        """This thread's session on the database (``execute(sql, params)`` with ``?`` placeholders)."""
        return self._database.session

    def serve(self, url: str | None = None) -> "Store":
        """Answer the calls of this user's other processes while this process holds the DuckDB file (a
        ``StoreServer``; nothing for a PostgreSQL or in-memory store, which need none). Stopped by ``close``.
        ``url``: where this process's web UI listens (``advisor serve``), said to them."""
        if self.server is None and not self.shared and self.path != ":memory:":
            self.server = StoreServer(self).start()
        if self.server is not None and url is not None:
            self.server.url = url
        return self

    def close(self) -> None:
        if self.server is not None:  # first: the requests it took are answered before the file closes
            self.server.stop()
        self._database.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _migrate(self) -> None:
        with self._database.migrating():  # PostgreSQL: another process opening the store waits here
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"the store {self.path} has schema version {version}, newer than this db-advisor "
                                 f"({SCHEMA_VERSION}); upgrade db-advisor")
            for v in range(version + 1, SCHEMA_VERSION + 1):
                with self._database.transaction():
                    self.db.execute(MIGRATIONS[v])
                    self.db.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE "
                                    "SET value = excluded.value", [str(v)])

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    # --- observations and trials ----------------------------------------------------------------------------

    def add_snapshot(self, target_id: str, snapshot: Snapshot, workload: Workload) -> str:
        sid = new_id()
        summary = {"server_version": snapshot.server_version, "server": snapshot.server, "database": snapshot.database,
                   "tables": len(snapshot.tables), "indexes": len(snapshot.indexes), "metrics": snapshot.metrics}
        self.db.execute("INSERT INTO snapshots VALUES (?, ?, ?, ?, ?)",
                        [sid, target_id, snapshot.taken_at, json.dumps(codec.plain(workload)), json.dumps(summary)])
        return sid

    def snapshots(self, target_id: str, *, limit: int | None = None, offset: int = 0,
                  newest_first: bool = False) -> list[dict]:
        rows = self.db.execute("SELECT id, taken_at, workload, summary FROM snapshots WHERE target_id = ? "
                               f"ORDER BY taken_at {'DESC' if newest_first else ''} LIMIT ? OFFSET ?",
                               [target_id, *_page(limit, offset)]).fetchall()
        return [{"id": r[0], "taken_at": r[1], "workload": json.loads(r[2]), "summary": json.loads(r[3])} for r in rows]

    def add_trial(self, target_id: str, run_id: str, optimizer: str, changes: list, evidence: Evidence | None,
                  status: str, reason: str | None = None, *, number: int | None = None,
                  config: dict | None = None, objective: float | None = None, source: str = "",
                  duration_s: float | None = None, statements: dict[str, float] | None = None,
                  error: str | None = None, metrics: dict[str, float] | None = None) -> str:
        """Append one trial; it is committed before this returns, so a crash right after loses nothing.
        ``statements``: each statement's median (ms) in a knob trial (rows stored before it have none);
        ``error``: a failed trial's typed error (its class name), ``reason`` its one-line message; ``metrics``:
        the trial's other figures (a learned index's throughput, p99, memory), which a resumed run reads back."""
        tid = new_id()
        self.db.execute("INSERT INTO trials (id, target_id, run_id, optimizer, changes, evidence, status, reason, "
                        "created_at, number, config, objective, source, duration_s, statements, error, metrics) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [tid, target_id, run_id, optimizer, json.dumps(codec.plain(list(changes))),
                         json.dumps(codec.plain(evidence)) if evidence else None, status, reason, time.time(),
                         number, json.dumps(config) if config is not None else None, objective, source, duration_s,
                         json.dumps(statements) if statements else None, error,
                         json.dumps(metrics) if metrics else None])
        return tid

    def trials(self, run_id: str) -> list[dict]:
        rows = self.db.execute("SELECT id, optimizer, changes, evidence, status, reason, created_at, number, config, "
                               "objective, source, duration_s, statements, error, metrics FROM trials WHERE run_id = ? "
                               "ORDER BY coalesce(number, 0), created_at", [run_id]).fetchall()
        return [{"id": r[0], "optimizer": r[1], "changes": json.loads(r[2]),
                 "evidence": json.loads(r[3]) if r[3] else None, "status": r[4], "reason": r[5],
                 "created_at": r[6], "number": r[7], "config": json.loads(r[8]) if r[8] else None,
                 "objective": r[9], "source": r[10], "duration_s": r[11],
                 "statements": json.loads(r[12]) if r[12] else None, "error": r[13],
                 "metrics": json.loads(r[14]) if r[14] else None} for r in rows]

    # --- tuning runs ----------------------------------------------------------------------------------------

    @changes_lists
    def add_run(self, run_id: str, target_id: str, kind: str, optimizer: str, options: dict, *,
                state: str = "running", started_by: str | None = None, schedule_id: str | None = None,
                owner: dict | None = None) -> None:
        """Record a run; its owner is the process that executes it (``owner``, default this one: a call forwarded
        from another process gives that process, ``advisor.storage.remote``)."""
        now = time.time()
        self.db.execute("INSERT INTO tuning_runs (id, target_id, kind, optimizer, options, state, created_at, "
                        "updated_at, started_by, schedule_id, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, target_id, kind, optimizer, json.dumps(options), state, now, now, started_by,
                         schedule_id, json.dumps(owner or processes.this_process())])

    def update_run(self, run_id: str, *, state: str | None = None, optimizer_state: dict | None = None,
                   result: dict | None = None, progress: dict | None = None, error: str | None = None,
                   options: dict | None = None, owner: dict | None = None) -> None:
        """Change a run's row; ``owner``: the process that executes it now (``processes.this_process``)."""
        self.run(run_id)  # NotFound for an unknown id
        sets, args = ["updated_at = ?"], [time.time()]
        for column, value in (("state", state), ("optimizer_state", optimizer_state), ("result", result),
                              ("progress", progress), ("error", error), ("options", options), ("owner", owner)):
            if value is not None:
                sets.append(f"{column} = ?")
                args.append(value if column in ("state", "error") else json.dumps(codec.plain(value)))
        self.db.execute(f"UPDATE tuning_runs SET {', '.join(sets)} WHERE id = ?", [*args, run_id])
        if state is not None or result is not None or error is not None:  # what lists of runs show
            self._bump()

    def interrupt_run(self, run_id: str, seen_at: float, error: str) -> bool:
        """Mark a queued or running run interrupted with ``error``, only if its row is as it was when read
        (``updated_at == seen_at``: a run resumed or moved on meanwhile, by any process, is left alone). True when
        it was marked."""
        rows = self.db.execute("UPDATE tuning_runs SET state = 'interrupted', error = ?, updated_at = ? WHERE id = ? "
                               "AND updated_at = ? AND state IN ('queued', 'running') RETURNING id",
                               [error, time.time(), run_id, seen_at]).fetchall()
        if rows:
            self._bump()
        return bool(rows)

    def run(self, run_id: str) -> dict:
        rows = self.runs(run_id=run_id)
        if not rows:
            raise NotFound(f"no tuning run with id {run_id!r}")
        return rows[0]

    _RUN_COLS = ("id", "target_id", "kind", "optimizer", "options", "state", "optimizer_state", "result",
                 "created_at", "updated_at", "progress", "error", "started_by", "schedule_id", "owner")
    _RUN_JSON = {"options", "optimizer_state", "result", "progress", "owner"}

    def runs(self, target_id: str | None = None, run_id: str | None = None, *, state: str | None = None,
             schedule_id: str | None = None, limit: int | None = None, offset: int = 0,
             newest_first: bool = False) -> list[dict]:
        rows = self.db.execute(
            f"SELECT {', '.join(self._RUN_COLS)} FROM tuning_runs WHERE (? IS NULL OR target_id = ?) "
            "AND (? IS NULL OR id = ?) AND (? IS NULL OR state = ?) AND (? IS NULL OR schedule_id = ?) "
            f"ORDER BY created_at {'DESC' if newest_first else ''} LIMIT ? OFFSET ?",
            [target_id, target_id, run_id, run_id, state, state, schedule_id, schedule_id,
             *_page(limit, offset)]).fetchall()
        return [{c: (json.loads(v) if c in self._RUN_JSON and v else v) for c, v in zip(self._RUN_COLS, r)}
                for r in rows]

    def count_snapshots(self, target_id: str) -> int:
        return self.db.execute("SELECT count(*) FROM snapshots WHERE target_id = ?", [target_id]).fetchone()[0]

    def count_runs(self, target_id: str | None = None, state: str | None = None) -> int:
        return self.db.execute("SELECT count(*) FROM tuning_runs WHERE (? IS NULL OR target_id = ?) "
                               "AND (? IS NULL OR state = ?)", [target_id, target_id, state, state]).fetchone()[0]

    # --- seed cache -----------------------------------------------------------------------------------------

    def cached_seeds(self, key: str) -> list[dict] | None:
        row = self.db.execute("SELECT seeds FROM seed_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def cache_seeds(self, key: str, seeds: list[dict]) -> None:
        self.db.execute("INSERT INTO seed_cache VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                        "seeds = excluded.seeds, created_at = excluded.created_at",
                        [key, json.dumps(seeds), time.time()])

    # --- recommendations ------------------------------------------------------------------------------------

    @changes_lists
    def add_recommendation(self, rec: Recommendation, actor: str = "advisor") -> None:
        self.db.execute(
            f"INSERT INTO recommendations ({self._REC_COLS}, apply_sql, revert_sql, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [rec.id, rec.target_id, rec.kind, rec.optimizer, json.dumps(codec.plain(list(rec.changes))),
             rec.needs_restart, rec.state, rec.created_at,
             json.dumps(codec.plain(rec.evidence)) if rec.evidence else None, rec.note,
             json.dumps(codec.plain(rec.details)), rec.run_id,
             json.dumps(codec.plain(rec.applied)) if rec.applied else None,
             json.dumps(list(rec.apply_sql)), json.dumps(list(rec.revert_sql)), rec.created_at])
        self.audit(actor, "recommend", rec.id, {"state": rec.state, "kind": rec.kind})

    _REC_COLS = ("id, target_id, kind, optimizer, changes, needs_restart, state, created_at, evidence, note, details, "
                 "run_id, applied")

    def _rec(self, r: tuple) -> Recommendation:
        return Recommendation(
            id=r[0], target_id=r[1], kind=r[2], optimizer=r[3],
            changes=tuple(codec.change_from(c) for c in json.loads(r[4])), apply_sql=tuple(json.loads(r[13])),
            revert_sql=tuple(json.loads(r[14])), needs_restart=bool(r[5]), state=r[6], created_at=r[7],
            evidence=codec.evidence_from(json.loads(r[8]) if r[8] else None), note=r[9],
            details=json.loads(r[10]) if r[10] else {}, run_id=r[11], applied=json.loads(r[12]) if r[12] else None)

    @staticmethod
    def _rec_filter(state, target_id, kind, run_id) -> tuple[str, list]:
        return ("WHERE (? IS NULL OR state = ?) AND (? IS NULL OR target_id = ?) AND (? IS NULL OR kind = ?) "
                "AND (? IS NULL OR run_id = ?)", [state, state, target_id, target_id, kind, kind, run_id, run_id])

    def recommendations(self, state: str | None = None, target_id: str | None = None, *, kind: str | None = None,
                        run_id: str | None = None, limit: int | None = None, offset: int = 0) -> list[Recommendation]:
        where, args = self._rec_filter(state, target_id, kind, run_id)
        query = f"SELECT {self._REC_COLS}, apply_sql, revert_sql FROM recommendations {where} " \
                "ORDER BY created_at DESC LIMIT ? OFFSET ?"
        rows = self.db.execute(query, [*args, *_page(limit, offset)]).fetchall()
        return [self._rec(r) for r in rows]

    _SUMMARY_COLS = ("id", "target_id", "target", "kind", "optimizer", "state", "needs_restart", "created_at",
                     "updated_at", "run_id", "changes", "gain", "gain_low", "gain_high", "relative_cost",
                     "best_objective", "baseline_objective")

    def recommendation_summaries(self, state: str | None = None, target_id: str | None = None, *,
                                 kind: str | None = None, run_id: str | None = None, limit: int | None = None,
                                 offset: int = 0) -> list[dict]:
        """One small row per recommendation for lists, computed in SQL (no evidence or details parsed): the
        measured gain and its interval, the what-if relative cost (indexes) and the run's best and baseline
        objectives (knob searches)."""
        where, args = self._rec_filter(state, target_id, kind, run_id)
        where = where.replace("state", "r.state").replace("target_id", "r.target_id").replace(
            "kind", "r.kind").replace("run_id", "r.run_id")
        num = self._database.json_double
        rows = self.db.execute(
            "SELECT r.id, r.target_id, t.name, r.kind, r.optimizer, r.state, r.needs_restart, r.created_at, "
            f"r.updated_at, r.run_id, json_array_length(r.changes), {num('r.evidence', 'gain')}, "
            f"{num('r.evidence', 'gain_ci', 0)}, {num('r.evidence', 'gain_ci', 1)}, "
            f"{num('r.details', 'whatif', 'relative_cost')}, {num('u.result', 'best_objective')}, "
            f"{num('u.result', 'baseline_objective')} FROM recommendations r "
            "LEFT JOIN targets t ON t.id = r.target_id LEFT JOIN tuning_runs u ON u.id = r.run_id "
            f"{where} ORDER BY r.created_at DESC LIMIT ? OFFSET ?",
            [*args, *_page(limit, offset)]).fetchall()
        return [dict(zip(self._SUMMARY_COLS, r)) for r in rows]

    def count_recommendations(self, state: str | None = None, target_id: str | None = None,
                              kind: str | None = None, run_id: str | None = None) -> int:
        where, args = self._rec_filter(state, target_id, kind, run_id)
        return self.db.execute(f"SELECT count(*) FROM recommendations {where}", args).fetchone()[0]

    def recommendation(self, rec_id: str) -> Recommendation:
        row = self.db.execute(f"SELECT {self._REC_COLS}, apply_sql, revert_sql FROM recommendations WHERE id = ?",
                              [rec_id]).fetchone()
        if row is None:
            raise NotFound(f"no recommendation {rec_id!r}")
        return self._rec(row)

    @changes_lists
    def set_applied(self, rec_id: str, applied: dict) -> None:
        """Record what an apply to production did and how to revert it (before the state changes)."""
        self.db.execute("UPDATE recommendations SET applied = ? WHERE id = ?",
                        [json.dumps(codec.plain(applied)), rec_id])

    @changes_lists
    def add_details(self, rec_id: str, details: dict) -> None:
        """Add facts learned after a recommendation was made (e.g. how it fared in a whole run's bundle) to its
        details; the keys given replace those of the same name."""
        with self.lock:
            rec = self.recommendation(rec_id)
            self.db.execute("UPDATE recommendations SET details = ? WHERE id = ?",
                            [json.dumps(codec.plain({**rec.details, **details})), rec_id])

    def transition(self, rec_id: str, new_state: str, actor: str, note: str = "",
                   expect: str | None = None, claim: str | None = None) -> Recommendation:
        """Move a recommendation along its lifecycle (``expect``: the state it must be in now), audited. While
        an apply or rollback holds the recommendation's claim (``ClaimTables.claim``), only that claim's holder
        (``claim``) moves it."""
        check_text("note", note)
        with self.lock:
            rec = self.recommendation(rec_id)
            if expect is not None and rec.state != expect:
                raise InvalidTransition(f"recommendation {rec_id} is {state_word(rec.state)}, not "
                                        f"{state_word(expect)}")
            if new_state not in TRANSITIONS.get(rec.state, frozenset()):
                raise InvalidTransition(f"recommendation {rec_id} is {state_word(rec.state)}; it cannot become "
                                        f"{state_word(new_state)}")
            with self._database.transaction():
                # conditional on the state just read: of two processes moving it at once, one changes the row
                changed = self.db.execute(
                    "UPDATE recommendations SET state = ?, updated_at = ? WHERE id = ? AND state = ? "
                    "AND (claim IS NULL OR claim = ?) RETURNING id",
                    [new_state, time.time(), rec_id, rec.state, claim]).fetchall()
                if changed:
                    self.audit(actor, new_state, rec_id, {"from": rec.state, "note": note})
            if not changed and self.current_claim(rec_id)[0] not in (None, claim):
                raise Conflict(f"recommendation {rec_id} is being changed in production right now; it did not "
                               f"become {new_state}")
            if not changed:
                now = self.recommendation(rec_id).state
                raise InvalidTransition(f"recommendation {rec_id} was {state_word(rec.state)} but another process made "
                                        f"it {state_word(now)} meanwhile; it did not become {state_word(new_state)}")
            self._bump()
            return self.recommendation(rec_id)

    # --- audit ----------------------------------------------------------------------------------------------

    def audit(self, actor: str, action: str, subject: str, detail: dict) -> None:
        self.db.execute("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?)",
                        [new_id(), time.time(), actor, action, subject, json.dumps(codec.plain(detail))])

    def audit_log(self, subject: str | None = None, limit: int | None = None, offset: int = 0) -> list[dict]:
        rows = self.db.execute("SELECT happened_at, actor, action, subject, detail FROM audit_log WHERE ? IS NULL OR "
                               "subject = ? ORDER BY happened_at LIMIT ? OFFSET ?",
                               [subject, subject, *_page(limit, offset)]).fetchall()
        return [{"at": r[0], "actor": r[1], "action": r[2], "subject": r[3], "detail": json.loads(r[4])} for r in rows]


def _page(limit: int | None, offset: int) -> tuple[int, int]:
    """LIMIT and OFFSET values DuckDB takes (BIGINT): none means all; an offset past any table means no rows.

    >>> _page(None, 10**20)
    (4611686018427387904, 4611686018427387904)
    """
    cap = 2**62
    return (cap if limit is None else min(max(int(limit), 0), cap)), min(max(int(offset), 0), cap)


def open_store(path: str | Path | None = None, *, remote: bool = False, say=None) -> Store:
    """The store at ``path`` (a DuckDB file, or a ``postgresql://`` URL), or at ADVISOR_STORE, or the default
    location. A DuckDB file this process opens answers the calls of this user's other processes while it is open
    (``Store.serve``). ``remote``: a DuckDB file another process holds is used through that process (a
    ``RemoteStore``, which forwards every call and takes the file over when that process ends:
    ``advisor.storage.remote``), waiting up to ``remote.TAKEOVER_S`` for a holder that does not answer yet, with
    one line on ``say`` while it waits; without it, such a file is refused in one line that names its holder."""
    if path is None:
        from advisor.core.settings import get_settings

        path = get_settings().store

    def opener() -> Store:
        return Store(path).serve()

    if not remote:
        return opener()
    store, holder = reach(str(path), opener, say)
    if store is not None:
        return store
    return RemoteStore(str(path), holder, Store, opener, say)
