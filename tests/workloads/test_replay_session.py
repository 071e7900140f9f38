"""Replay runs on the connector's sessions (``Connector.session``): a statement whose connection is lost is recorded
as an error, the worker opens a new session and the statements after it are still measured."""

import re

import pytest

from advisor.core.errors import TargetUnreachable
from connectors.postgres.sandbox import free_port
from tests.conftest import run, scalar
from workloads.datasets import tpch
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay
from connectors import factory


def _item(queryid: str, sql: str, is_write: bool = False) -> BoundStatement:
    return BoundStatement(queryid, sql, sql, 1, "literal", is_write)


def test_a_lost_connection_is_an_error_and_replay_goes_on_with_a_new_session(db):
    run(db, "CREATE TABLE r (id int PRIMARY KEY)", "INSERT INTO r SELECT g FROM generate_series(1, 10) g")
    items = [_item("read", "SELECT count(*) FROM r"),
             _item("kill", "SELECT pg_terminate_backend(pg_backend_pid())"),  # ends its own connection
             _item("write", "INSERT INTO r VALUES (11)", is_write=True)]
    res = replay(factory.connector(db), items, ReplayOptions(concurrency=1, repeats=2, warmup=0))
    assert len(res.errors["kill"]) == 2 and all(isinstance(e, TargetUnreachable) for e in res.errors["kill"])
    assert res.first_error() is res.errors["kill"][0]
    assert "kill" not in res.samples
    assert len(res.samples["read"]) == 2 and len(res.samples["write"]) == 2  # measured on the new sessions
    assert scalar(db, "SELECT count(*) FROM r") == 10  # the write was rolled back each time


def test_an_unreachable_target_fails_the_replay_with_one_line(db):
    nobody = re.sub(r"port=\d+", f"port={free_port()}", db)  # a port no server listens on
    with pytest.raises(TargetUnreachable) as e:
        replay(factory.connector(nobody), [_item("read", "SELECT 1")], ReplayOptions(warmup=0))
    assert "\n" not in str(e.value) and "cannot connect" in str(e.value)


def test_replay_and_loaders_take_the_runs_connector_never_a_dsn(db):
    """One connector per run: replay opens sessions on the connector it is given; a DSN is refused, by the
    workload loaders too."""
    with pytest.raises(TypeError, match="connector"):
        replay(db, [_item("read", "SELECT 1")], ReplayOptions(warmup=0))
    res = replay(factory.connector(db), [_item("read", "SELECT 1")], ReplayOptions(warmup=0))
    assert len(res.samples["read"]) == 1 and not res.errors
    with pytest.raises(TypeError, match="connector"):  # the loaders too
        tpch.load(db, 0.01)
    assert scalar(db, "SELECT count(*) FROM pg_tables WHERE tablename = 'lineitem'") == 0  # refused before work


@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_a_capped_statement_is_cut_at_its_cap_and_the_next_one_runs_whole(engine, request):
    """``caps_ms`` cuts one statement sooner than the session's timeout (a 3 s sleep at 300 ms): it is recorded
    as a timeout at its cap, and the statements after it on the same session run to their end (the cut never
    lands on them)."""
    dsn = request.getfixturevalue("db") if engine == "postgres" else request.getfixturevalue("maria").dsn()
    sleep = "SELECT pg_sleep(3)" if engine == "postgres" else "SELECT SLEEP(3)"
    short = "SELECT pg_sleep(0.4)" if engine == "postgres" else "SELECT SLEEP(0.4)"
    items = [_item("long", sleep), _item("short", short), _item("one", "SELECT 1")]
    result = replay(factory.connector(dsn), items, ReplayOptions(repeats=2, warmup=0, statement_timeout_ms=10_000,
                                                                caps_ms={"long": 300.0, "short": 2000.0}))
    assert result.samples["long"] == [300.0, 300.0] and result.timeouts == {"long": 2}
    assert all(350 < ms < 2000 for ms in result.samples["short"]) and len(result.samples["one"]) == 2
    assert not result.errors
