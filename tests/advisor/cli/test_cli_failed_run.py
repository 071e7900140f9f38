"""A knob run in which every trial failed, the baseline included, is a failed run: its stored state is
``failed`` with the reason, the CLI exits non-zero with that reason (``tune knobs`` and ``runs start``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from advisor.storage.store import Store
from tests.conftest import run


def advisor(tmp_path, *args):
    env = {**os.environ, "ADVISOR_STORE": str(tmp_path / "s.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "k.key")}
    env.pop("ADVISOR_TARGET_DSN", None)
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture
def exhausted_db(db):
    """A workload of one statement that works once more on a copy of the database, then never again: it takes
    the next value of a sequence that has one value left. It passes the check that leaves out statements failing
    with the current settings, then fails in every trial, the baseline first."""
    run(db, "CREATE SEQUENCE s MAXVALUE 2",
        "CREATE FUNCTION next_ticket() RETURNS bigint LANGUAGE sql AS $$ SELECT nextval('s') $$",
        "SELECT pg_stat_statements_reset()", "SELECT next_ticket()")
    return db


def test_every_trial_failed_is_a_failed_run(exhausted_db, tmp_path):
    res = advisor(tmp_path, "tune", "knobs", "--target", exhausted_db, "--register", "tickets", "--optimizer", "random", "--trials", "3",
                  "--seeds", "0", "--repeats", "1", "--memory-gb", "4", "--cores", "2", "--json")
    assert res.returncode == 1 and res.stdout == "", res.stderr
    error = res.stderr.strip().splitlines()[-1]
    assert error.startswith("error: every trial failed") and "maximum value of sequence" in error, res.stderr
    assert "Traceback" not in res.stderr
    with Store(tmp_path / "s.duckdb") as st:
        (stored,) = st.runs()
        assert stored["state"] == "failed" and "maximum value of sequence" in stored["error"]
        assert [t["status"] for t in st.trials(stored["id"])] == ["failed"] * 3

    # the same through a run of a registered target (the path of the REST API, the pages and the schedules)
    # (registered as tickets by --register above: one database is one target)
    res = advisor(tmp_path, "runs", "start", "--target", "tickets", "--kind", "knobs", "--optimizer", "random",
                  "--trials", "2", "--seeds", "0", "--repeats", "1", "--json")
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    assert doc["run"]["state"] == "failed" and doc["run"]["error"].startswith("every trial failed")
    assert "maximum value of sequence" in res.stderr.strip().splitlines()[-1]
