"""Hostile references and text through the REST API, on both stores (a DuckDB file and a PostgreSQL database on a
real server): a name that reads as another target's id is refused, a reference that could mean two targets is an
error (never a guess), internal references go by id, and a NUL or other control character anywhere in a request
gets a 400/422 in the API's error shape naming where it was, the same on both stores, never a bare 500."""

from __future__ import annotations

import psycopg
import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from advisor.core.domain import IndexChange, Recommendation
from tests.advisor.storage.test_store import pg_url
from tests.web.logins import log_in
from web.main import create_app


@pytest.fixture(params=["duckdb", "postgresql"])
def api(request, tmp_path, monkeypatch):
    """(client, service, admin headers) over a fresh store of each kind."""
    monkeypatch.setenv("ADVISOR_SECRET_KEY", Fernet.generate_key().decode())
    location = str(tmp_path / "advisor.duckdb") if request.param == "duckdb" else pg_url(request.getfixturevalue("pg"))
    app = create_app(location, scheduler=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        service = app.state.service
        _, secret = service.create_token("admin-1", "admin")
        yield client, service, {"Authorization": f"Bearer {secret}"}


def _register(client, headers, name: str, dsn: str):
    return client.post("/api/targets", json={"name": name, "dsn": dsn}, headers=headers)


def _force_target(service, name: str, dsn: str) -> str:
    """A target row written as a store of an earlier version could hold it (names that read as ids were
    accepted then): straight into the store, bypassing every check."""
    target_id = "a1" * 6
    service.store.db.execute("INSERT INTO targets (id, name, engine, dsn, created_at, credentials) "
                             "VALUES (?, ?, 'postgres', ?, 0, ?)",
                             [target_id, name, "impostor", _encrypt(service, dsn)])
    return target_id


def _encrypt(service, dsn: str) -> str:
    from advisor.storage.secrets import vault_for

    return vault_for(service.store.path).encrypt(dsn)


def test_a_target_name_that_reads_as_an_id_is_refused(api, db):
    client, _, admin = api
    victim = _register(client, admin, "victim", db)
    assert victim.status_code == 201, victim.text
    victim_id = victim.json()["id"]
    for name in (victim_id, victim_id.upper(), "0123456789ab"):
        r = _register(client, admin, name, db)
        assert r.status_code == 400, r.text
        assert r.json()["error"] == "bad_request" and "look like an id" in r.json()["message"]
    assert [t["name"] for t in client.get("/api/targets", headers=admin).json()["items"]] == ["victim"]
    r = client.delete(f"/api/targets/{victim_id}", headers=admin)  # the id means the victim, and only it
    assert r.status_code == 204
    assert client.get("/api/targets", headers=admin).json()["items"] == []


def test_a_reference_that_could_mean_two_targets_is_an_error_never_a_guess(api, db, pg):
    client, service, admin = api
    victim_id = _register(client, admin, "victim", db).json()["id"]
    decoy = pg.create_database("decoy_" + victim_id[:6])
    impostor_id = _force_target(service, victim_id, decoy)
    for method, path in (("DELETE", f"/api/targets/{victim_id}"), ("GET", f"/api/targets/{victim_id}"),
                         ("PATCH", f"/api/targets/{victim_id}"), ("GET", f"/api/runs?target={victim_id}")):
        body = {"dsn": decoy} if method == "PATCH" else None
        r = client.request(method, path, headers=admin, json=body)
        assert r.status_code == 409, (method, path, r.text)
        assert "names that look like ids" in r.json()["message"] and impostor_id in r.json()["message"]
    names = sorted(t["name"] for t in client.get("/api/targets", headers=admin).json()["items"])
    assert names == sorted(["victim", victim_id])  # nothing was deleted or changed
    assert client.get(f"/api/targets/{impostor_id}", headers=admin).json()["name"] == victim_id
    # a recommendation for the victim reaches the victim's database, whatever another target is named
    rec = Recommendation("rec1", victim_id, "indexes", "extend", (IndexChange("public", "t", ("a",)),), (), (),
                         False, "approved", 0.0)
    service.store.add_recommendation(rec)
    # the pages that list targets, schedules and a recommendation go by id: they still answer
    assert log_in(client, admin["Authorization"].split()[1]).status_code == 303
    for page in ("/", "/schedules", "/recommendations/rec1", "/runs"):
        r = client.get(page)
        assert r.status_code == 200, (page, r.text[:300])
    with psycopg.connect(db) as conn:
        victim_db = conn.info.dbname
    connector = service.connector_for(service.store.recommendation("rec1"))
    assert f"dbname={victim_db}" in connector.display_name and "decoy" not in connector.display_name


HOSTILE = [  # (method, path, JSON body, where the error must say the character was)
    ("GET", "/api/targets/a%00b", None, "the path"),
    ("DELETE", "/api/targets/a%00b", None, "the path"),
    ("PATCH", "/api/targets/a%00b", {"dsn": "host=x"}, "the path"),
    ("GET", "/api/targets/a%00b/snapshots", None, "the path"),
    ("GET", "/api/runs/r%00", None, "the path"),
    ("GET", "/api/runs/r%00/trials", None, "the path"),
    ("GET", "/api/recommendations/x%00", None, "the path"),
    ("POST", "/api/recommendations/x%00/approve", {"note": ""}, "the path"),
    ("GET", "/api/runs?target=a%00", None, "query parameter 'target'"),
    ("GET", "/api/recommendations?target=%00", None, "query parameter 'target'"),
    ("GET", "/api/audit?subject=%00", None, "query parameter 'subject'"),
    ("GET", "/api/schedules?target=x%1b", None, "query parameter 'target'"),
    ("POST", "/api/targets", {"name": "a\u0000b", "dsn": "host=127.0.0.1"}, "name"),
    ("POST", "/api/targets", {"name": "a\u001bb", "dsn": "host=127.0.0.1"}, "name"),
    ("POST", "/api/runs", {"target": "t\u0000", "kind": "indexes", "budget_mb": 5}, "target"),
    ("POST", "/api/tokens", {"name": "bot\u0000", "role": "viewer"}, "name"),
    ("POST", "/api/schedules", {"target": "t", "cron": "0 2 * * *\u0000", "runs": [{"kind": "knobs"}]}, "cron"),
]


@pytest.mark.parametrize("method,path,body,where", HOSTILE, ids=[f"{m} {p} {w}" for m, p, _, w in HOSTILE])
def test_a_control_character_is_a_clear_error_on_both_stores(api, method, path, body, where):
    client, _, admin = api
    r = client.request(method, path, headers=admin, json=body)
    assert r.status_code in (400, 422), r.text
    assert r.headers["content-type"].startswith("application/json")
    answer = r.json()
    assert answer["error"] in ("bad_request", "invalid_input") and where in answer["message"]
    assert "control character" in answer["message"] and "Traceback" not in r.text


def test_a_note_with_a_nul_is_refused_and_the_recommendation_is_unchanged(api):
    client, service, admin = api
    service.store.add_recommendation(Recommendation("rec2", "t", "indexes", "extend", (), (), (), False,
                                                    "validated", 0.0))
    r = client.post("/api/recommendations/rec2/approve", json={"note": "ok\u0000"}, headers=admin)
    assert r.status_code == 422 and "note" in r.json()["message"]
    assert client.get("/api/recommendations/rec2", headers=admin).json()["state"] == "validated"
    r = client.post("/api/recommendations/rec2/approve", json={"note": "looked at it\nline two"}, headers=admin)
    assert r.status_code == 200 and r.json()["state"] == "approved"  # a note may span lines
