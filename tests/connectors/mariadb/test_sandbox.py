"""MariaDB sandboxes: start, stop (files gone), restart with persisted settings, recover after a kill -9, a login
that must give its password, and orphans of a killed owner reaped like PostgreSQL's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pymysql
import pytest

from advisor.core.errors import SandboxError, TargetUnreachable
from connectors import factory, local
from connectors.base import Sandbox
from connectors.mariadb.connection import connect
from connectors.mariadb.sandbox import MariaDBSandbox
from tests.connectors.mariadb.conftest import mrows


@pytest.fixture
def tmp_path():
    """A base directory the mysql user can enter (pytest's own are 0700 under root's)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="maria-test-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_a_sandbox_starts_with_performance_schema_and_stops_leaving_nothing(tmp_path):
    with factory.sandbox("mariadb", "t", settings={"sort_buffer_size": "1M"}, base_dir=str(tmp_path)) as s:
        assert isinstance(s, MariaDBSandbox) and isinstance(s, Sandbox) and s.is_running()
        assert factory.client_tool("mariadb", "mariadb-dump").endswith("/mariadb-dump")
        row, = mrows(s.dsn(), "SELECT @@performance_schema, @@sort_buffer_size, @@max_digest_length, CURRENT_USER()")
        assert row == (1, 1048576, 8192, "advisor@127.0.0.1")
        consumers = dict(mrows(s.dsn(), "SELECT NAME, ENABLED FROM performance_schema.setup_consumers"))
        assert consumers["events_statements_history_long"] == "YES"
        assert json.loads((s.root / local.OWNER_FILE).read_text())["engine"] == "mariadb"
        root, pid = s.root, int((s.root / "run" / "my.pid").read_text())
    assert not root.exists() and not local.pid_alive(pid)


def test_restart_reads_the_persisted_settings_and_recover_brings_a_killed_server_back(tmp_path):
    with MariaDBSandbox("t", base_dir=str(tmp_path)) as s:
        s.persist({"table_open_cache": "1234"})
        s.restart()
        assert mrows(s.dsn(), "SELECT @@table_open_cache") == [(1234,)]
        os.kill(int((s.root / "run" / "my.pid").read_text()), signal.SIGKILL)
        assert not s.is_running() or time.sleep(0.5) or not s.is_running()
        s.recover({"table_open_cache": "999"})
        assert s.is_running() and mrows(s.dsn(), "SELECT @@table_open_cache") == [(999,)]


def test_a_setting_the_server_refuses_says_why_with_the_log(tmp_path):
    with pytest.raises(SandboxError, match="exited while starting|did not accept") as e:
        MariaDBSandbox("bad", settings={"no_such_variable_xyz": "1"}, base_dir=str(tmp_path)).start()
    assert "no_such_variable_xyz" in str(e.value)  # the error log's line says which
    assert not list(tmp_path.iterdir())  # nothing left behind


def test_add_login_needs_its_password_over_tcp(maria):
    maria.add_login("alice", "s3cr3t'x")
    ok = f"mysql://alice:s3cr3t%27x@127.0.0.1:{maria.port}/mysql"
    assert mrows(ok, "SELECT CURRENT_USER()") == [("alice@127.0.0.1",)]
    with pytest.raises(TargetUnreachable, match="Access denied") as e:
        connect(f"mysql://alice:WRONG-pw-123@127.0.0.1:{maria.port}/mysql")
    assert "WRONG-pw-123" not in str(e.value)


def test_orphans_of_a_killed_owner_are_stopped_and_removed(tmp_path):
    code = ("import sys, time; sys.path.insert(0, sys.argv[2]);"
            "from connectors.mariadb.sandbox import MariaDBSandbox;"
            "s = MariaDBSandbox('orphan', base_dir=sys.argv[1]).start();"
            "print(s.root, flush=True); time.sleep(600)")
    owner = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), os.getcwd()], stdout=subprocess.PIPE,
                             text=True)
    root = Path(owner.stdout.readline().strip())
    pid = int((root / "run" / "my.pid").read_text())
    assert local.reap_orphans(tmp_path) == []  # its owner runs: left alone
    owner.kill()
    owner.wait()
    assert local.reap_orphans(tmp_path) == [str(root)]
    assert not root.exists() and not local.pid_alive(pid)
    with pytest.raises(pymysql.Error):
        pymysql.connect(unix_socket=str(root / "run" / "my.sock"), user="root", connect_timeout=1)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")
def test_a_directory_the_server_user_cannot_enter_is_named(tmp_path_factory):
    closed = tmp_path_factory.mktemp("closed")  # under pytest's 0700 directory of root's
    with pytest.raises(SandboxError, match="mysql user must be able to enter every directory above"):
        MariaDBSandbox("x", base_dir=str(closed)).start()
    assert not list(closed.iterdir())
