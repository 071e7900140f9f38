"""What the lists tell a DBA at 80 columns: a schedule's target by its name, its next firing in its own time zone
(named, UTC beside it), and only the options of its kind; a run started with `advisor tune`, by its target's name
and who started it, with its log recorded as a server-started run's is (its page shows it)."""

from __future__ import annotations

import getpass
import html
import json
import os
import socket
import subprocess
import sys
import uuid

import pytest

from advisor.bench.playground import create_shop
from advisor.service.runs import COMMON, kinds


def cli(tmp_path, *args, env=None):
    environ = {k: v for k, v in os.environ.items() if k != "ADVISOR_TARGET_DSN"}
    environ.update({"ADVISOR_STORE": str(tmp_path / "advisor.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "k.key"),
                    "COLUMNS": "80", **(env or {})})
    res = subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=environ,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "lists_" + uuid.uuid4().hex[:8])


def test_schedule_list_names_the_target_and_the_zone_of_its_next_firing(tmp_path, shop):
    cli(tmp_path, "targets", "add", "--name", "shop", env={"ADVISOR_TARGET_DSN": shop})
    added = cli(tmp_path, "schedule", "add", "--target", "shop", "--cron", "0 2 * * *", "--kind", "all",
                "--timezone", "Europe/Berlin")
    assert " Europe/Berlin (" in added.stdout and "UTC)" in added.stdout, added.stdout
    (s,) = json.loads(cli(tmp_path, "schedule", "list", "--json").stdout)["schedules"]
    assert s["target_name"] == "shop" and s["next_fire_text"].startswith(s["next_fire_text"][:10] + " 02:00 Europe/")
    (plan,) = s["plan"]["runs"]
    assert set(plan) == {"kind", *COMMON, *kinds.get("all").options}  # no learned-index fields in a whole run's
    shown = cli(tmp_path, "schedule", "list").stdout
    assert all(len(line) <= 80 for line in shown.splitlines())
    assert f"schedule {s['id']}: shop, runs all" in shown and s["target_id"] not in shown
    assert f"  next  {s['next_fire_text']}\n" in shown and "  cron  0 2 * * * (Europe/Berlin)\n" in shown


def test_a_run_started_with_tune_records_its_log_and_who_started_it(tmp_path, shop, monkeypatch):
    cli(tmp_path, "targets", "add", "--name", "shop", env={"ADVISOR_TARGET_DSN": shop})
    tuned = cli(tmp_path, "tune", "knobs", "--target", "shop", "--optimizer", "rules", "--no-validate",
                "--memory-gb", "4", "--cores", "2")
    said = [line.strip() for line in tuned.stderr.splitlines() if line.strip()]
    (run,) = json.loads(cli(tmp_path, "runs", "list", "--json").stdout)["runs"]
    assert run["started_by"] == f"cli ({getpass.getuser()}@{socket.gethostname()})"
    assert run["target_name"] == "shop"
    log = json.loads(cli(tmp_path, "runs", "show", run["id"], "--json").stdout)["run"]["progress"]["log"]
    logged = [line.split("] ", 1)[1] for line in log]
    # what the command said, from its first line (before the run's row existed) to its last, in order
    assert logged and logged[0] in said[0] and logged[-1] in said[-1], (logged, said)
    assert [m for m in logged if any(m in s for s in said)] == logged
    listed = cli(tmp_path, "runs", "list").stdout
    assert all(len(line) <= 80 for line in listed.splitlines()), listed
    assert f"run {run['id']}: shop, knobs / rules, " in listed and run["target_id"] not in listed
    assert f" by {run['started_by']}\n" in listed  # whole, never cut to fit a column

    # the run's page shows that log, and the list of runs who started it
    from web.main import create_app
    from fastapi.testclient import TestClient
    from tests.web.logins import log_in

    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "k.key"))
    app = create_app(str(tmp_path / "advisor.duckdb"))
    with TestClient(app) as client:
        _, secret = app.state.service.create_token("viewer", "viewer")
        assert log_in(client, secret).status_code == 303
        page = client.get(f"/runs/{run['id']}").text
        assert "(nothing logged yet)" not in page and "(no log was recorded" not in page
        assert html.escape(logged[-1], quote=False) in page
        assert html.escape(run["started_by"], quote=False) in client.get("/runs").text

    # a run of a registered target started from the command line (the server's path) is the CLI user's too
    started = json.loads(cli(tmp_path, "runs", "start", "--target", "shop", "--kind", "knobs", "--optimizer",
                             "rules", "--no-validate", "--json").stdout)["run"]
    assert started["started_by"] == run["started_by"] and started["progress"]["log"]
