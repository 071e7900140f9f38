"""The service reaps sandboxes and shadows of killed advisor processes: when it is built (the start of the server
and of every CLI command) and on a timer while the server runs (issue 13, defect #4); and whoever reaps the shadow
of a killed CLI run marks that run interrupted, with the reason (issue 33, defect 6)."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from advisor.service.factory import build_service, recover_runs, start, stop
from advisor.storage.store import Store
from connectors import local
from tests.conftest import run
from tests.connectors.test_orphans import ROOT, base, poll, start_orphan  # noqa: F401 - base is a fixture


def test_building_the_service_reaps_the_sandbox_of_a_killed_process_and_says_so(base, tmp_path, monkeypatch):
    root, postmaster = start_orphan(base, tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # where sandboxes are made by default
    said: list[str] = []
    service = build_service(tmp_path / "s.duckdb", say=said.append)
    try:
        assert not root.exists() and not local.pid_alive(postmaster)
        assert any(str(root) in line and "killed" in line for line in said)
    finally:
        service.store.close()


def test_the_server_reaps_orphans_on_a_timer(base, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    service = build_service(tmp_path / "s.duckdb", background=True, scheduler=False)
    start(service, reap_interval_s=0.1)
    try:
        root, postmaster = start_orphan(base, tmp_path)  # killed while the server runs
        poll(lambda: not root.exists(), what="the orphan reaped by the timer")
        assert not local.pid_alive(postmaster)
    finally:
        stop(service)
    poll(lambda: not any(t.name == "advisor-reaper" and t.is_alive() for t in threading.enumerate()),
         what="the reaper's thread to end with the server")


# --- a CLI run killed with kill -9 (issue 33, defect 6) -----------------------------------------------------------


def _cli(tmp_path, base, store, *args, **popen):
    """``advisor ARGS`` in a subprocess whose temporary directory (where its shadows go) is ``base``."""
    env = {**os.environ, "ADVISOR_STORE": str(store), "ADVISOR_KEY_FILE": str(tmp_path / "k.key"),
           "TMPDIR": str(base), "PYTHONUNBUFFERED": "1"}
    env.pop("ADVISOR_TARGET_DSN", None)
    return subprocess.Popen([sys.executable, "-m", "advisor", *args], env=env, cwd=ROOT, **popen)


@pytest.fixture
def shop(db):
    """A database with a workload the CLI can tune."""
    run(db, "CREATE TABLE items (id int PRIMARY KEY, price int)",
        "INSERT INTO items SELECT i, i % 97 FROM generate_series(1, 20000) i", "ANALYZE items",
        "SELECT pg_stat_statements_reset()")
    for i in range(5):
        run(db, f"SELECT count(*), sum(price) FROM items WHERE price < {i * 10}")
    return db


def start_a_cli_run(tmp_path, base, store, target) -> tuple[subprocess.Popen, str, Path]:
    """``advisor tune knobs`` on ``target`` (a run far too long to end by itself), once its run is recorded and
    its shadow server runs: (the process, the run's id, the shadow's directory)."""
    log = tmp_path / "tune.log"
    with open(log, "w") as err:
        proc = _cli(tmp_path, base, store, "tune", "knobs", "--target", target, "--register", "reaped", "--optimizer", "random",
                    "--trials", "200", "--seeds", "0", "--repeats", "3", "--no-validate", "--memory-gb", "2",
                    "--cores", "2", stdout=subprocess.DEVNULL, stderr=err)

    def started():
        said = log.read_text()
        assert proc.poll() is None, f"the CLI ended before its shadow ran: {said}"
        m = re.search(r"tuning run (\w+):", said)
        shadows = [d for d in base.glob(local.PREFIX + "shadow-*")
                   if (local.read_owner(d) or {}).get("pid") == proc.pid and (d / "data" / "postmaster.pid").exists()]
        return m and "copying the target's database" in said and shadows and (m.group(1), shadows[0])

    try:
        run_id, root = poll(started, what="the CLI's run recorded and its shadow running")
    except BaseException:
        kill(proc)
        raise
    return proc, run_id, root


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL: no exit hook runs, so the shadow stays up and the run stays running."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def postmaster_of(root: Path) -> int:
    return int((root / "data" / "postmaster.pid").read_text().split()[0])


def test_the_next_cli_command_marks_a_killed_cli_run_interrupted_and_removes_its_shadow(base, tmp_path, shop):
    store = tmp_path / "s.duckdb"
    proc, run_id, root = start_a_cli_run(tmp_path, base, store, shop)
    postmaster = postmaster_of(root)
    kill(proc)
    with Store(store) as st:  # what the kill left: a running run of a dead process, its shadow still up
        assert st.run(run_id)["state"] == "running" and st.run(run_id)["owner"]["pid"] == proc.pid
    assert root.exists() and local.pid_alive(postmaster)

    listed = _cli(tmp_path, base, store, "runs", "list", "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True)
    out, err = listed.communicate(timeout=300)
    assert listed.returncode == 0, err
    (shown,) = json.loads(out)["runs"]
    assert shown["id"] == run_id and shown["state"] == "interrupted", shown
    assert f"pid {proc.pid}" in shown["error"] and "killed" in shown["error"] and "removed" in shown["error"]
    assert not root.exists() and not local.pid_alive(postmaster)
    with Store(store) as st:
        assert st.run(run_id)["state"] == "interrupted" and st.run(run_id)["error"] == shown["error"]


def test_the_servers_reaper_marks_a_killed_cli_run_of_a_shared_store_interrupted(base, tmp_path, monkeypatch, pg,
                                                                                  shop):
    """On a PostgreSQL store that a server and a CLI share, the server's reaper removes the killed CLI's shadow and
    marks its run interrupted; while the CLI lives, its run is left alone."""
    from tests.advisor.storage.test_store import pg_url

    url = pg_url(pg)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    service = build_service(url, background=True, scheduler=False)
    start(service, reap_interval_s=0.1)
    try:
        proc, run_id, root = start_a_cli_run(tmp_path, base, url, shop)
        try:
            assert recover_runs(service) == [] and service.run(run_id)["state"] == "running"  # its owner lives
            postmaster = postmaster_of(root)
        finally:
            kill(proc)
        done = poll(lambda: (r := service.run(run_id))["state"] == "interrupted" and not root.exists() and r,
                    what="the killed CLI's run marked interrupted and its shadow reaped by the server's timer")
        assert f"pid {proc.pid}" in done["error"] and "removed" in done["error"]
        assert not local.pid_alive(postmaster)
    finally:
        stop(service)


def test_a_resumed_run_is_running_again_and_owned_by_the_process_that_resumed_it(base, tmp_path, pg, shop):
    """A killed CLI run, marked interrupted by the next command, resumed with ``--resume``: it is ``running`` again
    and its owner is the new process, so a failure is recorded on it and the next reaper leaves it alone."""
    from tests.advisor.storage.test_store import pg_url

    url = pg_url(pg)
    proc, run_id, _ = start_a_cli_run(tmp_path, base, url, shop)
    kill(proc)
    listed = _cli(tmp_path, base, url, "runs", "list", "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True)
    listed.communicate(timeout=300)
    with Store(url) as st:
        assert st.run(run_id)["state"] == "interrupted"
        with open(tmp_path / "resume.log", "w") as err:
            again = _cli(tmp_path, base, url, "tune", "knobs", "--target", shop, "--register", "reaped", "--resume", run_id, "--optimizer",
                         "random", "--trials", "200", "--seeds", "0", "--repeats", "3", "--no-validate",
                         "--memory-gb", "2", "--cores", "2", stdout=subprocess.DEVNULL, stderr=err)
        try:
            resumed = poll(lambda: (r := st.run(run_id))["state"] == "running" and
                           (r["owner"] or {}).get("pid") == again.pid and r,
                           what=f"the resumed run running and owned by the resuming process; its log: "
                                f"{(tmp_path / 'resume.log').read_text()[-500:]}")
            assert resumed["owner"]["pid"] != proc.pid
        finally:
            kill(again)
    reaped = _cli(tmp_path, base, url, "runs", "list", "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True)
    reaped.communicate(timeout=300)  # the resumed process's shadow is removed too
