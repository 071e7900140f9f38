"""Token administration over REST for admin tokens (no server downtime to revoke one), and failed logins:
audited, and slowed down per client (and token prefix); valid tokens never are."""

from __future__ import annotations

from advisor.core.errors import Forbidden
from tests.web.logins import log_in


def test_admin_tokens_manage_tokens_over_rest(app_client, tokens):
    client, service = app_client
    _, admin_secret = service.create_token("admin-1", "admin")
    admin = {"Authorization": f"Bearer {admin_secret}"}
    for role in ("viewer", "operator"):
        assert client.get("/api/tokens", headers=tokens[role]).status_code == 403
        assert client.post("/api/tokens", json={"name": "x", "role": "viewer"}, headers=tokens[role]).status_code == 403

    r = client.post("/api/tokens", json={"name": "ci-bot", "role": "operator"}, headers=admin)
    assert r.status_code == 201, r.text
    created = r.json()
    bot = {"Authorization": f"Bearer {created['secret']}"}
    assert client.get("/api/runs", headers=bot).status_code == 200
    listed = client.get("/api/tokens", headers=admin).json()["items"]
    assert {t["name"] for t in listed} >= {"ci-bot", "admin-1", "operator-1"}
    assert not any("secret" in t for t in listed)

    # revoked while the server runs: refused at once
    r = client.delete("/api/tokens/ci-bot", headers=admin)
    assert r.status_code == 200 and r.json()["revoked_at"] is not None
    r = client.get("/api/runs", headers=bot)
    assert r.status_code == 401 and "revoked" in r.json()["message"]
    trail = [(a["action"], a["actor"]) for a in service.audit_log(created["id"])]
    assert ("create_token", "token:admin-1") in trail and ("revoke_token", "token:admin-1") in trail
    r = client.post("/api/tokens", json={"name": "ci-bot", "role": "operator"}, headers=admin)
    assert r.status_code == 409  # the name stays taken by the revoked token

    # an operator cannot mint itself an admin token through the service either
    who = service.authenticate(tokens["operator"]["Authorization"].split()[1])
    try:
        service.create_token("sneaky", "admin", who)
        raise AssertionError("an operator created a token")
    except Forbidden:
        pass


def test_failed_logins_are_audited_and_slowed(app_client, tokens):
    client, service = app_client
    for i in range(7):
        r = client.get("/api/runs", headers={"Authorization": f"Bearer dba_wrong{i}"})
        assert r.status_code == 401
    failed = [a for a in service.audit_log() if a["action"] == "login_failed"]
    assert len(failed) == 7 and failed[0]["actor"] == "client:testclient"
    assert failed[-1]["detail"]["wait_s"] > failed[0]["detail"]["wait_s"] == 0
    assert service.login_delay("testclient", "dba_wrong7") > 0 and service.login_delay("10.1.1.1", "dba_wrong7") == 0
    # the web form counts as well
    r = log_in(client, "dba_wrong-form")
    assert r.status_code == 401
    failed = [a for a in service.audit_log() if a["action"] == "login_failed"]
    assert len(failed) == 8 and failed[-1]["detail"]["wait_s"] > failed[-2]["detail"]["wait_s"]
    # a good token still gets in, and is not held
    assert service.login_delay("testclient", tokens["viewer"]["Authorization"].split()[1]) == 0
    assert client.get("/api/runs", headers=tokens["viewer"]).status_code == 200
