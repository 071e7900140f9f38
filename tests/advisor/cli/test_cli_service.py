"""The service commands of the CLI against a real target: register (credentials never shown, encrypted at rest),
run, inspect, approve, apply to the database, roll back; tokens; schedules; clear errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from psycopg.conninfo import conninfo_to_dict

from advisor.bench.playground import create_shop
from connectors.postgres.sandbox import free_port
from tests.conftest import scalar

SECRET = "cli-Pa55-never-printed"


def environ(tmp_path, env=None) -> dict:
    base = {k: v for k, v in os.environ.items() if k != "ADVISOR_TARGET_DSN"}
    return {**base, "ADVISOR_STORE": str(tmp_path / "advisor.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "secret.key"),
            **(env or {})}


def cli(tmp_path, *args, env=None, stdin=None):
    res = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True,
                         env=environ(tmp_path, env), timeout=300, input=stdin if stdin is not None else "")
    assert SECRET not in res.stdout + res.stderr
    return res


def ok(res) -> dict:
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "cli_shop", password=SECRET)


def index_names(dsn: str) -> set[str]:
    return set(scalar(dsn, "SELECT coalesce(array_agg(indexname::text), '{}') FROM pg_indexes "
                             "WHERE tablename = 'orders'"))


def test_target_run_approve_apply_rollback(tmp_path, shop):
    target = ok(cli(tmp_path, "targets", "add", "--name", "shop", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    assert target["registered"] and "password" not in target["dsn"]
    assert SECRET.encode() not in (tmp_path / "advisor.duckdb").read_bytes()
    assert [t["name"] for t in ok(cli(tmp_path, "targets", "list", "--json"))["targets"]] == ["shop"]
    again = cli(tmp_path, "targets", "add", "--name", "shop", env={"ADVISOR_TARGET_DSN": shop})
    assert again.returncode == 1 and "registered already" in again.stderr and SECRET not in again.stderr
    updated = ok(cli(tmp_path, "targets", "update", "shop", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    assert updated["id"] == target["id"]  # the same database under a (re-typed) DSN: allowed, audited
    observed = ok(cli(tmp_path, "targets", "observe", "shop", "--json"))
    assert observed["target_id"] == target["id"] and observed["workload"]["statements"]
    assert all(s["mean_ms"] > 0 and s["sql"] for s in observed["workload"]["statements"])  # as observe gives them

    done = ok(cli(tmp_path, "runs", "start", "--target", "shop", "--kind", "indexes", "--optimizer", "extend",
                  "--budget-mb", "50", "--rounds", "3", "--json"))
    assert done["run"]["state"] == "done" and done["recommendation"]["state"] == "validated"
    rid = done["recommendation"]["id"]
    shown = ok(cli(tmp_path, "runs", "show", done["run"]["id"], "--json"))
    assert shown["run"]["progress"]["log"]
    human = cli(tmp_path, "runs", "show", done["run"]["id"])
    assert human.returncode == 0 and "finished: validated" in human.stdout  # what the run came to, not "done"
    assert [r["id"] for r in ok(cli(tmp_path, "runs", "list", "--target", "shop", "--json"))["runs"]] == \
        [done["run"]["id"]]
    listed = ok(cli(tmp_path, "recommendations", "list", "--state", "validated", "--kind", "indexes", "--json"))
    assert [r["id"] for r in listed["recommendations"]] == [rid]
    head = listed["recommendations"][0]["summary"]  # the headline numbers, as the REST API's
    assert head["verdict"] == "validated"
    assert head["gain"] == pytest.approx(1 - head["candidate_ms"] / head["baseline_ms"])
    human = cli(tmp_path, "recommendations", "show", rid)
    assert human.returncode == 0 and "CREATE INDEX CONCURRENTLY" in human.stdout and "per statement" in human.stdout
    assert "validated: measured" in human.stdout
    assert "of workload time (calls x median)" in " ".join(human.stdout.split())

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
    # a rollback is not final: `apply` re-applies it in one step (approved again: its evidence is fresh)
    assert ok(cli(tmp_path, "recommendations", "apply", rid, "--json"))["recommendation"]["state"] == "applied"
    assert index_names(shop) - before == {"orders_customer_advisor_idx"}
    words = cli(tmp_path, "recommendations", "rollback", rid)  # states read as words for people
    assert words.returncode == 0 and f"recommendation {rid} is now rolled back" in words.stdout, words.stderr
    assert index_names(shop) == before
    history = ok(cli(tmp_path, "recommendations", "show", rid, "--json"))["history"]
    assert [h["action"] for h in history][-4:] == ["rolled_back", "approved", "applied", "rolled_back"]
    for args in (("show", rid), ("list",)):  # the state, the history's steps, the watch: words, not identifiers
        human = cli(tmp_path, "recommendations", *args, env={"COLUMNS": "200"})
        assert human.returncode == 0 and "rolled back" in human.stdout and "rolled_back" not in human.stdout, \
            human.stdout

    bad = cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "nightly", "--kind", "indexes",
              "--budget-mb", "10")
    assert bad.returncode == 1 and "invalid cron schedule" in bad.stderr
    zone = cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "0 2 * * *", "--timezone", "Europe/Berlinn",
               "--kind", "indexes", "--budget-mb", "10")  # the zone is named, not the cron fields
    assert zone.returncode == 1 and "unknown time zone 'Europe/Berlinn'; did you mean 'Europe/Berlin'?" in zone.stderr
    assert "cron" not in zone.stderr
    sched = ok(cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "0 2 * * *", "--kind", "knobs,indexes",
                   "--budget-mb", "10", "--json"))
    assert [p["kind"] for p in sched["plan"]["runs"]] == ["knobs", "indexes"] and sched["next_fire_at"]
    assert [s["id"] for s in ok(cli(tmp_path, "schedule", "list", "--target", "shop", "--json"))["schedules"]] == \
        [sched["id"]]
    assert cli(tmp_path, "schedule", "remove", sched["id"]).returncode == 0
    assert ok(cli(tmp_path, "schedule", "list", "--json"))["schedules"] == []


def test_tokens_and_errors(tmp_path, db):
    made = cli(tmp_path, "tokens", "create", "--name", "ci", "--role", "viewer", "--json")
    assert "shown only now" in made.stderr
    made = ok(made)
    assert made["secret"].startswith("dba_") and made["role"] == "viewer"
    listing = cli(tmp_path, "tokens", "list", "--json")
    assert made["secret"] not in listing.stdout and ok(listing)["tokens"][0]["name"] == "ci"
    assert ok(cli(tmp_path, "tokens", "revoke", "ci", "--json"))["revoked_at"] is not None
    dup = cli(tmp_path, "tokens", "create", "--name", "ci", "--role", "operator")
    assert dup.returncode == 1 and "exists already" in dup.stderr

    # the DSN piped on stdin (no password on the command line), then removed
    piped = cli(tmp_path, "targets", "add", "--name", "piped", "--json", stdin=f"{db}\n")
    assert ok(piped)["name"] == "piped" and "observing" in piped.stderr  # progress on stderr, one document on stdout
    password = conninfo_to_dict(db)["password"]  # the sandbox's own, which its DSN carries
    assert password.encode() not in (tmp_path / "advisor.duckdb").read_bytes()
    assert password not in piped.stdout + piped.stderr
    assert ok(cli(tmp_path, "targets", "remove", "piped", "--json")) == {"removed": "piped"}
    assert ok(cli(tmp_path, "targets", "list", "--json"))["targets"] == []
    res = cli(tmp_path, "targets", "add", "--name", "x")
    assert res.returncode == 2 and "no DSN" in res.stderr  # a usage error (tests/advisor/cli/test_cli_dsn.py: every source)

    # observed with a DSN on the command line, but never registered: nothing is stored (issue 29: no target
    # card for it), so there is no target to start a run of
    assert cli(tmp_path, "observe", "--target", db, "--json").returncode == 0
    assert ok(cli(tmp_path, "targets", "list", "--json"))["targets"] == []
    name = f"127.0.0.1:{db.split('port=')[1].split()[0]}/{db.split('dbname=')[1].split()[0]}"
    res = cli(tmp_path, "runs", "start", "--target", name, "--kind", "knobs")
    assert res.returncode == 1 and f"no target {name!r}" in res.stderr
    res = cli(tmp_path, "runs", "start", "--target", "nope", "--kind", "knobs")
    assert res.returncode == 1 and "no target 'nope'" in res.stderr
    res = cli(tmp_path, "serve", "--host", "0.0.0.0")
    assert res.returncode == 2 and "loopback" in res.stderr
    assert cli(tmp_path, "serve", "--help").returncode == 0


def serving(proc, port: int) -> dict:
    """Wait (at most 60 s) until the ``advisor serve`` process ``proc`` answers on ``port``; its health document."""
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.communicate()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            assert time.monotonic() < deadline, "advisor serve did not answer within 60 s"
            time.sleep(0.5)


def test_serve_starts_and_stops(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(port), "--no-scheduler", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ(tmp_path))
    try:
        assert serving(proc, port)["scheduler_running"] is False
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"url": f"http://127.0.0.1:{port}/", "docs": f"http://127.0.0.1:{port}/api/docs",
                               "scheduler": False, "has_tokens": False}
    assert "advisor tokens create --name NAME --role operator" in err
