"""The knob bench's suites on both engines: the ``memory`` suite (written once in TPC-H's source dialect) loads
and runs on PostgreSQL and MariaDB at a tiny scale with the same answers, and a workload that needs a client
program the engine lacks (pgbench) is skipped by that fact, with the reason."""

import dataclasses
from decimal import Decimal

import pytest

from advisor.bench.knobs.workloads import BenchWorkload, Skipped, _check_client
from connectors import factory
from workloads.datasets import knob_suites, suites
from workloads.statements.replay import ReplayOptions, replay

TINY = 0.01
ENGINES = ("pg", "maria")


@pytest.fixture(scope="module")
def memory_on(tpch_dsn, maria):
    """The ``memory`` suite at scale 0.01 on each engine (it needs TPC-H and no setup: PostgreSQL's is the
    session's TPC-H database, MariaDB's prepared here): engine fixture name -> DSN."""
    suite = dataclasses.replace(knob_suites.get("memory"), scale=TINY)
    assert not suite.setup_sql
    dsn = maria.create_database("suite_memory")
    suites.prepare(factory.connector(dsn), suite)
    return suite, {"pg": tpch_dsn, "maria": dsn}


def _answers(dsn: str, statements) -> dict[str, tuple]:
    with factory.connector(dsn).session(60_000) as session:
        return {s.queryid: tuple(tuple(round(float(v), 2) if isinstance(v, (Decimal, float)) else v for v in row)
                                 for row in session.run(s.sql)) for s in statements}


@pytest.mark.parametrize("engine", ENGINES)
def test_memory_suite_runs_in_the_engines_dialect(memory_on, engine):
    suite, dsns = memory_on
    connector = factory.connector(dsns[engine])
    statements = suite.statements(seed=3, dialect=connector.dialect)
    assert [s.queryid for s in statements] == ["memory.m1", "memory.m2", "memory.m3", "memory.m4"]
    assert all("$" not in s.sql and "$1" in s.normalized for s in statements)
    result = replay(factory.connector(dsns[engine]), statements, ReplayOptions(warmup=0, statement_timeout_ms=30_000))
    assert not result.errors and not result.timeouts, (result.errors, result.timeouts)
    assert set(result.samples) == {s.queryid for s in statements}


def test_memory_suite_gives_the_same_answers_on_both_engines(memory_on):
    suite, dsns = memory_on
    pg, maria = (_answers(dsns[e], suite.statements(seed=3, dialect=factory.connector(dsns[e]).dialect))
                 for e in ENGINES)
    for key in ("memory.m1", "memory.m2", "memory.m4"):  # m3's top 10 may order ties differently
        assert pg[key] == maria[key], key
    assert pg["memory.m4"][0][0] > 1000  # most (customer, clerk) pairs are distinct at this scale


def test_source_dialect_statements_stay_as_written():
    written = knob_suites.get("memory").statements(seed=1)
    assert written == knob_suites.get("memory").statements(seed=1, dialect="postgres")
    mysql = knob_suites.get("memory").statements(seed=1, dialect="mysql")
    assert [s.queryid for s in mysql] == [s.queryid for s in written] and mysql[0].sql != written[0].sql


def test_pgbench_workload_is_skipped_where_the_engine_has_no_pgbench(pg, maria):
    wl = BenchWorkload("pgbench", "pgbench", False, 3)
    _check_client(pg.connector(), wl)  # PostgreSQL has it: no skip
    with pytest.raises(Skipped, match="needs the pgbench client: pgbench is not a MariaDB client program"):
        _check_client(maria.connector(), wl)
    _check_client(maria.connector(), BenchWorkload("memory", "replay", False, 3))  # a replay needs no client
