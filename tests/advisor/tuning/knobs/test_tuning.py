"""Trials and tuning runs on a real shadow server: configurations PostgreSQL refuses, crashes mid-run, an
interrupted run resumed from the store, and the interleaved comparison of two configurations."""

import os
import signal
import threading
import time
from dataclasses import dataclass, field, replace

import psycopg
import pytest

from advisor.core.errors import AdvisorError
from advisor.storage.store import open_store
from advisor.tuning.knobs.trials import ReplayRunner, TrialRunner, TuningOptions, TuningRun, compare_configs
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.space import KnobSpace, SpaceOptions
from tests.advisor.items import HW, ROWS, cheap_space, items_shadow, stmt
from tests.conftest import scalar



WORKLOAD = [stmt("count", "SELECT count(*) FROM items"),
            stmt("point", "SELECT v FROM items WHERE id = 42"),
            stmt("groups", "SELECT k, sum(v) FROM items GROUP BY k")]
# sleeps long enough to be caught in flight, and is killed long before its end
IN_FLIGHT = stmt("in_flight", "SELECT pg_sleep(3)")


@pytest.fixture
def shadow():
    yield from items_shadow("tuning")


def kill_in_flight(dsn: str, marker: str, timeout_s: float = 10.0) -> int | None:
    """SIGKILL the backend running a statement containing ``marker`` as soon as one shows up: the postmaster
    then treats it as a crash, ends every other backend and reinitializes (unlike pg_terminate_backend)."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT pid FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
                               "AND query LIKE %s", (f"%{marker}%",)).fetchone()
            if row:
                os.kill(row[0], signal.SIGKILL)
                return row[0]
            time.sleep(0.005)
    return None


@dataclass
class CrashingRunner:
    """A WorkloadRunner around a real ReplayRunner: the passes numbered in ``crash_on`` have a backend killed
    with SIGKILL while they run. ``calls`` counts every pass, ``killed`` the backends killed."""

    real: ReplayRunner
    crash_on: set[int] = field(default_factory=set)
    calls: int = 0
    killed: list[int] = field(default_factory=list)

    @property
    def objective(self) -> str:
        return self.real.objective

    def run(self, connector, timeout_s: float) -> float:
        n, self.calls = self.calls, self.calls + 1
        if n not in self.crash_on:
            return self.real.run(connector, timeout_s)
        killer = threading.Thread(target=lambda: self.killed.append(kill_in_flight(connector.dsn, "pg_sleep(3)")))
        killer.start()
        try:
            return replace(self.real, statements=[IN_FLIGHT, *self.real.statements]).run(connector, timeout_s)
        finally:
            killer.join()

    def restore(self, connector) -> None:
        self.real.restore(connector)

    def display(self, objective: float) -> str:
        return self.real.display(objective)


def replay_runner() -> ReplayRunner:
    return ReplayRunner(WORKLOAD, repeats=2, warmup=0)


def physical_ram_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024**2


# --- trials ---------------------------------------------------------------------------------------------------


def test_a_configuration_postgres_refuses_is_a_failed_trial_and_the_shadow_comes_back(shadow):
    catalog = shadow.connector.knob_catalog()
    space = KnobSpace.build(catalog, HW, shadow.connector.knob_profile(), SpaceOptions(max_knobs=1, include=("huge_pages",)))
    assert space.names == ["shared_buffers", "huge_pages"] and space.restart_mask().all()
    trials = TrialRunner(shadow, replay_runner(), space)
    # shared memory twice the machine's RAM, in huge pages: no kernel maps that, so the postmaster exits
    refused = {"shared_buffers": f"{2 * physical_ram_mb()}MB", "huge_pages": "on"}

    result, _, restarted = trials.trial(refused)
    assert result.status == "failed" and result.objective is None and restarted
    assert "did not come back" in result.reason and "could not map anonymous shared memory" in result.reason
    assert shadow.sandbox.is_running()
    assert scalar(shadow.dsn, "SHOW huge_pages") == "try" and scalar(shadow.dsn, "SHOW shared_buffers") == "128MB"
    assert scalar(shadow.dsn, "SELECT count(*) FROM items") == ROWS
    assert trials.current == space.default_config()

    working = {"shared_buffers": "64MB", "huge_pages": "off"}
    result, _, restarted = trials.trial(working)
    assert result.status == "measured" and result.objective > 0 and restarted
    assert scalar(shadow.dsn, "SHOW shared_buffers") == "64MB" and scalar(shadow.dsn, "SHOW huge_pages") == "off"

    # after another refusal the shadow comes back with the last configuration that worked, not the baseline
    result, _, _ = trials.trial(refused)
    assert result.status == "failed"
    assert scalar(shadow.dsn, "SHOW shared_buffers") == "64MB" and scalar(shadow.dsn, "SHOW huge_pages") == "off"
    assert trials.current == working

    trials.reset()
    assert scalar(shadow.dsn, "SHOW shared_buffers") == "128MB" and scalar(shadow.dsn, "SHOW huge_pages") == "try"


def test_a_crash_during_the_run_is_a_failed_trial_and_the_shadow_works_afterwards(shadow):
    space = cheap_space(shadow)
    runner = CrashingRunner(replay_runner(), crash_on={1})
    trials = TrialRunner(shadow, runner, space)
    base = space.default_config()

    assert trials.trial(base)[0].status == "measured"
    candidate = {**base, "work_mem": "64MB"}
    result, _, _ = trials.trial(candidate)
    assert runner.killed and runner.killed[0] is not None
    assert "terminated by signal 9" in shadow.sandbox.log.read_text()  # a real crash, not a termination
    assert result.status == "failed" and result.objective is None
    assert "lost connections" in result.reason or "crashed" in result.reason
    assert trials.good == base  # the crashed configuration is not remembered as working

    assert shadow.sandbox.is_running()
    assert scalar(shadow.dsn, "SELECT count(*) FROM items") == ROWS
    result, _, _ = trials.trial(candidate)
    assert result.status == "measured" and result.objective > 0
    assert scalar(shadow.dsn, "SHOW work_mem") == "64MB"


# --- tuning runs ----------------------------------------------------------------------------------------------


def test_an_interrupted_run_resumes_from_the_store_without_losing_or_repeating_trials(shadow, tmp_path):
    space = cheap_space(shadow)
    options = TuningOptions(optimizer="random", trials=6, seed=0, use_seeds=False)
    path = tmp_path / "s.duckdb"
    store = open_store(path)
    target = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    run_id = "run-1"
    store.add_run(run_id, target, "knobs", "random", options.to_dict())

    first_runner = CrashingRunner(replay_runner())

    def interrupt(rec):
        if rec.number == 2:
            raise KeyboardInterrupt

    first_opt = registry.create("knobs", "random", KnobProblem(space), seed=0)
    first = TuningRun(store, run_id, target, TrialRunner(shadow, first_runner, space), first_opt, options,
                      on_trial=interrupt)
    with pytest.raises(KeyboardInterrupt):
        first.execute()
    assert [r["number"] for r in store.trials(run_id)] == [0, 1, 2]
    first.trials.reset()  # what a resumed run gets: a shadow with its own configuration
    store.close()

    store = open_store(path)  # a new process
    runner = CrashingRunner(replay_runner(), crash_on={1})  # the second trial after resuming crashes the shadow
    opt = registry.create("knobs", "random", KnobProblem(space), seed=0)
    resumed = TuningRun(store, run_id, target, TrialRunner(shadow, runner, space), opt, options)
    resumed.resume_from_store()
    assert len(resumed.records) == 3 and len(opt.history) == 3
    assert [o.x for o in opt.history] == [o.x for o in first_opt.history]
    records = resumed.execute()

    rows = store.trials(run_id)
    assert [r["number"] for r in rows] == list(range(6)) == [r.number for r in records]
    assert [r["source"] for r in rows].count("default") == 1 and rows[0]["source"] == "default"
    assert rows[0]["config"] == space.default_config()
    assert first_runner.calls + runner.calls == 6  # every trial ran once: none repeated, none skipped
    crashed = rows[4]
    assert crashed["status"] == "failed" and crashed["objective"] is None
    assert "lost connections" in crashed["reason"] or "crashed" in crashed["reason"]
    assert all(r["status"] == "measured" and r["objective"] > 0 for r in rows if r is not crashed)
    assert len(opt.history) == 6 and opt.history[4].failed
    assert len(store.run(run_id)["optimizer_state"]["history"]) == 6
    assert scalar(shadow.dsn, "SELECT count(*) FROM items") == ROWS
    store.close()


# --- comparing two configurations -----------------------------------------------------------------------------


@dataclass
class SettingProbe:
    """A ReplayRunner that also notes the random_page_cost each pass ran with."""

    real: ReplayRunner
    seen: list[str] = field(default_factory=list)
    objective: str = "latency"

    def run(self, connector, timeout_s: float) -> float:
        self.seen.append(scalar(connector.dsn, "SHOW random_page_cost"))
        return self.real.run(connector, timeout_s)

    def restore(self, connector) -> None:
        self.real.restore(connector)

    def display(self, objective: float) -> str:
        return self.real.display(objective)


def test_compare_configs_interleaves_the_arms_and_stops_early_on_a_certain_difference(shadow):
    space = cheap_space(shadow)
    # a statement that waits 100 ms when random_page_cost is below 2 and 20 ms otherwise: the candidate is a
    # planted regression five times the baseline's time, certain from the first rounds on
    slow_when_cheap = stmt("planted", "SELECT pg_sleep(CASE WHEN current_setting('random_page_cost')::float < 2 "
                                       "THEN 0.1 ELSE 0.02 END)")
    probe = SettingProbe(ReplayRunner([*WORKLOAD, slow_when_cheap], repeats=2, warmup=1))
    trials = TrialRunner(shadow, probe, space)
    baseline = space.default_config()
    candidate = {**baseline, "random_page_cost": "1.1"}
    said: list[str] = []

    cmp = compare_configs(trials, baseline, candidate, rounds=8, say=said.append)
    kept = len(cmp.baseline)
    # through the measurement engine: it stopped before its budget of 8 rounds, the interval below the minimum
    assert cmp.measured is not None and cmp.measured.stopped == "cannot clear"
    assert 3 <= kept < 8 and len(cmp.candidate) == kept
    # ABBA, each pass set on the server (a noise round run again keeps the order going)
    assert probe.seen == (["4", "1.1", "1.1", "4"] * 8)[:len(probe.seen)]
    assert len(probe.seen) == 2 * (kept + cmp.measured.noise_rounds)
    lo, hi = cmp.ci
    assert lo <= cmp.gain <= hi < 0
    assert cmp.gain < -2.0 and cmp.significant_loss  # about 4 x the baseline added
    assert max(cmp.baseline) < min(cmp.candidate)
    # the measured line: rounds, why it stopped, the load; kept in the Evidence and told as it went
    assert cmp.line.startswith(f"{kept} rounds (the gain cannot clear the minimum)") and "; load " in cmp.line
    assert cmp.evidence.measured == cmp.line and f"measured: {cmp.line}" in said
    assert cmp.evidence.rounds == kept and cmp.evidence.baseline_totals_ms == tuple(cmp.baseline)


def test_compare_configs_raises_when_an_arm_fails(shadow):
    space = KnobSpace.build(shadow.connector.knob_catalog(), HW, shadow.connector.knob_profile(),
                            SpaceOptions(max_knobs=1, include=("huge_pages",)))
    trials = TrialRunner(shadow, replay_runner(), space)
    refused = {"shared_buffers": f"{2 * physical_ram_mb()}MB", "huge_pages": "on"}
    with pytest.raises(AdvisorError, match="candidate failed"):
        compare_configs(trials, space.default_config(), refused, rounds=2)
    assert scalar(shadow.dsn, "SELECT count(*) FROM items") == ROWS
