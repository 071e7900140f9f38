"""Production is changed only on the database a recommendation was validated for, and never while the store is
locked: a target's name is not re-registered, a DSN change is explicit and audited, apply and rollback check the
database's identity, give up on a production lock after the lock timeout, and keep the rest of the service
responsive while they wait (issue 13, defects 1 and 2)."""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest

from advisor.bench.playground import create_shop
from advisor.core.errors import Conflict
from tests.web.conftest import INDEX_RUN, PASSWORD
from tests.web.test_api import indexes_on, wait_run


def plain(dsn: str) -> str:
    """The DSN an application's own session uses: the production login's, password included."""
    return dsn


def wait_for_lock_wait(dsn: str, timeout_s: float = 60) -> None:
    """Until a session of the advisor waits on a lock in ``dsn``'s server (the apply is blocked)."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(plain(dsn), autocommit=True) as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                            "AND query ILIKE '%INDEX%'").fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError("the apply never waited on the lock")


def locked(dsn: str, table: str = "orders") -> psycopg.Connection:
    conn = psycopg.connect(plain(dsn))
    conn.execute(f"LOCK TABLE {table} IN SHARE UPDATE EXCLUSIVE MODE")
    return conn


@pytest.fixture
def validated(app_client, tokens, prod):
    client, _ = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op).status_code == 201
    run = wait_run(client, op, client.post("/api/runs", json={"target": "prod", **INDEX_RUN}, headers=op).json()["id"])
    assert run["state"] == "done" and run["result"]["state"] == "validated", run
    return run["result"]["recommendation"]


def test_a_target_never_moves_under_its_recommendations(app_client, tokens, pg, prod, validated, monkeypatch):
    client, service = app_client
    op, viewer = tokens["operator"], tokens["viewer"]
    other = create_shop(pg, "other_" + uuid.uuid4().hex[:8], password=PASSWORD)
    before = client.get("/api/targets/prod", headers=viewer).json()
    assert service.recommendation(validated).note.startswith("measured gain")  # the verdict stays on it

    # re-registering the name is a conflict, and the target still points where it did
    r = client.post("/api/targets", json={"name": "prod", "dsn": other}, headers=op)
    assert r.status_code == 409 and "registered already" in r.json()["message"]
    assert client.get("/api/targets/prod", headers=viewer).json()["dsn"] == before["dsn"]

    # a DSN change is explicit; to another database only when said so, and audited
    r = client.patch("/api/targets/prod", json={"dsn": other}, headers=op)
    assert r.status_code == 409 and "other_database" in r.json()["message"]
    r = client.patch("/api/targets/prod", json={"dsn": other, "other_database": True}, headers=op)
    assert r.status_code == 200 and r.json()["dsn"] != before["dsn"]
    updates = [a for a in client.get(f"/api/audit?subject={before['id']}", headers=viewer).json()["items"]
               if a["action"] == "update_target"]
    assert len(updates) == 1 and updates[0]["detail"]["identity_to"] != updates[0]["detail"]["identity_from"]

    # the approved recommendation does not follow the target to the other database
    assert client.post(f"/api/recommendations/{validated}/approve", headers=op).status_code == 200
    r = client.post(f"/api/recommendations/{validated}/apply", headers=op)
    assert r.status_code == 409 and "was validated for" in r.json()["message"]
    assert not any("advisor" in ix for ix in indexes_on(other, "orders") | indexes_on(prod, "orders"))
    assert service.recommendation(validated).state == "approved"
    r = client.patch("/api/targets/prod", json={"dsn": prod, "other_database": True}, headers=op)
    assert r.status_code == 200

    # a production lock: with a short lock timeout the apply gives up, leaves no (invalid) index and stays approved
    monkeypatch.setenv("ADVISOR_PRODUCTION_LOCK_TIMEOUT_S", "0.5")
    holder = locked(prod)
    r = client.post(f"/api/recommendations/{validated}/apply", headers=op)
    assert r.status_code == 409 and "gave up after waiting 0.5s for a lock" in r.json()["message"]
    assert not any("advisor" in ix for ix in indexes_on(prod, "orders"))
    assert service.recommendation(validated).state == "approved"

    # with a long one it waits for the lock, while the store stays free: the rest of the service answers, and
    # the recommendation cannot be applied twice or rejected meanwhile
    monkeypatch.setenv("ADVISOR_PRODUCTION_LOCK_TIMEOUT_S", "120")
    outcome: dict = {}
    applier = threading.Thread(target=lambda: outcome.update(rec=service.apply(validated)))
    applier.start()
    try:
        wait_for_lock_wait(prod)
        r = client.post(f"/api/recommendations/{validated}/apply", headers=op)
        assert r.status_code == 409 and "being changed in production" in r.json()["message"]
        r = client.post(f"/api/recommendations/{validated}/reject", headers=op)
        assert r.status_code == 409
        assert client.get("/api/recommendations", headers=viewer).status_code == 200
        assert client.get("/api/runs", headers=viewer).status_code == 200
        assert applier.is_alive()  # all of the above answered while the apply still waited
    finally:
        holder.rollback()
        holder.close()
        applier.join(120)
    assert outcome["rec"].state == "applied" and outcome["rec"].applied["identity"]["database"] in prod

    # rollback: the lock timeout holds too, and then it goes through
    monkeypatch.setenv("ADVISOR_PRODUCTION_LOCK_TIMEOUT_S", "0.5")
    holder = locked(prod)
    try:
        r = client.post(f"/api/recommendations/{validated}/rollback", headers=op)
        assert r.status_code == 409 and "gave up" in r.json()["message"]
    finally:
        holder.rollback()
        holder.close()
    assert service.recommendation(validated).state == "applied"
    r = client.post(f"/api/recommendations/{validated}/rollback", headers=op)
    assert r.status_code == 200 and r.json()["state"] == "rolled_back"
    assert not any("advisor" in ix for ix in indexes_on(prod, "orders"))
    trail = [a["action"] for a in client.get(f"/api/audit?subject={validated}", headers=viewer).json()["items"]]
    assert trail.count("apply_refused") == 1 and trail.count("apply_failed") == 1 and "applied" in trail


def test_claims_keep_a_second_changer_out_and_expire_with_their_process(tmp_path):
    from advisor.core.domain import Recommendation
    from advisor.service.auth import ADMIN
    from advisor.service.production import production_claim
    from advisor.storage.store import Store

    with Store(tmp_path / "s.duckdb") as store:
        rec = Recommendation("r1", "t1", "indexes", "extend", (), (), (), False, "approved", time.time())
        store.add_recommendation(rec)
        with production_claim(store, rec, "approved", ADMIN, "apply", ttl_s=3600):
            with pytest.raises(Conflict, match="being changed in production"):
                with production_claim(store, rec, "approved", ADMIN, "apply", ttl_s=3600):
                    pass
            with pytest.raises(Conflict, match="being changed in production"):
                store.transition("r1", "rejected", "someone")
        assert store.current_claim("r1") == (None, None)  # released

        # a claim left by a process that is gone is taken over (and the takeover audited)
        import json
        import socket
        import subprocess
        import sys

        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()
        stale = json.dumps({"id": "x", "op": "apply", "by": "token:gone", "pid": int(dead),
                            "host": socket.gethostname(), "started": 1})
        assert store.claim("r1", "approved", stale)
        with production_claim(store, rec, "approved", ADMIN, "apply", ttl_s=3600):
            pass
        assert any(a["action"] == "claim_taken_over" for a in store.audit_log("r1"))


def test_observing_a_name_on_another_database(tmp_path, pg, monkeypatch):
    """A DSN given by hand may move its name to another database (audited); a registered target may not."""
    from advisor.core.errors import OtherDatabase
    from advisor.service.service import AdvisorService
    from advisor.storage.store import Store

    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    first, second = (pg.create_database("idt_" + uuid.uuid4().hex[:8]) for _ in range(2))
    with Store(tmp_path / "s.duckdb") as store:
        service = AdvisorService(store)
        obs = service.observe(first, "by-hand")
        assert store.target_identity(obs.target_id)["database"] in first
        service.observe(second, "by-hand")
        moved = [a for a in store.audit_log(obs.target_id) if a["action"] == "target_identity_changed"]
        assert len(moved) == 1 and moved[0]["detail"]["to"]["database"] in second

        target = service.add_target("registered", first)
        with pytest.raises(OtherDatabase, match="was registered for"):
            service.observe(second, "registered")
        assert store.count_snapshots(target["id"]) == 1  # the refused observation stored nothing
