"""The store's tuning runs and their trials: a run's row (its kind, options, state, progress, owner, result) and
each trial it stored; and the workload snapshots runs observe, and the seed configurations cached per workload. A
mixin of ``advisor.storage.store.Store`` (it uses its ``db`` and ``lock``)."""

from __future__ import annotations

import json
import time

from advisor.core import processes
from advisor.storage import codec
from advisor.storage.schema import changes_lists, new_id, page
from advisor.core.domain import Evidence, Snapshot, Workload
from advisor.core.errors import NotFound


class RunTables:
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
                               [target_id, *page(limit, offset)]).fetchall()
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
                owner: dict | None = None, job_id: str | None = None) -> None:
        """Record a run; its owner is the process that executes it (``owner``, default this one: a call forwarded
        from another process gives that process, ``advisor.storage.remote``); ``job_id``: the fleet firing it
        belongs to (``advisor.service.fleets``)."""
        now = time.time()
        self.db.execute("INSERT INTO tuning_runs (id, target_id, kind, optimizer, options, state, created_at, "
                        "updated_at, started_by, schedule_id, owner, job_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                        "?, ?)",
                        [run_id, target_id, kind, optimizer, json.dumps(options), state, now, now, started_by,
                         schedule_id, json.dumps(owner or processes.this_process()), job_id])

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
                 "created_at", "updated_at", "progress", "error", "started_by", "schedule_id", "owner", "job_id")
    _RUN_JSON = {"options", "optimizer_state", "result", "progress", "owner"}

    def runs(self, target_id: str | None = None, run_id: str | None = None, *, state: str | None = None,
             schedule_id: str | None = None, limit: int | None = None, offset: int = 0,
             newest_first: bool = False, job_id: str | None = None) -> list[dict]:
        rows = self.db.execute(
            f"SELECT {', '.join(self._RUN_COLS)} FROM tuning_runs WHERE (? IS NULL OR target_id = ?) "
            "AND (? IS NULL OR id = ?) AND (? IS NULL OR state = ?) AND (? IS NULL OR schedule_id = ?) "
            f"AND (? IS NULL OR job_id = ?) ORDER BY created_at {'DESC' if newest_first else ''} LIMIT ? OFFSET ?",
            [target_id, target_id, run_id, run_id, state, state, schedule_id, schedule_id, job_id, job_id,
             *page(limit, offset)]).fetchall()
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
