"""Issue 42 item 9 over REST: knobs that change correctness (the engine's unsafe list in its knob profile) are
searched only when named with ``allow_unsafe``, refused before any work otherwise, and a schedule that would
apply one (or a durability knob) by itself is refused naming it."""

from __future__ import annotations

import uuid

from tests.connectors.mariadb.conftest import mrun
from tests.web.conftest import PASSWORD

ASKED = ["session_replication_role", "zero_damaged_pages", "ignore_checksum_failure",
         "default_transaction_read_only", "autovacuum", "track_counts"]


def test_a_run_including_an_unsafe_knob_without_the_flag_is_refused_at_once(app_client, tokens, prod):
    client, service = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op).status_code == 201
    for name in ASKED:
        r = client.post("/api/runs", json={"target": "prod", "kind": "knobs", "include": [name]}, headers=op)
        assert r.status_code == 400 and r.json()["message"].startswith(f"{name} "), r.text
        assert "allow_unsafe" in r.json()["message"]
    assert service.store.runs() == []  # nothing queued, no trial ran
    # a schedule's knob run is checked the same way when the schedule is made
    r = client.post("/api/schedules", json={"target": "prod", "cron": "0 2 * * *",
                                            "runs": [{"kind": "knobs", "include": ["track_counts"]}]}, headers=op)
    assert r.status_code == 400 and "track_counts" in r.json()["message"], r.text


def test_a_schedule_that_would_auto_apply_an_unsafe_or_durability_knob_is_refused(app_client, tokens, prod):
    client, service = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op).status_code == 201
    nightly = {"target": "prod", "cron": "0 2 * * *", "runs": [{"kind": "knobs"}], "auto_apply": "reload_knobs"}
    r = client.post("/api/schedules", json={**nightly, "auto_apply_knobs": ["work_mem", *ASKED, "fsync"]},
                    headers=op)
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    named = message.split(": ", 1)[1].split(";")[0].split(", ")
    assert named == [*ASKED, "fsync"] and "work_mem" not in named, message
    assert service.schedules() == []
    ok = client.post("/api/schedules", json={**nightly, "auto_apply_knobs": ["work_mem"]}, headers=op)
    assert ok.status_code == 201, ok.text


def test_on_mariadb_too_the_engines_own_list_is_refused(app_client, tokens, maria):
    """MariaDB's list is its own (its profile's): foreign_key_checks, unique_checks, read_only, sql_mode and the
    durability variables never go into a schedule's auto-apply, and a run naming one needs allow_unsafe."""
    name = "unsafe_" + uuid.uuid4().hex[:8]
    maria.create_database(name)
    maria.add_login("unsafe_knobs", PASSWORD)
    dsn = f"mysql://unsafe_knobs:{PASSWORD}@127.0.0.1:{maria.port}/{name}"
    mrun(dsn, "CREATE TABLE items (id INT PRIMARY KEY, price INT)", "SELECT price FROM items WHERE id = 1")
    client, service = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "m", "dsn": dsn}, headers=op).status_code == 201
    risky = ["foreign_key_checks", "unique_checks", "read_only", "sql_mode", "innodb_flush_log_at_trx_commit"]
    nightly = {"target": "m", "cron": "0 2 * * *", "runs": [{"kind": "knobs"}], "auto_apply": "reload_knobs"}
    r = client.post("/api/schedules", json={**nightly, "auto_apply_knobs": ["sort_buffer_size", *risky]}, headers=op)
    assert r.status_code == 400 and r.json()["message"].split(": ", 1)[1].split(";")[0].split(", ") == risky, r.text
    r = client.post("/api/runs", json={"target": "m", "kind": "knobs", "include": ["foreign_key_checks"]}, headers=op)
    assert r.status_code == 400 and r.json()["message"].startswith("foreign_key_checks "), r.text
    assert service.store.runs() == []
