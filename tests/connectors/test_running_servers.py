"""Servers found from their sandbox directories, as the fault benches find the shadows other advisors started (one
PostgreSQL and one MariaDB sandbox, real servers): each is found with its leader process, port and a DSN that
connects; ``interrupt`` shuts one down without waiting; ``kill_server`` crashes one and removes its directory."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from connectors import factory
from connectors.local import find_server, kill_server, pid_alive, running_servers


def _gone(pid: int, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


@pytest.fixture
def base():
    """A directory the servers' own users can enter (pytest's tmp_path is its owner's alone)."""
    path = Path(tempfile.mkdtemp(prefix="servers-test-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_servers_of_every_engine_are_found_by_their_directories_then_stopped_or_crashed(base):
    tmp_path = base
    (tmp_path / "case").mkdir()
    os.chmod(tmp_path / "case", 0o755)  # not the umask's: a store opened earlier in this process made it 077
    with factory.sandbox("postgres", "found", base_dir=str(tmp_path)) as pg, \
            factory.sandbox("mariadb", "found", base_dir=str(tmp_path / "case")) as maria:
        found = {s.engine: s for s in running_servers(tmp_path)}
        assert set(found) == {"postgres", "mariadb"}
        for sandbox in (pg, maria):
            server = found[sandbox.engine]
            assert server.pid == sandbox.server_pid() and server.port == sandbox.port
            assert server.root in server.data.parents and tmp_path in server.root.parents
            connector = factory.connector(server.dsn)
            assert connector.engine == sandbox.engine and connector.identity()["database"] == sandbox.default_db
        assert running_servers(tmp_path / "nothing-here") == []

        told = maria.interrupt()  # a shutdown now, not waited for
        assert told == found["mariadb"].pid and _gone(told)
        assert maria.server_pid() is None and find_server(found["mariadb"].root) is None
        assert maria.interrupt() is None  # nothing runs to tell

        kill_server(found["postgres"])  # a crash: the server and its directory are gone
        assert not pid_alive(found["postgres"].pid) and not found["postgres"].root.exists()
        assert running_servers(tmp_path) == []
