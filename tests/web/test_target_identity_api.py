"""One database is one target over REST too (issue 29): registering a database that a target is registered for
already, under another name and another DSN text, answers 409 naming that target, and no second card appears."""

from __future__ import annotations

import uuid

from tests.web.conftest import INDEX_RUN, PASSWORD


def test_registering_one_database_twice_is_refused(app_client, tokens, prod):
    client, _ = app_client
    r = client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=tokens["operator"])
    assert r.status_code == 201, r.text
    p = dict(part.split("=", 1) for part in prod.split())
    url = (f"postgresql://{p['user']}:{PASSWORD}@{p['host']}:{p['port']}/{p['dbname']}"
           "?application_name=elsewhere")
    again = client.post("/api/targets", json={"name": "prod-again", "dsn": url}, headers=tokens["operator"])
    assert again.status_code == 409 and "registered already as target 'prod'" in again.text, again.text
    listed = client.get("/api/targets", headers=tokens["viewer"]).json()
    assert [t["name"] for t in listed["items"]] == ["prod"] and listed["total"] == 1


def test_a_new_dsn_reaching_another_targets_database_is_refused(app_client, tokens, prod, pg):
    """Issue 42 item 7: PATCH with ``other_database`` pointed a second target at a registered target's database
    (200), and runs on both names then ran on one database at once. It answers 409 naming the owner, as
    registration does, and the target keeps its own DSN."""
    client, service = app_client
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=tokens["operator"]).status_code == 201
    elsewhere = pg.create_database("elsewhere_" + uuid.uuid4().hex[:8])
    r = client.post("/api/targets", json={"name": "other", "dsn": elsewhere}, headers=tokens["operator"])
    assert r.status_code == 201, r.text
    before = service.target("other")["dsn"]
    r = client.patch("/api/targets/other", json={"dsn": prod, "other_database": True}, headers=tokens["operator"])
    assert r.status_code == 409 and "registered already as target 'prod'" in r.text, r.text
    assert service.target("other")["dsn"] == before
    assert service.store.target_identity(service.target("other")["id"])["database"] == elsewhere.split("dbname=")[1]
    # the owner itself takes a new DSN text for its database
    assert client.patch("/api/targets/prod", json={"dsn": prod}, headers=tokens["operator"]).status_code == 200


def test_two_targets_of_one_database_never_run_at_once(app_client, tokens, prod, pg):
    """A store that holds two targets of one database (written before PATCH checked it): a run of one while the
    other has a run queued is refused, naming it; runs are claimed per database, not per name."""
    client, service = app_client
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=tokens["operator"]).status_code == 201
    elsewhere = pg.create_database("twin_" + uuid.uuid4().hex[:8])
    assert client.post("/api/targets", json={"name": "twin", "dsn": elsewhere},
                       headers=tokens["operator"]).status_code == 201
    store = service.store
    prod_id, twin_id = service.target("prod")["id"], service.target("twin")["id"]
    store.set_target_identity(twin_id, store.target_identity(prod_id))  # as the old PATCH left it
    store.set_target_dsn(twin_id, "twin", store.target_credentials(prod_id), None)
    store.add_run("queued-on-prod", prod_id, "indexes", "extend", {"plan": {"kind": "indexes"}}, state="queued")
    r = client.post("/api/runs", json={"target": "twin", **INDEX_RUN},
                    headers=tokens["operator"])
    assert r.status_code == 409, r.text
    assert "queued-on-prod" in r.text and "as target 'prod'" in r.text, r.text
    assert not store.runs(twin_id)
