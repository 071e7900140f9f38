"""Nightly schedules: persisted across a restart, misfires caught up or recorded, never two runs of a target at
once, and what a schedule auto-applied rolled back when the next look shows a regression."""

from __future__ import annotations

import time
from datetime import datetime

import psycopg
import pytest
from fastapi.testclient import TestClient

from advisor.service.auth import Principal
from advisor.core.domain import Evidence, IndexChange, KnobChange, Recommendation
from advisor.service.scheduling import _auto_applicable, next_fire, watch
from advisor.service.service import AdvisorService
from advisor.storage.store import Store, new_id
from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST, run, scalar
from tests.web.conftest import INDEX_RUN
from web.main import create_app

NIGHTLY = {"cron": "0 2 * * *", "runs": [INDEX_RUN]}


def start(tmp_path) -> tuple[TestClient, object]:
    app = create_app(str(tmp_path / "advisor.duckdb"))
    client = TestClient(app)
    client.__enter__()
    return client, app


def wait_for(predicate, timeout_s: float = 120):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("timed out")


def test_schedules_survive_a_restart(tmp_path, monkeypatch, prod):
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    client, app = start(tmp_path)
    service = app.state.service
    _, secret = service.create_token("op", "operator")
    auth = {"Authorization": f"Bearer {secret}"}
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=auth).status_code == 201
    r = client.post("/api/schedules", json={"target": "prod", **NIGHTLY}, headers=auth)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert sid in service.scheduler.jobs()
    target_id = service.target("prod")["id"]
    service.store.add_run("left-over", target_id, "knobs", "hibo", {}, state="running")  # a run the stop cut
    client.__exit__(None, None, None)

    client, app = start(tmp_path)
    try:
        service = app.state.service
        listed = client.get("/api/schedules", headers=auth).json()["items"]
        assert [s["id"] for s in listed] == [sid]
        jobs = service.scheduler.jobs()
        listed_next = datetime.fromisoformat(listed[0]["next_fire_at"]).timestamp()  # ISO-8601 UTC in the API
        assert jobs[sid] == pytest.approx(listed_next) == pytest.approx(next_fire("0 2 * * *"))
        assert client.get("/api/runs/left-over", headers=auth).json()["state"] == "interrupted"
        assert client.get("/api/health").json()["scheduled_jobs"] == 1
        assert client.delete(f"/api/schedules/{sid}", headers=auth).status_code == 204
        assert sid not in service.scheduler.jobs()
    finally:
        client.__exit__(None, None, None)


def test_misfires_run_once_within_the_grace_else_are_recorded(app_client, tokens, prod):
    client, service = app_client
    op = tokens["operator"]
    client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op)
    late = client.post("/api/schedules", json={"target": "prod", **NIGHTLY}, headers=op).json()
    lost = client.post("/api/schedules", json={"target": "prod", **NIGHTLY}, headers=op).json()
    created = datetime.fromisoformat(late["created_at"]).timestamp()  # ISO-8601 UTC in the API
    due = next_fire("0 2 * * *", after=created)
    # the server was down at the fire time: 10 minutes late runs (once), 7 hours late is recorded as missed
    service.store.schedule_fired(lost["id"], created - 7 * 3600 - 86400)
    fired = service.scheduler.catch_up(now=due + 600)
    assert late["id"] in fired and lost["id"] not in fired
    runs = wait_for(lambda: [r for r in client.get("/api/runs?target=prod", headers=op).json()["items"]
                             if r["schedule_id"] == late["id"] and r["state"] == "done"])
    assert len(runs) == 1 and runs[0]["started_by"] == f"schedule:{late['id']}"
    # a recommendation measured and left for people: this schedule does not auto-apply (whether the shadow's
    # measurement validates or rejects it is the machine's, not the schedule's, to decide)
    assert runs[0]["result"]["recommendation"] and runs[0]["result"]["state"] in ("validated", "rejected")
    missed = [r for r in service.runs("prod") if r["schedule_id"] == lost["id"]]
    assert [r["state"] for r in missed] == ["missed"] and "server was down" in missed[0]["error"]


def test_a_scheduled_run_never_overlaps_another_run_of_its_target(app_client, tokens, prod):
    client, service = app_client
    op = tokens["operator"]
    client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op)
    sid = client.post("/api/schedules", json={"target": "prod", **NIGHTLY}, headers=op).json()["id"]
    busy = new_id()
    service.store.add_run(busy, service.target("prod")["id"], "knobs", "hibo", {}, state="running")
    runs = service.run_schedule(sid)
    assert [r["state"] for r in runs] == ["skipped"] and busy in runs[0]["error"] and "overlap" in runs[0]["error"]
    listed = client.get("/api/runs?target=prod&state=skipped", headers=op).json()["items"]
    assert [r["id"] for r in listed] == [runs[0]["id"]]


def test_auto_apply_allows_only_validated_reload_only_knobs():
    from connectors.postgres.knobs import PROFILE

    base = Recommendation("r", "t", "knobs", "hibo", (KnobChange("work_mem", "64MB"),), (), (), False, "validated", 0.0)
    assert _auto_applicable(base, {"auto_apply_knobs": []}, PROFILE)
    assert not _auto_applicable(base, {"auto_apply_knobs": ["random_page_cost"]}, PROFILE)
    from dataclasses import replace

    assert not _auto_applicable(replace(base, needs_restart=True), {}, PROFILE)
    assert not _auto_applicable(replace(base, state="rejected"), {}, PROFILE)
    assert not _auto_applicable(replace(base, kind="indexes", changes=(IndexChange("public", "t", ("a",)),)), {},
                                PROFILE)
    # a knob that changes correctness or durability (searched with allow_unsafe / allow_durability) waits for a
    # person, whatever the schedule allows (issue 42 item 9)
    for risky in (KnobChange("autovacuum", "off"), KnobChange("synchronous_commit", "off")):
        rec = replace(base, changes=(KnobChange("work_mem", "64MB"), risky))
        assert not _auto_applicable(rec, {"auto_apply_knobs": []}, PROFILE)
        assert not _auto_applicable(rec, {"auto_apply_knobs": ["work_mem", risky.name]}, PROFILE)


ACCEPTED = Evidence(3, (10.0, 10.0, 10.0), (5.0, 5.0, 5.0), 0.5, (0.45, 0.55), (), 0.02, 0.1)


@pytest.fixture
def own_server(tmp_path, monkeypatch):
    """A server of its own: the test changes server-wide settings on it."""
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    with PostgresSandbox("watch", settings=FAST) as sandbox:
        dsn = sandbox.create_database("shop")
        run(dsn, "CREATE TABLE t (id int PRIMARY KEY, v text)",
            "INSERT INTO t SELECT x, md5(x::text) FROM generate_series(1, 200000) x", "ANALYZE t")
        yield dsn


def lookups(dsn: str, n: int = 60) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for k in range(n):
            conn.execute("SELECT v FROM t WHERE id = %s", [k * 1000 + 1])


@pytest.mark.parametrize("changes, rolled_back", [
    ((KnobChange("enable_indexscan", "off"), KnobChange("enable_bitmapscan", "off")), True),  # every lookup scans
    ((KnobChange("work_mem", "8MB"),), False),  # does not touch a primary-key lookup
])
def test_watch_rolls_back_what_the_schedule_applied_when_statements_regress(own_server, tmp_path, changes,
                                                                             rolled_back):
    dsn = own_server
    service = AdvisorService(Store(tmp_path / "advisor.duckdb"))
    service.add_target("shop", dsn)
    from advisor.service.runs import kinds

    # a wide limit (4x): a primary-key lookup takes microseconds, so on a loaded machine its mean moves by tens of
    # percent without any change, while scanning the table instead is a hundred times slower
    schedule = service.add_schedule("shop", "0 2 * * *", [kinds.plan_of(**INDEX_RUN)], auto_apply="reload_knobs",
                                    max_regression=3.0)
    who = Principal(f"schedule:{schedule['id']}", "operator")
    lookups(dsn)  # the statements' mean before the change
    target_id = service.target("shop")["id"]
    plan = service.connector_for(Recommendation("x", target_id, "knobs", "t", changes, (), (), False, "", 0.0)) \
        .plan_changes(changes)
    rec = Recommendation(new_id(), target_id, "knobs", "test", plan.changes, plan.apply_sql, plan.revert_sql, False,
                         "proposed", time.time(), evidence=ACCEPTED)
    service.store.add_recommendation(rec)
    service.store.transition(rec.id, "validated", "advisor")
    service.approve(rec.id, who)
    service.apply(rec.id, who)
    lookups(dsn)  # the workload runs on with the change
    watch(service, service.schedule(schedule["id"]), who)
    after = service.recommendation(rec.id)
    verdict = next(a for a in service.audit_log(rec.id) if a["action"] == "watch")["detail"]
    assert verdict["statements"] >= 1
    if rolled_back:
        assert after.state == "rolled_back" and verdict["ratio"] > 4
        assert scalar(dsn, "SHOW enable_indexscan") == "on"
        assert "automatic rollback" in service.audit_log(rec.id)[-1]["detail"]["note"]
    else:
        assert after.state == "applied" and verdict["ratio"] < 4
        assert scalar(dsn, "SHOW work_mem") == "8MB"
    service.store.close()


def test_a_schedule_that_never_fires_or_names_unknown_knobs_is_refused(own_server, tmp_path):
    from advisor.core.errors import AdvisorError
    from advisor.service.runs import kinds

    service = AdvisorService(Store(tmp_path / "advisor.duckdb"))
    service.add_target("shop", own_server)
    plans = [kinds.plan_of(**INDEX_RUN)]
    with pytest.raises(AdvisorError, match="never fires"):
        service.add_schedule("shop", "0 2 30 2 *", plans)  # February 30
    with pytest.raises(AdvisorError, match="no_such_knob"):
        service.add_schedule("shop", "0 2 * * *", plans, auto_apply="reload_knobs",
                             auto_apply_knobs=["work_mem", "no_such_knob"])
    assert service.schedules() == []  # nothing was stored by the refused ones
    ok = service.add_schedule("shop", "0 2 29 2 *", plans, auto_apply="reload_knobs", auto_apply_knobs=["work_mem"])
    assert ok["next_fire_at"] is not None and [s["id"] for s in service.schedules()] == [ok["id"]]


def test_a_firing_while_the_previous_one_runs_is_recorded_as_skipped(own_server, tmp_path):
    """APScheduler drops a firing when the job's previous run is still going (max_instances=1); every firing is
    recorded, so that one becomes a skipped run of the schedule. The event is APScheduler's own, handed to the
    scheduler's listener as APScheduler would."""
    from datetime import datetime, timezone

    from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobSubmissionEvent

    from advisor.service.runs import kinds
    from advisor.service.scheduling import Scheduler

    service = AdvisorService(Store(tmp_path / "advisor.duckdb"))
    service.add_target("shop", own_server)
    schedule = service.add_schedule("shop", "0 2 * * *", [kinds.plan_of(**INDEX_RUN)])
    scheduler = Scheduler(service)
    scheduler._on_event(JobSubmissionEvent(EVENT_JOB_MAX_INSTANCES, schedule["id"], "default",
                                           [datetime.now(timezone.utc)]))
    runs = [r for r in service.runs() if r["schedule_id"] == schedule["id"]]
    assert [(r["state"], r["kind"]) for r in runs] == [("skipped", "indexes")]
    assert "still running" in runs[0]["error"]
