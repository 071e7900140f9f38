"""One database is one target over REST too (issue 29): registering a database that a target is registered for
already, under another name and another DSN text, answers 409 naming that target, and no second card appears."""

from __future__ import annotations

from tests.web.conftest import PASSWORD


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
