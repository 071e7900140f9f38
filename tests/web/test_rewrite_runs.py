"""A rewrite run through the REST API on a real target: the workload's correlated subquery comes back rewritten,
proven equivalent and timed; the recommendation can be approved but never applied (its lifecycle ends at
approved), and the API says so. Schedules take rewrite runs like any other kind."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import run
from tests.web.test_api import wait_run

# a correlated aggregate over an unindexed column: PostgreSQL rescans ``o`` once per row of ``c`` (300 x 30,000
# rows); decorrelated, ``o`` is read once. The rewrite is tens of times faster, far beyond timing noise.
SLOW = "SELECT c.id FROM c WHERE c.score > (SELECT avg(o.amount) FROM o WHERE o.cid = c.id)"
REWRITE_RUN = {"kind": "rewrites", "optimizer": "greedy", "rounds": 2}


@pytest.fixture(scope="module")
def reports(pg):
    dsn = pg.create_database("reports_" + uuid.uuid4().hex[:8])
    run(dsn, "CREATE TABLE c (id int PRIMARY KEY, score numeric NOT NULL)",
        "CREATE TABLE o (id int PRIMARY KEY, cid int NOT NULL, amount numeric)",
        "INSERT INTO c SELECT x, x % 11 FROM generate_series(1, 300) x",
        "INSERT INTO o SELECT x, x % 300 + 1, x % 13 FROM generate_series(1, 30000) x", "ANALYZE",
        "SELECT pg_stat_statements_reset()", SLOW, SLOW)
    return dsn


def test_a_rewrite_run_is_approved_but_never_applied(app_client, tokens, reports):
    client, _ = app_client
    op, viewer = tokens["operator"], tokens["viewer"]
    assert client.post("/api/targets", json={"name": "reports", "dsn": reports}, headers=op).status_code == 201
    r = client.post("/api/runs", json={"target": "reports", **REWRITE_RUN}, headers=op)
    assert r.status_code == 202, r.text
    done = wait_run(client, op, r.json()["id"], timeout_s=240)
    assert done["state"] == "done" and done["kind"] == "rewrites", done
    assert done["result"]["state"] == "validated", done["result"]
    rec = client.get(f"/api/recommendations/{done['result']['recommendation']}", headers=viewer).json()
    assert rec["kind"] == "rewrites" and rec["applicable"] is False and rec["apply_sql"] == []
    (change,) = rec["changes"]
    assert change["original"].startswith("SELECT c.id") and "GROUP BY" in change["rewritten"]
    (st,) = [s for s in rec["details"]["statements"] if s["rewritten"]]
    assert st["equivalent"] is True and "the shadow" in st["checked_on"] and st["speedup"] > 1
    assert st["ci"][0] <= st["speedup"] <= st["ci"][1] and "decorrelate_scalar_aggregate" in st["rules"]
    r = client.post(f"/api/recommendations/{rec['id']}/approve", json={"note": "handed to the team"}, headers=op)
    assert r.status_code == 200 and r.json()["state"] == "approved"
    r = client.post(f"/api/recommendations/{rec['id']}/apply", headers=op)
    assert r.status_code == 409 and "never applied to the database" in r.json()["message"]


def test_rewrite_runs_are_checked_and_scheduled_like_the_others(app_client, tokens, reports):
    client, _ = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "reports", "dsn": reports}, headers=op).status_code == 201
    r = client.post("/api/runs", json={"target": "reports", **REWRITE_RUN, "optimizer": "magic"}, headers=op)
    assert r.status_code == 422
    r = client.post("/api/runs", json={"target": "reports", **REWRITE_RUN, "budget_mb": 5}, headers=op)
    assert r.status_code == 422  # an index run's field
    r = client.post("/api/schedules", json={"target": "reports", "cron": "0 2 * * *", "runs": [REWRITE_RUN]},
                    headers=op)
    assert r.status_code == 201, r.text
    assert r.json()["plan"]["runs"][0]["kind"] == "rewrites"


def test_a_rewrite_run_of_bad_sql_is_refused_before_it_is_queued(app_client, tokens, reports):
    client, _ = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "reports", "dsn": reports}, headers=op).status_code == 201
    script = "SELECT c.id FROM c;\nSELECT c.id FROM c WHERE c.scor > 1"  # a line break: a script's, allowed
    r = client.post("/api/runs", json={"target": "reports", **REWRITE_RUN, "sql": script}, headers=op)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == 'statement 2: column c.scor does not exist (position 26)'
    assert client.get("/api/runs", headers=op).json()["total"] == 0  # nothing queued, nothing observed
    r = client.post("/api/runs", json={"target": "reports", **REWRITE_RUN, "sql": "SELECT 1 +"}, headers=op)
    assert r.status_code == 400 and r.json()["message"] == "statement 1: syntax error at end of input (position 11)"
