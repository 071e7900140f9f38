"""Every applied change is watched: a change made harmful on purpose (planner settings that turn a primary-key lookup
into a full scan, applied by hand through the REST API of a running server) is rolled back by the server's watcher
within its window, audited with the figures, and the lookup's plan is the index scan again; a harmless one ends
"held" when its window passes (checked with ``advisor recommendations watch --once``). The verdict itself (which
statements are judged, against what) is checked on fixed counters."""

from __future__ import annotations

import html
import json
import time

import psycopg
import pytest
from fastapi.testclient import TestClient

from advisor.core.domain import Evidence, KnobChange, Recommendation, StatementEvidence
from advisor.core.sqltext import shorten
from advisor.service.service import AdvisorService
from advisor.service.watch import judge, watch_of
from advisor.storage.store import Store, new_id
from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST, run, scalar
from tests.web.logins import log_in
from tests.web.test_scheduler import wait_for
from web import views
from web.main import create_app

LOOKUP = "SELECT v FROM t WHERE id = %s"


@pytest.fixture(scope="module")
def shop():
    """A production server of its own: the tests change server-wide settings (ALTER SYSTEM) on it."""
    with PostgresSandbox("watch", settings=FAST) as sandbox:
        dsn = sandbox.create_database("shop")
        run(dsn, "CREATE TABLE t (id int PRIMARY KEY, v text)",
            "INSERT INTO t SELECT x, md5(x::text) FROM generate_series(1, 100000) x", "ANALYZE t")
        yield dsn


def fresh_statistics(dsn: str) -> None:
    """Each test's lookups counted from zero (the server is the module's)."""
    run(dsn, "SELECT pg_stat_statements_reset()")


def lookups(dsn: str, n: int = 60) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for k in range(n):
            conn.execute(LOOKUP, [k * 1000 + 1])


def lookup_plan(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + LOOKUP.replace("%s", "4242")).fetchall())


def recommend(service: AdvisorService, changes: tuple) -> Recommendation:
    """A validated knob recommendation whose evidence measured the lookup (its production queryid) and found it
    twice as fast: what the real pipeline records, with the changes chosen by the test."""
    target_id = service.target("shop")["id"]
    probe = Recommendation("x", target_id, "knobs", "t", changes, (), (), False, "", 0.0)
    connector = service.connector_for(probe)
    qid = next(s.queryid for s in connector.observe().statements if "FROM t WHERE id" in s.query)
    evidence = Evidence(3, (10.0,) * 3, (5.0,) * 3, 0.5, (0.45, 0.55),
                        (StatementEvidence(qid, LOOKUP, 60, 0.1, 0.05, 0.5, (0.4, 0.6), False),), 0.02, 0.1)
    plan = connector.plan_changes(changes)
    rec = Recommendation(new_id(), target_id, "knobs", "test", plan.changes, plan.apply_sql, plan.revert_sql, False,
                         "proposed", time.time(), evidence=evidence)
    service.store.add_recommendation(rec)
    service.store.transition(rec.id, "validated", "advisor")
    return rec


def test_a_harmful_apply_is_rolled_back_by_the_servers_watcher_within_its_window(shop, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    monkeypatch.setenv("ADVISOR_WATCH_INTERVAL_S", "0.3")  # the server's watcher (default window: an hour)
    with TestClient(create_app(str(tmp_path / "advisor.duckdb"), scheduler=False)) as client:
        service = client.app.state.service
        _, secret = service.create_token("dba", "operator")
        op = {"Authorization": f"Bearer {secret}"}
        assert client.post("/api/targets", json={"name": "shop", "dsn": shop}, headers=op).status_code == 201
        fresh_statistics(shop)
        lookups(shop)  # the lookup's mean before the change
        assert "Index Scan" in lookup_plan(shop)
        rec = recommend(service, (KnobChange("enable_indexscan", "off"), KnobChange("enable_bitmapscan", "off")))
        assert client.post(f"/api/recommendations/{rec.id}/approve", headers=op).status_code == 200
        applied = client.post(f"/api/recommendations/{rec.id}/apply", headers=op).json()
        assert applied["state"] == "applied" and applied["watch"]["state"] == "watching"
        assert "Seq Scan" in lookup_plan(shop)  # the harm is real: every lookup scans the table
        lookups(shop)  # the application goes on
        # the watch records how it ended right after the rollback's transition
        wait_for(lambda: (watch_of(service.recommendation(rec.id)) or {}).get("state") == "rolled_back")
        out = client.get(f"/api/recommendations/{rec.id}", headers=op).json()
        history = [(a["actor"], a["action"], a["detail"]) for a in service.audit_log(rec.id)]
        assert log_in(client, secret).status_code == 303
        page = client.get(f"/recommendations/{rec.id}").text
    watch = out["watch"]
    assert watch["state"] == "rolled_back" and watch["ended_at"] < watch["ends_at"]  # within the window
    actions = [a for _, a, _ in history]
    assert actions.index("applied") < actions.index("watch") < actions.index("watch_rollback") \
        < actions.index("rolled_back")
    assert "watched for 1 h" in next(d for _, a, d in history if a == "applied")["note"]
    figures = next(d for _, a, d in history if a == "watch_rollback")
    assert figures["statements"] == 1 and figures["ratio"] > 3 and figures["limit"] == pytest.approx(1.1)
    assert figures["worst"][0]["calls"] >= 20 and figures["worst"][0]["after_ms"] > figures["worst"][0]["before_ms"]
    assert figures["worst"][0]["sql"] == LOOKUP  # the SQL beside the queryid
    actor, _, transition = next(h for h in history if h[1] == "rolled_back")
    assert actor == "watcher" and transition["note"].startswith("automatic rollback")
    assert scalar(shop, "SHOW enable_indexscan") == "on" and "Index Scan" in lookup_plan(shop)  # plan restored
    assert 'id="watch-state">rolled back<' in page and "automatic rollback" in page
    table = page[page.index('id="watch-statements"'):]
    assert f">{html.escape(shorten(LOOKUP, 60))}</code>" in table[:table.index("</table>")]  # by its SQL


def test_a_harmless_apply_is_held_when_its_window_passes(shop, tmp_path, monkeypatch, capsys):
    from advisor.cli.main import main

    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    monkeypatch.setenv("ADVISOR_WATCH_WINDOW_S", "1")
    monkeypatch.setenv("ADVISOR_WATCH_MAX_REGRESSION", "3.0")  # a lookup takes microseconds: its mean is noisy
    path = str(tmp_path / "advisor.duckdb")
    service = AdvisorService(Store(path))
    service.add_target("shop", shop)
    fresh_statistics(shop)
    lookups(shop)
    rec = recommend(service, (KnobChange("work_mem", "8MB"),))  # nothing a primary-key lookup notices
    service.approve(rec.id)
    service.apply(rec.id)
    lookups(shop)
    ends_at = watch_of(service.recommendation(rec.id))["ends_at"]
    service.store.close()
    time.sleep(max(0.0, ends_at - time.time()))  # at most the window's 1 s
    assert main(["recommendations", "watch", "--once", "--json", "--store", path]) == 0
    rows = json.loads(capsys.readouterr().out)["watches"]
    assert [(r["id"], r["state"], r["statements"]) for r in rows] == [(rec.id, "held", 1)]
    assert main(["recommendations", "show", rec.id, "--store", path]) == 0
    assert "watch: held" in capsys.readouterr().out
    service = AdvisorService(Store(path))
    try:
        after = service.recommendation(rec.id)
        held = next(a for a in service.audit_log(rec.id) if a["action"] == "watch_held")["detail"]
        assert after.state == "applied" and held["statements"] == 1 and held["ratio"] < 4
        assert scalar(shop, "SHOW work_mem") == "8MB"
        assert views.recommendation(after, None).watch["state"] == "held"  # the REST output carries it
        assert service.check_watches() == []  # an ended watch is not checked again
        service.rollback(rec.id, why="test over")
    finally:
        service.store.close()
    assert scalar(shop, "SHOW work_mem") == "4MB"


def test_only_watched_statements_with_enough_calls_before_and_since_are_judged():
    before = {"a": [100, 100.0], "b": [100, 1000.0], "c": [5, 5.0], "d": [100, 100.0], "e": [100, 100.0]}
    start = {"a": [110, 110.0], "b": [100, 1000.0], "c": [5, 5.0], "d": [100, 100.0], "e": [100, 100.0]}
    now = {"a": [160, 210.0], "b": [130, 1300.0], "c": [100, 1000.0], "d": [50, 60.0], "e": [130, 900.0]}
    f = judge(before, start, now, ["a", "b", "c", "d"], 20, {"a": 0.5})
    # a: 50 calls at 2 ms (1 ms before); b: 30 calls at 10 ms, as before; e is not watched
    assert f["statements"] == 2 and f["ratio"] == pytest.approx((100 + 300) / (50 * 1 + 30 * 10))
    assert f["worst"][0]["queryid"] == "a" and f["worst"][0]["expected"] == 0.5
    assert set(f["not_judged"]) == {"c", "d"}
    assert "before the apply" in f["not_judged"]["c"] and "reset" in f["not_judged"]["d"]
    assert judge(before, start, start, None, 20)["ratio"] is None  # nothing ran since: nothing to judge


def test_a_watch_open_on_a_recommendation_rolled_back_by_hand_reads_stopped():
    w = {"state": "watching", "started_at": 100.0, "window_s": 60.0, "start": {"a": [1, 1.0]}}
    rec = Recommendation("r", "t", "knobs", "x", (), (), (), False, "rolled_back", 0.0, applied={"watch": w})
    shown = watch_of(rec)
    assert shown["state"] == "stopped" and shown["ends_at"] == 160.0 and "start" not in shown
    assert watch_of(Recommendation("r", "t", "knobs", "x", (), (), (), False, "applied", 0.0, applied={})) is None
