"""A shadow whose postmaster is killed (kill -9) in the middle of a tuning run: the run records that trial as
failed, brings the shadow back with the last configuration that worked, and goes on (issue 13, defect #5); the
trial record keeps the typed error (TargetUnreachable) and its one-line message (issue 43)."""

import os
import signal
import threading
import time

import psycopg
import pytest

from advisor.storage.store import open_store
from advisor.tuning.knobs.trials import ReplayRunner, TrialRunner, TuningOptions, TuningRun
from connectors.local import pid_alive, server_processes
from connectors.postgres.sandbox import PostgresSandbox
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from tests.advisor.items import ROWS, cheap_space, items_shadow, stmt
from tests.conftest import scalar

LOCK = 4242  # while the killer holds this advisory lock, the workload's first statement waits on it


WORKLOAD = [stmt("gate", f"SELECT pg_advisory_lock_shared({LOCK}), pg_advisory_unlock_shared({LOCK})"),
            stmt("count", "SELECT count(*) FROM items"),
            stmt("groups", "SELECT k, sum(v) FROM items GROUP BY k")]


@pytest.fixture
def shadow():
    yield from items_shadow("crash")


class PostmasterKiller:
    """Holds the gate's advisory lock, waits (polling pg_stat_activity) until the workload's statement is blocked
    on it, i.e. a trial is in the middle of its run, then SIGKILLs the shadow's postmaster."""

    def __init__(self, sandbox: PostgresSandbox, dsn: str):
        self.sandbox, self.dsn = sandbox, dsn
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
        self.killed: int | None = None
        self.old: list[int] = []  # the server's processes when it was killed
        self.thread = threading.Thread(target=self._kill, daemon=True)
        self.thread.start()

    def _kill(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.dsn, autocommit=True) as watch:
            while time.monotonic() < deadline:
                waiting = watch.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                        "AND query LIKE %s", ("%pg_advisory_lock_shared%",)).fetchone()[0]
                if waiting:
                    self.killed = self.sandbox.postmaster_pid()
                    self.old = server_processes(self.sandbox.data)
                    os.kill(self.killed, signal.SIGKILL)
                    return
                time.sleep(0.01)


def test_a_killed_shadow_postmaster_fails_one_trial_and_the_run_goes_on(shadow, tmp_path):
    sandbox = shadow.sandbox
    space = cheap_space(shadow)
    trials = TrialRunner(shadow, ReplayRunner(WORKLOAD, repeats=2, warmup=0), space, min_timeout_s=300.0)
    options = TuningOptions(optimizer="random", trials=5, seed=0, use_seeds=False)
    store = open_store(tmp_path / "s.duckdb")
    target = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    store.add_run("run-1", target, "knobs", "random", options.to_dict())
    killer: list[PostmasterKiller] = []
    after_crash: dict = {}

    def on_trial(rec):
        if rec.number == 0:  # the baseline worked: the next trial is killed while it runs
            killer.append(PostmasterKiller(sandbox, shadow.dsn))
        elif rec.number == 1:
            after_crash.update(good=dict(trials.good), current=dict(trials.current),
                               work_mem=scalar(shadow.dsn, "SHOW work_mem"))

    optimizer = registry.create("knobs", "random", KnobProblem(space), seed=0)
    tuning = TuningRun(store, "run-1", target, trials, optimizer, options, on_trial=on_trial)
    old_postmaster = sandbox.postmaster_pid()
    records = tuning.execute()  # before the fix: SandboxError 'lock file "postmaster.pid" already exists'

    killer[0].thread.join()
    assert killer[0].killed == old_postmaster and not pid_alive(old_postmaster)
    assert [r.number for r in records] == [0, 1, 2, 3, 4]
    crashed = records[1]
    assert crashed.result.status == "failed" and crashed.result.objective is None
    assert "crashed" in crashed.result.reason
    assert all(r.result.status == "measured" and r.result.objective > 0 for r in records if r is not crashed)
    rows = store.trials("run-1")
    assert [r["status"] for r in rows] == ["measured", "failed", "measured", "measured", "measured"]
    # the typed error survives into the trial record: its type and its one-line message (issue 43)
    assert crashed.result.error == "TargetUnreachable" and rows[1]["error"] == "TargetUnreachable"
    assert rows[1]["reason"] == crashed.result.reason and "\n" not in rows[1]["reason"]
    assert [r["error"] for r in rows if r is not rows[1]] == [None] * 4
    assert optimizer.history[1].failed
    # the shadow came back with the last configuration that worked (the baseline), not the crashed one
    base = space.default_config()
    assert after_crash["good"] == after_crash["current"] == base and records[1].config != base
    assert space.units.same_value(space.catalog["work_mem"], base["work_mem"], after_crash["work_mem"])
    # a new postmaster serves the same data; nothing of the old server is left
    assert sandbox.is_running() and sandbox.postmaster_pid() != old_postmaster
    assert old_postmaster in killer[0].old and len(killer[0].old) > 3
    assert not any(pid_alive(pid) for pid in killer[0].old)
    assert scalar(shadow.dsn, "SELECT count(*) FROM items") == ROWS
    store.close()
    killer[0].conn.close()
