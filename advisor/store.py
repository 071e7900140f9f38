"""The advisor's own state in one DuckDB file: targets, workload snapshots, trials, recommendations, audit log.

Rules: rows are only appended, except a recommendation's state (and its ``updated_at``), which changes only
along ``domain.TRANSITIONS`` and is audited; JSON columns hold ``codec.plain`` dicts; credentials are never
stored (DSNs are redacted); ``meta.schema_version`` says which migrations ran, and a store written by a newer
version is refused rather than guessed at. One process writes at a time (DuckDB's file lock).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import duckdb

from advisor import codec
from advisor.domain import TRANSITIONS, Evidence, Recommendation, Snapshot, Workload
from advisor.errors import InvalidTransition, NotFound, StoreError

SCHEMA_VERSION = 3

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE targets (id VARCHAR PRIMARY KEY, name VARCHAR UNIQUE NOT NULL, engine VARCHAR NOT NULL,
        dsn VARCHAR NOT NULL, created_at DOUBLE NOT NULL);
    CREATE TABLE snapshots (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, taken_at DOUBLE NOT NULL,
        workload JSON NOT NULL, summary JSON NOT NULL);
    CREATE TABLE trials (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL,
        optimizer VARCHAR NOT NULL, changes JSON NOT NULL, evidence JSON, status VARCHAR NOT NULL,
        reason VARCHAR, created_at DOUBLE NOT NULL);
    CREATE TABLE recommendations (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, kind VARCHAR NOT NULL,
        optimizer VARCHAR NOT NULL, changes JSON NOT NULL, apply_sql JSON NOT NULL, revert_sql JSON NOT NULL,
        needs_restart BOOLEAN NOT NULL, state VARCHAR NOT NULL, evidence JSON, note VARCHAR NOT NULL,
        created_at DOUBLE NOT NULL, updated_at DOUBLE NOT NULL);
    CREATE TABLE audit_log (id VARCHAR PRIMARY KEY, happened_at DOUBLE NOT NULL, actor VARCHAR NOT NULL,
        action VARCHAR NOT NULL, subject VARCHAR NOT NULL, detail JSON NOT NULL);
    """,
    2: """
    ALTER TABLE trials ADD COLUMN number INTEGER;
    ALTER TABLE trials ADD COLUMN config JSON;
    ALTER TABLE trials ADD COLUMN objective DOUBLE;
    ALTER TABLE trials ADD COLUMN source VARCHAR;
    ALTER TABLE trials ADD COLUMN duration_s DOUBLE;
    CREATE TABLE tuning_runs (id VARCHAR PRIMARY KEY, target_id VARCHAR NOT NULL, kind VARCHAR NOT NULL,
        optimizer VARCHAR NOT NULL, options JSON NOT NULL, state VARCHAR NOT NULL, optimizer_state JSON,
        result JSON, created_at DOUBLE NOT NULL, updated_at DOUBLE NOT NULL);
    CREATE TABLE seed_cache (key VARCHAR PRIMARY KEY, seeds JSON NOT NULL, created_at DOUBLE NOT NULL);
    """,
    3: """
    ALTER TABLE recommendations ADD COLUMN details JSON;
    """,
}


def new_id() -> str:
    return uuid.uuid4().hex[:12]


class Store:
    def __init__(self, path: str | Path):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = duckdb.connect(self.path)
        except duckdb.IOException as e:
            raise StoreError(f"cannot open the store {self.path}: {str(e).splitlines()[0]}") from None
        self._migrate()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(f"the store {self.path} has schema version {version}, newer than this db-advisor "
                             f"({SCHEMA_VERSION}); upgrade db-advisor")
        for v in range(version + 1, SCHEMA_VERSION + 1):
            self.db.execute("BEGIN")
            self.db.execute(MIGRATIONS[v])
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(v)])
            self.db.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    # --- targets --------------------------------------------------------------------------------------------

    def upsert_target(self, name: str, engine: str, dsn_redacted: str) -> str:
        row = self.db.execute("SELECT id FROM targets WHERE name = ?", [name]).fetchone()
        if row:
            self.db.execute("UPDATE targets SET dsn = ?, engine = ? WHERE id = ?", [dsn_redacted, engine, row[0]])
            return row[0]
        tid = new_id()
        self.db.execute("INSERT INTO targets VALUES (?, ?, ?, ?, ?)", [tid, name, engine, dsn_redacted, time.time()])
        return tid

    def targets(self) -> list[dict]:
        cols = ("id", "name", "engine", "dsn", "created_at")
        return [dict(zip(cols, r)) for r in self.db.execute(f"SELECT {', '.join(cols)} FROM targets ORDER BY name")]

    # --- observations and trials ----------------------------------------------------------------------------

    def add_snapshot(self, target_id: str, snapshot: Snapshot, workload: Workload) -> str:
        sid = new_id()
        summary = {"server_version": snapshot.server_version, "database": snapshot.database,
                   "tables": len(snapshot.tables), "indexes": len(snapshot.indexes), "metrics": snapshot.metrics}
        self.db.execute("INSERT INTO snapshots VALUES (?, ?, ?, ?, ?)",
                        [sid, target_id, snapshot.taken_at, json.dumps(codec.plain(workload)), json.dumps(summary)])
        return sid

    def snapshots(self, target_id: str) -> list[dict]:
        rows = self.db.execute("SELECT id, taken_at, workload, summary FROM snapshots WHERE target_id = ? "
                               "ORDER BY taken_at", [target_id]).fetchall()
        return [{"id": r[0], "taken_at": r[1], "workload": json.loads(r[2]), "summary": json.loads(r[3])} for r in rows]

    def add_trial(self, target_id: str, run_id: str, optimizer: str, changes: list, evidence: Evidence | None,
                  status: str, reason: str | None = None, *, number: int | None = None,
                  config: dict | None = None, objective: float | None = None, source: str = "",
                  duration_s: float | None = None) -> str:
        """Append one trial; it is committed before this returns, so a crash right after loses nothing."""
        tid = new_id()
        self.db.execute("INSERT INTO trials (id, target_id, run_id, optimizer, changes, evidence, status, reason, "
                        "created_at, number, config, objective, source, duration_s) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [tid, target_id, run_id, optimizer, json.dumps(codec.plain(list(changes))),
                         json.dumps(codec.plain(evidence)) if evidence else None, status, reason, time.time(),
                         number, json.dumps(config) if config is not None else None, objective, source, duration_s])
        return tid

    def trials(self, run_id: str) -> list[dict]:
        rows = self.db.execute("SELECT id, optimizer, changes, evidence, status, reason, created_at, number, config, "
                               "objective, source, duration_s FROM trials WHERE run_id = ? "
                               "ORDER BY coalesce(number, 0), created_at", [run_id]).fetchall()
        return [{"id": r[0], "optimizer": r[1], "changes": json.loads(r[2]),
                 "evidence": json.loads(r[3]) if r[3] else None, "status": r[4], "reason": r[5],
                 "created_at": r[6], "number": r[7], "config": json.loads(r[8]) if r[8] else None,
                 "objective": r[9], "source": r[10], "duration_s": r[11]} for r in rows]

    # --- tuning runs ----------------------------------------------------------------------------------------

    def add_run(self, run_id: str, target_id: str, kind: str, optimizer: str, options: dict) -> None:
        now = time.time()
        self.db.execute("INSERT INTO tuning_runs VALUES (?, ?, ?, ?, ?, 'running', NULL, NULL, ?, ?)",
                        [run_id, target_id, kind, optimizer, json.dumps(options), now, now])

    def update_run(self, run_id: str, *, state: str | None = None, optimizer_state: dict | None = None,
                   result: dict | None = None) -> None:
        self.run(run_id)  # NotFound for an unknown id
        sets, args = ["updated_at = ?"], [time.time()]
        for column, value in (("state", state), ("optimizer_state", optimizer_state), ("result", result)):
            if value is not None:
                sets.append(f"{column} = ?")
                args.append(value if column == "state" else json.dumps(value))
        self.db.execute(f"UPDATE tuning_runs SET {', '.join(sets)} WHERE id = ?", [*args, run_id])

    def run(self, run_id: str) -> dict:
        rows = self.runs(run_id=run_id)
        if not rows:
            raise NotFound(f"no tuning run with id {run_id!r}")
        return rows[0]

    def runs(self, target_id: str | None = None, run_id: str | None = None) -> list[dict]:
        rows = self.db.execute("SELECT id, target_id, kind, optimizer, options, state, optimizer_state, result, "
                               "created_at, updated_at FROM tuning_runs WHERE (? IS NULL OR target_id = ?) "
                               "AND (? IS NULL OR id = ?) ORDER BY created_at",
                               [target_id, target_id, run_id, run_id]).fetchall()
        return [{"id": r[0], "target_id": r[1], "kind": r[2], "optimizer": r[3], "options": json.loads(r[4]),
                 "state": r[5], "optimizer_state": json.loads(r[6]) if r[6] else None,
                 "result": json.loads(r[7]) if r[7] else None, "created_at": r[8], "updated_at": r[9]} for r in rows]

    # --- seed cache -----------------------------------------------------------------------------------------

    def cached_seeds(self, key: str) -> list[dict] | None:
        row = self.db.execute("SELECT seeds FROM seed_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def cache_seeds(self, key: str, seeds: list[dict]) -> None:
        self.db.execute("INSERT OR REPLACE INTO seed_cache VALUES (?, ?, ?)", [key, json.dumps(seeds), time.time()])

    # --- recommendations ------------------------------------------------------------------------------------

    def add_recommendation(self, rec: Recommendation, actor: str = "advisor") -> None:
        self.db.execute(
            "INSERT INTO recommendations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [rec.id, rec.target_id, rec.kind, rec.optimizer, json.dumps(codec.plain(list(rec.changes))),
             json.dumps(list(rec.apply_sql)), json.dumps(list(rec.revert_sql)), rec.needs_restart, rec.state,
             json.dumps(codec.plain(rec.evidence)) if rec.evidence else None, rec.note, rec.created_at,
             rec.created_at, json.dumps(codec.plain(rec.details))])
        self.audit(actor, "recommend", rec.id, {"state": rec.state, "kind": rec.kind})

    _REC_COLS = ("id, target_id, kind, optimizer, changes, apply_sql, revert_sql, needs_restart, state, created_at, "
                 "evidence, note, details")

    def _rec(self, r: tuple) -> Recommendation:
        return Recommendation(
            id=r[0], target_id=r[1], kind=r[2], optimizer=r[3],
            changes=tuple(codec.change_from(c) for c in json.loads(r[4])), apply_sql=tuple(json.loads(r[5])),
            revert_sql=tuple(json.loads(r[6])), needs_restart=bool(r[7]), state=r[8], created_at=r[9],
            evidence=codec.evidence_from(json.loads(r[10]) if r[10] else None), note=r[11],
            details=json.loads(r[12]) if r[12] else {})

    def recommendations(self, state: str | None = None, target_id: str | None = None) -> list[Recommendation]:
        query = f"SELECT {self._REC_COLS} FROM recommendations WHERE (? IS NULL OR state = ?) " \
                "AND (? IS NULL OR target_id = ?) ORDER BY created_at DESC"
        return [self._rec(r) for r in self.db.execute(query, [state, state, target_id, target_id]).fetchall()]

    def recommendation(self, rec_id: str) -> Recommendation:
        row = self.db.execute(f"SELECT {self._REC_COLS} FROM recommendations WHERE id = ?", [rec_id]).fetchone()
        if row is None:
            raise NotFound(f"no recommendation {rec_id!r}")
        return self._rec(row)

    def transition(self, rec_id: str, new_state: str, actor: str, note: str = "") -> Recommendation:
        rec = self.recommendation(rec_id)
        if new_state not in TRANSITIONS.get(rec.state, frozenset()):
            raise InvalidTransition(f"recommendation {rec_id} is {rec.state}; it cannot become {new_state}")
        self.db.execute("BEGIN")
        self.db.execute("UPDATE recommendations SET state = ?, updated_at = ? WHERE id = ?",
                        [new_state, time.time(), rec_id])
        self.audit(actor, new_state, rec_id, {"from": rec.state, "note": note})
        self.db.execute("COMMIT")
        return self.recommendation(rec_id)

    # --- audit ----------------------------------------------------------------------------------------------

    def audit(self, actor: str, action: str, subject: str, detail: dict) -> None:
        self.db.execute("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?)",
                        [new_id(), time.time(), actor, action, subject, json.dumps(codec.plain(detail))])

    def audit_log(self, subject: str | None = None) -> list[dict]:
        rows = self.db.execute("SELECT happened_at, actor, action, subject, detail FROM audit_log WHERE ? IS NULL OR "
                               "subject = ? ORDER BY happened_at", [subject, subject]).fetchall()
        return [{"at": r[0], "actor": r[1], "action": r[2], "subject": r[3], "detail": json.loads(r[4])} for r in rows]


def open_store(path: str | Path | None = None) -> Store:
    """The store at ``path``, or at ADVISOR_STORE, or the default location."""
    if path is None:
        from advisor.settings import get_settings

        path = get_settings().store
    return Store(path)
