"""Replay runs on the connector's sessions (``Connector.session``): a statement whose connection is lost is recorded
as an error, the worker opens a new session and the statements after it are still measured."""

import re

import pytest

from advisor.core.errors import TargetUnreachable
from connectors.postgres.sandbox import free_port
from tests.conftest import run, scalar
from workloads.binding import BoundStatement
from workloads.replay import ReplayOptions, replay


def _item(queryid: str, sql: str, is_write: bool = False) -> BoundStatement:
    return BoundStatement(queryid, sql, sql, 1, "literal", is_write)


def test_a_lost_connection_is_an_error_and_replay_goes_on_with_a_new_session(db):
    run(db, "CREATE TABLE r (id int PRIMARY KEY)", "INSERT INTO r SELECT g FROM generate_series(1, 10) g")
    items = [_item("read", "SELECT count(*) FROM r"),
             _item("kill", "SELECT pg_terminate_backend(pg_backend_pid())"),  # ends its own connection
             _item("write", "INSERT INTO r VALUES (11)", is_write=True)]
    res = replay(db, items, ReplayOptions(concurrency=1, repeats=2, warmup=0))
    assert len(res.errors["kill"]) == 2 and all(e.startswith("error: ") for e in res.errors["kill"])
    assert "kill" not in res.samples
    assert len(res.samples["read"]) == 2 and len(res.samples["write"]) == 2  # measured on the new sessions
    assert scalar(db, "SELECT count(*) FROM r") == 10  # the write was rolled back each time


def test_an_unreachable_target_fails_the_replay_with_one_line(db):
    nobody = re.sub(r"port=\d+", f"port={free_port()}", db)  # a port no server listens on
    with pytest.raises(TargetUnreachable) as e:
        replay(nobody, [_item("read", "SELECT 1")], ReplayOptions(warmup=0))
    assert "\n" not in str(e.value) and "cannot connect" in str(e.value)
