"""The CLI while ``advisor serve`` holds the DuckDB store (issue 29, issue 44 item 1): DuckDB lets no other process
open a file that one holds read-write (not even read-only), so the CLI uses the store through the server (a local
socket of the same user, ``advisor.storage.remote``): reading commands show what the server holds, and changing
ones (observe, tune, reject, a token) work as they would alone, the server seeing each change at once; a second
server serves the same store through the first; DuckDB's own lock message never shows."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

import pytest

from advisor.bench.playground import create_shop
from connectors.postgres.sandbox import free_port
from tests.advisor.cli.test_cli_service import cli, environ, ok, serving
from tests.advisor.cli.test_cli_target_identity import other_text


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "serving_shop")


@pytest.fixture
def served(tmp_path, shop):
    """A store with the target ``shop`` registered by an index run (its recommendation stored), then held by
    ``advisor serve``: (its port, its pid, the recommendations listed before it started)."""
    # an index run chosen by what-if costs alone (no validation): a recommendation whatever the machine's noise
    ok(cli(tmp_path, "tune", "indexes", "--target", shop, "--register", "shop", "--optimizer", "extend",
           "--budget-mb", "50", "--no-validate", "--json"))
    before = ok(cli(tmp_path, "recommendations", "list", "--json"))["recommendations"]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(port), "--no-scheduler"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ(tmp_path))
    try:
        serving(proc, port)
        yield port, proc.pid, before
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def test_reads_and_changes_go_through_the_server(tmp_path, shop, served):
    port, pid, recommended = served
    (target,) = ok(cli(tmp_path, "targets", "list", "--json"))["targets"]
    assert target["name"] == "shop" and target["registered"] and target["last_observed_at"]
    table = cli(tmp_path, "targets", "list")
    assert table.returncode == 0 and "shop" in table.stdout
    (run,) = ok(cli(tmp_path, "runs", "list", "--json"))["runs"]  # a CLI index run keeps its run row (resumable)
    assert run["kind"] == "indexes" and run["state"] == "done" and run["target_id"] == target["id"]
    # recommendations travel through the server whole: the same document as read from the file before
    assert recommended and ok(cli(tmp_path, "recommendations", "list", "--json"))["recommendations"] == recommended
    shown = ok(cli(tmp_path, "recommendations", "show", recommended[0]["id"], "--json"))
    assert shown["recommendation"] == recommended[0] and shown["history"]

    # observe stores its snapshot through the server, by DSN or by the registered name
    observed = ok(cli(tmp_path, "observe", "--target", other_text(shop), "--json"))
    assert observed["target_id"] == target["id"] and observed["snapshot_id"]
    by_name = ok(cli(tmp_path, "observe", "--target", "shop", "--json"))  # the quick start's way: its stored DSN
    assert by_name["target_id"] == target["id"] and by_name["snapshot_id"] not in (None, observed["snapshot_id"])

    # changes: a rejection, a tuning run, a token; the server sees each at once (its REST API, with the token)
    rejected = ok(cli(tmp_path, "recommendations", "reject", recommended[0]["id"], "--json"))["recommendation"]
    assert rejected["state"] == "rejected"
    tuned = cli(tmp_path, "tune", "knobs", "--target", "shop", "--optimizer", "rules", "--no-validate", "--json")
    assert tuned.returncode == 0, tuned.stderr
    secret = ok(cli(tmp_path, "tokens", "create", "--name", "x", "--role", "viewer", "--json"))["secret"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/runs", headers={"Authorization": f"Bearer {secret}"})
    with urllib.request.urlopen(request, timeout=30) as r:
        runs = json.loads(r.read())
    assert sorted(r["kind"] for r in runs["items"]) == ["indexes", "knobs"], runs
    assert "Conflicting lock" not in tuned.stderr and "IO Error" not in tuned.stderr

    # a second server serves the same store through the first
    other = free_port()
    second = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(other), "--no-scheduler"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ(tmp_path))
    try:
        serving(second, other)
        request = urllib.request.Request(f"http://127.0.0.1:{other}/api/runs",
                                         headers={"Authorization": f"Bearer {secret}"})
        with urllib.request.urlopen(request, timeout=30) as r:
            assert json.loads(r.read()) == runs
    finally:
        second.send_signal(signal.SIGINT)
        _out, err = second.communicate(timeout=60)
    assert "Traceback" not in err and "Conflicting lock" not in err, err
