import dataclasses

import psycopg
import pytest
from psycopg import sql

from advisor.core.errors import AdvisorError, NotFound
from connectors import factory
from tests.conftest import scalar
from workloads.datasets import pgbench, suites
from workloads.statements.binding import parameters
from workloads.statements.replay import ReplayOptions, replay

TINY = 0.01


@pytest.fixture(scope="module")
def prepared(pg):
    """Each suite prepared once at scale 0.01, in a database of its own: name -> (suite at that scale, DSN)."""
    out = {}
    for name in suites.names():
        suite = dataclasses.replace(suites.get(name), scale=TINY)
        dsn = pg.create_database(f"suite_{name}")
        suites.prepare(factory.connector(dsn), suite)
        out[name] = (suite, dsn)
    return out


def _relations(stmt: str) -> int:
    return stmt.upper().count("FROM ") + stmt.upper().count("JOIN ")


@pytest.mark.parametrize("name", ["joins", "lookups", "tpch"])
def test_every_statement_of_a_suite_runs_after_prepare(prepared, name):
    suite, dsn = prepared[name]
    statements = suite.statements(seed=3)
    assert statements and len({s.queryid for s in statements}) == len(statements)
    assert all(s.queryid.startswith(f"{name}.") and s.weight == 1.0 and not s.is_write for s in statements)
    assert all("$" not in s.sql and parameters(s.normalized) for s in statements)
    result = replay(factory.connector(dsn), statements, ReplayOptions(warmup=0, statement_timeout_ms=20_000))
    assert not result.errors and not result.timeouts, (result.errors, result.timeouts)
    assert set(result.samples) == {s.queryid for s in statements}
    if name != "tpch":  # TPC-H's templates keep its own parameter syntax (interval $1 day); ours are PREPAREable
        with psycopg.connect(dsn, autocommit=True) as conn:
            for s in statements:
                conn.execute(sql.SQL("PREPARE probe AS ") + sql.SQL(s.normalized))  # type: ignore[arg-type]
                conn.execute("DEALLOCATE probe")


def test_suite_shapes():
    assert suites.names() == ["joins", "lookups", "tpch"]
    joins, lookups, tpch = (suites.get(n) for n in suites.names())
    sizes = [_relations(s.normalized) for s in joins.statements()]
    assert 5 <= len(sizes) <= 7 and sum(9 <= n <= 11 for n in sizes) >= 4 and sum(n <= 8 for n in sizes) >= 2
    assert 6 <= len(lookups.statements()) <= 8 and lookups.setup_sql
    assert [s.queryid for s in tpch.statements()] == [f"tpch.q{n}" for n in range(1, 23) if n not in (17, 20)]
    assert all(s.description and s.scale > 0 for s in (joins, lookups, tpch))


def test_statements_are_deterministic_per_seed_and_differ_across_seeds():
    for name in suites.names():
        suite = suites.get(name)
        one, again, other = suite.statements(1), suite.statements(1), suite.statements(2)
        assert one == again
        assert [s.queryid for s in one] == [s.queryid for s in other]
        assert [s.normalized for s in one] == [s.normalized for s in other]
        assert [s.sql for s in one] != [s.sql for s in other]


def test_unknown_suite_is_not_found():
    with pytest.raises(NotFound, match="joins, lookups, tpch"):
        suites.get("nope")


def _shape(plan: dict) -> tuple:
    """The plan without its numbers: node types, relations and join order."""
    return (plan["Node Type"], plan.get("Alias"), tuple(_shape(p) for p in plan.get("Plans", ())))


def test_join_order_of_a_ten_relation_query_depends_on_join_collapse_limit(prepared):
    suite, dsn = prepared["joins"]
    query = next(s for s in suite.statements() if _relations(s.normalized) == 10)
    plans = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for limit in (8, 12):
            conn.execute(sql.SQL("SET join_collapse_limit = {}").format(sql.Literal(limit)))
            conn.execute(sql.SQL("SET from_collapse_limit = {}").format(sql.Literal(limit)))
            row = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + sql.SQL(query.sql)).fetchone()  # type: ignore[arg-type]
            plans[limit] = _shape(row[0][0]["Plan"])
    assert plans[8] != plans[12]


def test_pgbench_initialize_run_and_restore(db):
    pgbench.initialize(db, 1)
    result = pgbench.run(db, pgbench.PgbenchOptions(scale=1, clients=2, jobs=1, duration_s=2))
    assert result.tps > 0 and result.transactions > 0 and result.latency_ms > 0 and result.failed == 0
    assert scalar(db, "SELECT count(*) FROM pgbench_history") > 0
    pgbench.restore(factory.connector(db))
    assert scalar(db, "SELECT count(*) FROM pgbench_history") == 0
    assert scalar(db, "SELECT count(*) FROM pgbench_accounts") == 100_000


def test_pgbench_failure_is_a_clear_error(pg):
    with pytest.raises(AdvisorError, match="pgbench run failed.*pgbench_branches"):
        pgbench.run(pg.dsn(), pgbench.PgbenchOptions(duration_s=1))
    with pytest.raises(AdvisorError, match="jobs"):
        pgbench.run(pg.dsn(), pgbench.PgbenchOptions(clients=1, jobs=2))
