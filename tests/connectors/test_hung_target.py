"""Issue 42 item 10: a target that accepts connections but never answers (its server processes stopped with SIGSTOP,
as a wedged server looks) costs one clear line, "target X did not answer within N s", on both engines: when
connecting (the handshake is bounded by the DSN's connect timeout), on an open connection of the advisor's own and
on a replay session (bounded by ADVISOR_TARGET_TIMEOUT_S, short here). Each server is a sandbox of the test's own,
continued (SIGCONT) in teardown, and answers again afterwards."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
import pytest

from advisor.core.errors import TargetUnreachable
from connectors import factory
from connectors.local import server_processes

HUNG = r"^target 127\.0\.0\.1:\d+/\w+ did not answer within \d+(\.\d+)? s \("


@contextmanager
def stopped(server):
    """Every process of ``server`` stopped (SIGSTOP) inside the block, continued (SIGCONT) after it, whatever
    happens."""
    pids = server_processes(server.data)  # a PostgreSQL server's backends and workers too
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


@pytest.fixture(params=["postgres", "mariadb"], scope="module")
def server(request):
    with factory.sandbox(request.param, "hung", durable=False) as sandbox:
        yield sandbox


def test_a_stopped_server_is_one_clear_line_and_answers_again(server, monkeypatch):
    monkeypatch.setenv("ADVISOR_TARGET_TIMEOUT_S", "2")
    target = factory.connector(server.dsn())
    conn = target.connect()
    session = target.session(timeout_ms=500)
    try:
        with stopped(server):
            with pytest.raises(TargetUnreachable, match=HUNG + "connect_timeout in the DSN") as e:
                target.observe()  # a new connection: the server accepts it and never greets
            assert "\n" not in e.value.message
            with pytest.raises(TargetUnreachable, match=HUNG + "ADVISOR_TARGET_TIMEOUT_S"):
                cur = conn.cursor()
                cur.execute("SELECT 1")  # an open connection of the advisor's own
            with pytest.raises(TargetUnreachable, match=HUNG + "ADVISOR_TARGET_TIMEOUT_S"):
                session.run("SELECT 1")  # a replay session (its statement timeout, 0.5 s, plus the grace)
    finally:
        for c in (conn, session):
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closed by the hang already
                pass
    assert target.identity()["engine"] == server.engine  # continued: it answers again
