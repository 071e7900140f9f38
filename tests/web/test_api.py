"""The REST API over the real app and a real 'production' Postgres: authorization, the recommendation
lifecycle down to the production server, errors, pagination; the target's password in no response."""

from __future__ import annotations

import html
import time

import psycopg
import pytest

from advisor.core.sqltext import shorten
from tests.web.conftest import INDEX_RUN, PASSWORD


def wait_run(client, headers, run_id: str, timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = client.get(f"/api/runs/{run_id}", headers=headers).json()
        if run["state"] not in ("queued", "running"):
            return run
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not end in {timeout_s} s")


def indexes_on(dsn: str, table: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [table])}


@pytest.fixture
def registered(app_client, tokens, prod):
    client, _ = app_client
    r = client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=tokens["operator"])
    assert r.status_code == 201, r.text
    return r.json()


def test_health_needs_no_token(app_client):
    client, _ = app_client
    r = client.get("/api/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["scheduler_running"] is True


def test_authorization(app_client, tokens, registered):
    client, service = app_client
    r = client.get("/api/targets")
    assert r.status_code == 401 and r.json()["error"] == "unauthorized" and "Bearer" in r.json()["message"]
    assert r.headers["www-authenticate"] == "Bearer"
    assert client.get("/api/targets", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get("/api/targets", headers=tokens["viewer"]).status_code == 200
    r = client.post("/api/runs", json={"target": "prod", **INDEX_RUN}, headers=tokens["viewer"])
    assert r.status_code == 403 and "operator" in r.json()["message"]
    r = client.post("/api/targets/prod/observe", headers=tokens["viewer"])
    assert r.status_code == 403
    service.revoke_token("viewer-1")
    r = client.get("/api/targets", headers=tokens["viewer"])
    assert r.status_code == 401 and "revoked" in r.json()["message"]


def test_register_target_hides_credentials(app_client, tokens, registered, prod, tmp_path):
    client, service = app_client
    assert registered["registered"] is True and "password" not in registered["dsn"]
    assert registered["last_observed_at"] is not None and registered["last_summary"]["tables"] >= 1
    page = client.get("/api/targets?limit=1&offset=0", headers=tokens["viewer"]).json()
    assert page["total"] == 1 and page["items"][0]["name"] == "prod"
    snaps = client.get("/api/targets/prod/snapshots", headers=tokens["viewer"]).json()
    assert snaps["total"] == 1 and snaps["items"][0]["statements"] >= 1
    service.store.db.execute("CHECKPOINT")
    raw = (tmp_path / "advisor.duckdb").read_bytes()
    assert PASSWORD.encode() not in raw  # encrypted at rest
    assert (tmp_path / "secret.key").stat().st_mode & 0o777 == 0o600


def test_bad_input_gets_clear_errors(app_client, tokens, registered):
    client, _ = app_client
    op = tokens["operator"]
    r = client.post("/api/targets", json={"name": "down", "dsn": "host=127.0.0.1 port=1 dbname=x"}, headers=op)
    assert r.status_code == 400 and "cannot connect" in r.json()["message"]
    # DSNs libpq refuses: a clear 400 that repeats no part of the DSN (the password least of all)
    for bad in (f"postgresql://postgres:{PASSWORD}%ZZ@127.0.0.1:1/shop",
                f"host=127.0.0.1 port=1 dbname=x password={PASSWORD} connect_timeout=abc"):
        r = client.post("/api/targets", json={"name": "bad", "dsn": bad}, headers=op)
        assert r.status_code == 400 and "invalid DSN" in r.json()["message"], r.text
        assert PASSWORD not in r.text
    r = client.post("/api/targets", json={"name": "x", "dsn": "d", "extra": 1}, headers=op)
    assert r.status_code == 422 and r.json()["error"] == "invalid_input" and "extra" in r.json()["message"]
    assert client.get("/api/targets/nope", headers=op).status_code == 404
    assert client.get("/api/recommendations/nope", headers=op).json()["error"] == "not_found"
    r = client.post("/api/runs", json={"target": "prod", "kind": "indexes"}, headers=op)
    assert r.status_code == 422 and "budget_mb" in r.json()["message"]
    r = client.post("/api/runs", json={"target": "prod", "kind": "knobs", "optimizer": "magic"}, headers=op)
    assert r.status_code == 422 and "optimizer" in r.json()["message"]
    r = client.post("/api/runs", json={"target": "prod", "kind": "views"}, headers=op)
    assert r.status_code == 422
    r = client.get("/api/recommendations?limit=0", headers=op)
    assert r.status_code == 422 and "limit" in r.json()["message"]
    r = client.post("/api/schedules", json={"target": "prod", "cron": "every night",
                                            "runs": [INDEX_RUN]}, headers=op)
    assert r.status_code == 400 and "cron" in r.json()["message"]


def test_recommendation_lifecycle_reaches_production(app_client, tokens, registered, prod):
    client, service = app_client
    op, viewer = tokens["operator"], tokens["viewer"]
    r = client.post("/api/runs", json={"target": "prod", **INDEX_RUN}, headers=op)
    assert r.status_code == 202 and r.json()["state"] in ("queued", "running", "done")
    run = wait_run(client, op, r.json()["id"])
    assert run["state"] == "done", run
    assert run["progress"]["log"] and run["result"]["state"] == "validated"
    page = client.get("/api/recommendations?state=validated&kind=indexes", headers=viewer).json()
    assert page["total"] == 1
    row = page["items"][0]
    shown = client.get(f"/api/recommendations/{row['id']}", headers=viewer).json()
    # validated: its gain's interval cleared the minimum gain (the measured size of the gain depends on the machine)
    assert row["run_id"] == run["id"] and row["gain"] > 0 and row["gain_ci"][0] >= 0.02, shown
    assert row["changes"] == 1, shown["apply_sql"]
    assert row["predicted_gain"] > 0.5 and row["target"] == "prod"
    rec = client.get(f"/api/recommendations/{row['id']}", headers=viewer).json()
    assert rec["gain"] == row["gain"] and rec["predicted_gain"] == pytest.approx(row["predicted_gain"])
    assert rec["apply_sql"][0].startswith("CREATE INDEX CONCURRENTLY") and rec["evidence"]["statements"]
    assert client.get("/api/recommendations?state=applied", headers=viewer).json()["total"] == 0
    rid = rec["id"]

    assert client.post(f"/api/recommendations/{rid}/approve", headers=viewer).status_code == 403
    r = client.post(f"/api/recommendations/{rid}/apply", headers=op)
    assert r.status_code == 409 and "approve" in r.json()["message"]
    before = indexes_on(prod, "orders")
    r = client.post(f"/api/recommendations/{rid}/approve", json={"note": "looks right"}, headers=op)
    assert r.status_code == 200 and r.json()["state"] == "approved"
    r = client.post(f"/api/recommendations/{rid}/apply", headers=op)
    assert r.status_code == 200, r.text
    applied = r.json()
    assert applied["state"] == "applied" and applied["applied"]["by"] == "token:operator-1"
    assert applied["applied"]["revert_sql"][0].startswith("DROP INDEX CONCURRENTLY")
    assert indexes_on(prod, "orders") - before == {"orders_customer_advisor_idx"}
    assert client.post(f"/api/recommendations/{rid}/apply", headers=op).status_code == 409  # not twice
    r = client.post(f"/api/recommendations/{rid}/rollback", headers=op)
    assert r.status_code == 200 and r.json()["state"] == "rolled_back"
    assert indexes_on(prod, "orders") == before

    audit = client.get(f"/api/audit?subject={rid}", headers=viewer).json()["items"]
    trail = [(a["action"], a["actor"]) for a in audit]
    assert trail[-3:] == [("approved", "token:operator-1"), ("applied", "token:operator-1"),
                          ("rolled_back", "token:operator-1")]
    trials = client.get(f"/api/runs/{run['id']}/trials", headers=viewer)
    assert trials.status_code == 200


def test_runs_of_one_target_never_overlap(app_client, tokens, registered):
    client, service = app_client
    op = tokens["operator"]
    first = client.post("/api/runs", json={"target": "prod", **INDEX_RUN}, headers=op)
    second = client.post("/api/runs", json={"target": "prod", **INDEX_RUN}, headers=op)
    assert first.status_code == 202
    wait_run(client, op, first.json()["id"])
    assert second.status_code == 409 and first.json()["id"] in second.json()["message"]
    listing = client.get("/api/runs?target=prod&limit=1", headers=op).json()
    assert listing["total"] == 1 and listing["limit"] == 1


def test_openapi_documents_every_resource(app_client):
    client, _ = app_client
    doc = client.get("/api/openapi.json").json()
    paths = set(doc["paths"])
    for p in ("/api/targets", "/api/runs/{run_id}", "/api/recommendations/{rec_id}/apply", "/api/schedules",
              "/api/health", "/api/audit", "/api/targets/{ref}/snapshots", "/api/runs/{run_id}/trials"):
        assert p in paths
    assert "TargetIn" in doc["components"]["schemas"] and "Recommendation" in doc["components"]["schemas"]


def test_a_running_run_can_be_cancelled(app_client, tokens, registered):
    client, service = app_client
    op = tokens["operator"]
    run = client.post("/api/runs", json={"target": "prod", "kind": "knobs", "optimizer": "random", "trials": 50,
                                          "rounds": 2, "repeats": 1}, headers=op).json()
    deadline = time.monotonic() + 120
    while client.get(f"/api/runs/{run['id']}", headers=op).json()["trials_done"] < 1:
        assert time.monotonic() < deadline, "no trial ran"
        time.sleep(0.3)
    assert client.post(f"/api/runs/{run['id']}/cancel", headers=tokens["viewer"]).status_code == 403
    assert client.post(f"/api/runs/{run['id']}/cancel", headers=op).status_code == 202
    ended = wait_run(client, op, run["id"], 120)
    assert ended["state"] == "cancelled" and "operator-1" in ended["error"], ended
    assert ended["trials_done"] < 50
    assert client.post(f"/api/runs/{run['id']}/cancel", headers=op).status_code == 409


def test_a_run_that_recommends_nothing_keeps_its_reasons_and_shows_them(app_client, tokens, registered):
    """A budget no index fits: no recommendation, and the run still says why per statement (REST and its page)."""
    from web.deps import SESSION_COOKIE

    client, service = app_client
    r = client.post("/api/runs", json={"target": "prod", **INDEX_RUN, "budget_mb": 0.001}, headers=tokens["operator"])
    run = wait_run(client, tokens["operator"], r.json()["id"])
    assert run["state"] == "done" and run["result"]["recommendation"] is None, run
    assert "no index is worth its space" in run["result"]["message"]
    explained = run["result"]["explain"]
    assert explained and all(row["why"] for row in explained)
    _, secret = service.create_token("page-viewer", "viewer")
    session, _ = service.login(secret)
    client.cookies.set(SESSION_COOKIE, session)
    page = client.get(f"/runs/{run['id']}").text
    assert 'id="explain"' in page and "Why, per statement" in page and explained[0]["queryid"] in page
    # each statement by its SQL, in the verdict and on the page (the queryid only in attributes: a hover, a key)
    first = explained[0]
    assert f"statement `{shorten(first['statement'])}`: " in run["result"]["message"]
    assert first["queryid"] not in run["result"]["message"]
    assert f">{html.escape(shorten(first['statement'], 90))}</code>" in page


def test_a_whole_advisor_run_starts_over_rest_and_its_page_shows_each_step(app_client, tokens, registered):
    client, _ = app_client
    op = tokens["operator"]
    body = {"target": "prod", "kind": "all", "kinds": ["indexes"], "budget_mb": 50, "episodes": 1, "samples": 0,
            "rounds": 2}
    r = client.post("/api/runs", json=body, headers=op)
    assert r.status_code == 202, r.text
    assert (r.json()["kind"], r.json()["optimizer"]) == ("all", "all")  # a kind without optimizers names itself
    bad = client.post("/api/runs", json={**body, "kinds": ["indexes", "views"]}, headers=op)
    assert bad.status_code == 422 and "kinds" in bad.text
    ended = wait_run(client, op, r.json()["id"])
    assert ended["state"] == "done", ended
    result = ended["result"]
    assert [s["kind"] for s in result["steps"]] == ["indexes"] and result["recommendations"]
    from tests.web.logins import log_in

    assert log_in(client, op["Authorization"].split()[1]).status_code == 303
    page = client.get(f"/runs/{ended['id']}").text
    assert 'id="outcome"' in page and "/recommendations/" + result["recommendations"][0] in page
