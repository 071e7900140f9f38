"""Servers left behind by a killed process (issue 13, defects #4 and #5): a killed postmaster is brought back by
``recover`` although its busy backends linger and nobody reaps it, and sandboxes whose owner was killed are
stopped and removed by ``reap_orphans`` while live ones are left alone."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

from connectors import local
from connectors.factory import reap_orphans
from connectors.postgres.sandbox import PostgresSandbox

ROOT = Path(__file__).resolve().parents[2]
ORPHAN = """
import os, sys, time
import psycopg
from connectors.postgres.sandbox import PostgresSandbox
sb = PostgresSandbox("orphan", base_dir=sys.argv[1]).start()
conn = psycopg.connect(sb.dsn())  # a backend too
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(f"{sb.root}\\n{sb.postmaster_pid()}\\n")
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
time.sleep(3600)
"""


def poll(condition, timeout_s: float = 120.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s:.0f}s")
        time.sleep(0.02)


@pytest.fixture
def base():
    """A directory for sandboxes that the postgres user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="reap-test-"))
    path.chmod(0o755)
    yield path
    reap_orphans(path)
    shutil.rmtree(path, ignore_errors=True)


def start_orphan(base: Path, tmp_path: Path) -> tuple[Path, int]:
    """A sandbox started by another process, which is then killed with SIGKILL (no exit hook runs)."""
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN, str(base), str(ready)], cwd=ROOT)
    try:
        poll(lambda: ready.exists() or proc.poll() is not None, what="the orphan's sandbox")
        assert proc.poll() is None, "the process that starts the orphan failed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    root, pid = ready.read_text().split()
    return Path(root), int(pid)


def test_reap_orphans_stops_and_removes_the_sandbox_of_a_killed_owner_only(base, tmp_path):
    root, postmaster = start_orphan(base, tmp_path)
    assert local.pid_alive(postmaster) and local.server_processes(root / "data")
    assert json.loads((root / local.OWNER_FILE).read_text())["engine"] == "postgres"
    unowned = Path(tempfile.mkdtemp(prefix="advisor-unowned-", dir=base))  # no owner record: never touched
    with PostgresSandbox("live", base_dir=str(base)) as live:
        assert reap_orphans(base) == [str(root)]
        assert not local.pid_alive(postmaster) and not root.exists()
        assert local.server_processes(root / "data") == []
        assert live.is_running() and live.root.exists() and unowned.exists()
        with psycopg.connect(live.dsn()) as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
        assert reap_orphans(base) == []


REAP_FRESH = """
import sys
from connectors.factory import reap_orphans
assert "connectors.postgres.sandbox" not in sys.modules, "imported before an orphan was found"
print(" ".join(reap_orphans(sys.argv[1])))
"""


def test_a_process_that_never_imported_an_engine_reaps_its_orphans(base, tmp_path):
    """The factory imports an engine's modules (and driver) on first use, so that a command reading the store
    starts fast; every command reaps orphans first, and the stopper of an orphan's engine is then imported."""
    root, postmaster = start_orphan(base, tmp_path)
    out = subprocess.run([sys.executable, "-c", REAP_FRESH, str(base)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(root)]
    assert not local.pid_alive(postmaster) and not root.exists()


def test_an_owner_record_of_a_reused_pid_is_an_orphan_and_a_kept_sandbox_has_none(base):
    me = os.getpid()
    dirs = {}
    for name, record in {"reused": {"pid": me, "start_time": local.start_time(me) - 1, "engine": "postgres"},
                         "mine": {"pid": me, "start_time": local.start_time(me), "engine": "postgres"},
                         "unknown": {"pid": me, "start_time": local.start_time(me) - 1, "engine": "nosuch"}}.items():
        dirs[name] = Path(tempfile.mkdtemp(prefix=f"advisor-{name}-", dir=base))
        (dirs[name] / local.OWNER_FILE).write_text(json.dumps(record))
    assert reap_orphans(base) == [str(dirs["reused"])]  # same PID, another start time: another process
    assert dirs["mine"].exists() and dirs["unknown"].exists()

    kept = PostgresSandbox("kept", base_dir=str(base), keep=True).start()
    assert local.read_owner(kept.root)["pid"] == me
    kept.stop()
    assert kept.root.exists() and local.read_owner(kept.root) is None  # kept for a post-mortem, not an orphan


def test_recover_after_the_postmaster_is_killed_ends_its_lingering_backends():
    with PostgresSandbox("killed", settings={"fsync": "off"}) as sb:
        busy = psycopg.connect(sb.dsn(), autocommit=True)
        errors: list[Exception] = []

        def spin():  # a backend busy in a loop does not notice that its postmaster died
            try:
                busy.execute("DO $$ BEGIN LOOP END LOOP; END $$")
            except psycopg.Error as e:
                errors.append(e)

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()
        with psycopg.connect(sb.dsn(), autocommit=True) as watch:
            poll(lambda: watch.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                                       "AND query LIKE 'DO %'").fetchone()[0], what="the busy backend")
        old = local.server_processes(sb.data)
        postmaster = sb.postmaster_pid()
        os.kill(postmaster, signal.SIGKILL)
        poll(lambda: not local.pid_alive(postmaster), what="the postmaster's death")
        assert not sb.is_running()

        sb.recover({"work_mem": "8MB"})  # before the fix: lock file "postmaster.pid" already exists
        sb.wait_ready()
        assert sb.is_running() and sb.postmaster_pid() != postmaster
        assert not any(local.pid_alive(pid) for pid in old)
        with psycopg.connect(sb.dsn()) as conn:
            assert conn.execute("SHOW work_mem").fetchone()[0] == "8MB"
        spinner.join(timeout=60)
        assert errors and not spinner.is_alive()
        busy.close()


def test_restart_of_a_server_whose_postmaster_was_killed_starts_it():
    with PostgresSandbox("restart-killed", settings={"fsync": "off"}) as sb:
        postmaster = sb.postmaster_pid()
        os.kill(postmaster, signal.SIGKILL)
        poll(lambda: not local.pid_alive(postmaster), what="the postmaster's death")
        sb.restart()  # before the fix: pg_ctl restart waits for the killed (unreaped) postmaster to stop
        assert sb.is_running() and sb.postmaster_pid() != postmaster
        with psycopg.connect(sb.dsn()) as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
