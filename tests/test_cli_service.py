"""The service commands of the CLI against a real target: register (credentials never shown, encrypted at rest),
run, inspect, approve, apply to the database, roll back; tokens; schedules; clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from advisor.playground import create_shop
from tests.conftest import scalar

SECRET = "cli-Pa55-never-printed"


def cli(tmp_path, *args, env=None):
    env = {**os.environ, "ADVISOR_STORE": str(tmp_path / "advisor.duckdb"),
           "ADVISOR_KEY_FILE": str(tmp_path / "secret.key"), **(env or {})}
    res = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=env,
                         timeout=300)
    assert SECRET not in res.stdout + res.stderr
    return res


def ok(res) -> dict:
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "cli_shop", password=SECRET)


def index_names(dsn: str) -> set[str]:
    plain = dsn.replace(f" password={SECRET}", "")
    return set(scalar(plain, "SELECT coalesce(array_agg(indexname::text), '{}') FROM pg_indexes "
                             "WHERE tablename = 'orders'"))


def test_target_run_approve_apply_rollback(tmp_path, shop):
    target = ok(cli(tmp_path, "targets", "add", "--name", "shop", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    assert target["registered"] and "password" not in target["dsn"]
    assert SECRET.encode() not in (tmp_path / "advisor.duckdb").read_bytes()
    assert [t["name"] for t in ok(cli(tmp_path, "targets", "list", "--json"))["targets"]] == ["shop"]

    done = ok(cli(tmp_path, "runs", "start", "--target", "shop", "--kind", "indexes", "--optimizer", "extend",
                  "--budget-mb", "50", "--rounds", "3", "--json"))
    assert done["run"]["state"] == "done" and done["recommendation"]["state"] == "validated"
    rid = done["recommendation"]["id"]
    shown = ok(cli(tmp_path, "runs", "show", done["run"]["id"], "--json"))
    assert shown["run"]["progress"]["log"]
    listed = ok(cli(tmp_path, "recommendations", "list", "--state", "validated", "--kind", "indexes", "--json"))
    assert [r["id"] for r in listed["recommendations"]] == [rid]
    human = cli(tmp_path, "recommendations", "show", rid)
    assert human.returncode == 0 and "CREATE INDEX CONCURRENTLY" in human.stdout and "per statement" in human.stdout

    res = cli(tmp_path, "recommendations", "apply", rid)
    assert res.returncode == 1 and "only an approved recommendation can be applied" in res.stderr
    before = index_names(shop)
    assert ok(cli(tmp_path, "recommendations", "approve", rid, "--note", "ok", "--json"))["recommendation"]["state"] == "approved"
    assert ok(cli(tmp_path, "recommendations", "apply", rid, "--json"))["recommendation"]["state"] == "applied"
    assert index_names(shop) - before == {"orders_customer_advisor_idx"}
    assert ok(cli(tmp_path, "recommendations", "rollback", rid, "--json"))["recommendation"]["state"] == "rolled_back"
    assert index_names(shop) == before
    history = ok(cli(tmp_path, "recommendations", "show", rid, "--json"))["history"]
    assert [(h["action"], h["actor"]) for h in history][-3:] == [("approved", "admin"), ("applied", "admin"),
                                                                 ("rolled_back", "admin")]

    bad = cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "nightly", "--kind", "indexes",
              "--budget-mb", "10")
    assert bad.returncode == 1 and "invalid cron schedule" in bad.stderr
    sched = ok(cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "0 2 * * *", "--kind", "indexes",
                   "--budget-mb", "10", "--json"))
    assert [s["id"] for s in ok(cli(tmp_path, "schedule", "list", "--json"))["schedules"]] == [sched["id"]]
    assert cli(tmp_path, "schedule", "remove", sched["id"]).returncode == 0
    assert ok(cli(tmp_path, "schedule", "list", "--json"))["schedules"] == []


def test_tokens_and_errors(tmp_path, db):
    made = ok(cli(tmp_path, "tokens", "create", "--name", "ci", "--role", "viewer", "--json"))
    assert made["secret"].startswith("dba_") and made["role"] == "viewer"
    listing = cli(tmp_path, "tokens", "list", "--json")
    assert made["secret"] not in listing.stdout and ok(listing)["tokens"][0]["name"] == "ci"
    assert ok(cli(tmp_path, "tokens", "revoke", "ci", "--json"))["revoked_at"] is not None
    dup = cli(tmp_path, "tokens", "create", "--name", "ci", "--role", "operator")
    assert dup.returncode == 1 and "exists already" in dup.stderr

    # observed with a DSN on the command line, but never registered: runs need stored credentials
    assert cli(tmp_path, "observe", "--target", db, "--json").returncode == 0
    name = f"127.0.0.1:{db.split('port=')[1].split()[0]}/{db.split('dbname=')[1].split()[0]}"
    res = cli(tmp_path, "runs", "start", "--target", name, "--kind", "knobs")
    assert res.returncode == 1 and "register it" in res.stderr
    res = cli(tmp_path, "runs", "start", "--target", "nope", "--kind", "knobs")
    assert res.returncode == 1 and "no target 'nope'" in res.stderr
    res = cli(tmp_path, "serve", "--host", "0.0.0.0")
    assert res.returncode == 2 and "loopback" in res.stderr
    assert cli(tmp_path, "serve", "--help").returncode == 0
