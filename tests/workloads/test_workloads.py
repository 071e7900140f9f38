import random

import psycopg
import pytest

from advisor.core.domain import Statement, Workload
from advisor.core.errors import StatementFailed
from connectors.postgres import PostgresConnector
from tests.conftest import run, scalar
from workloads.datasets import tpch
from workloads.statements.binding import BoundStatement, bind_workload, parameters, substitute
from workloads.statements.capture import is_workload_statement, workload_delta
from workloads.statements.replay import ReplayOptions, replay
from connectors import factory


def test_substitute_skips_quotes_and_comments():
    text = "SELECT '$1', \"$2\" /* $3 */ FROM t WHERE a = $1 AND b = $10 -- $4\n"
    assert parameters(text) == [1, 10]
    assert substitute(text, {1: "5", 10: "'x'"}.__getitem__) == "SELECT '$1', \"$2\" /* $3 */ FROM t WHERE a = 5 AND b = 'x' -- $4\n"


def test_capture_filters_the_advisors_own_and_utility_statements():
    # the engine's own catalog statements are its connector's to leave out (tests/connectors/postgres/test_capture.py)
    assert is_workload_statement("SELECT * FROM orders WHERE id = $1")
    assert not is_workload_statement("/* db-advisor */ SELECT 1")
    assert not is_workload_statement("SET work_mem = $1")
    assert is_workload_statement("WITH x AS (SELECT 1) SELECT * FROM x")


def test_all_22_tpch_queries_run_and_bind_from_qualstats(tpch_dsn):
    c = PostgresConnector(tpch_dsn)
    c.reset_statement_stats()
    before = c.observe()
    rng = random.Random(1)
    items = [BoundStatement(f"q{n}", q, q, 1, "literal", False) for n, q in tpch.stream(rng, 0.01)]
    result = replay(factory.connector(tpch_dsn), items, ReplayOptions(warmup=0))
    assert not result.errors, result.errors
    assert set(result.samples) == {f"q{n}" for n in tpch.QUERY_NUMBERS}
    workload = workload_delta(c.observe(), before)
    assert len(workload.statements) == 22
    bound, skipped = bind_workload(c, workload)
    assert not skipped
    assert {b.source for b in bound} <= {"qualstats", "literal"}
    again = replay(factory.connector(tpch_dsn), bound, ReplayOptions(warmup=0))
    assert not again.errors and len(again.samples) == 22


def test_a_statement_once_explained_binds_to_itself(tpch_dsn):
    """pg_qualstats keeps the first text a queryid was seen in, here an EXPLAIN (a DBA checking the plan, a tool
    validating the statement): the bound statement is the statement, not the EXPLAIN around it."""
    c = PostgresConnector(tpch_dsn)
    c.reset_statement_stats()
    before = c.observe()
    explained = "SELECT o_orderkey FROM orders WHERE o_orderdate >= DATE '1995-01-01' AND o_totalprice > 1000"
    with psycopg.connect(tpch_dsn, autocommit=True) as conn:
        conn.execute("EXPLAIN (FORMAT JSON, COSTS off) " + explained)
        for _ in range(2):
            conn.execute(explained).fetchall()
    workload = workload_delta(c.observe(), before)
    bound, skipped = bind_workload(c, workload)
    assert not skipped
    [b] = [b for b in bound if b.normalized.startswith("SELECT o_orderkey")]
    assert b.source == "qualstats" and b.sql == explained, b.sql
    again = replay(factory.connector(tpch_dsn), bound, ReplayOptions(warmup=0))
    assert not again.errors, again.errors


def test_binding_from_column_statistics_when_no_example_exists(tpch_dsn):
    # queryid 0 is what utility statements get (pg_qualstats may keep an example under it): an id no statement has
    st = Statement("1", "SELECT o_orderkey FROM orders o WHERE o.o_orderdate >= $1 AND o_orderpriority = $2 "
                        "AND o_totalprice > $3 LIMIT $4", 1, 1.0)
    bound, skipped = bind_workload(PostgresConnector(tpch_dsn), Workload((st,)))
    assert not skipped and bound[0].source == "statistics"
    assert "$" not in bound[0].sql and "LIMIT 100" in bound[0].sql
    rows = replay(factory.connector(tpch_dsn), bound, ReplayOptions(warmup=0))
    assert not rows.errors and len(rows.samples["1"]) == 1


def test_replay_measures_every_statement_rolls_back_writes_and_records_timeouts(db):
    run(db, "CREATE TABLE r (id int PRIMARY KEY, v int)", "INSERT INTO r SELECT g, g FROM generate_series(1, 100) g")
    items = [
        BoundStatement("read", "SELECT count(*) FROM r", "SELECT count(*) FROM r", 3, "literal", False),
        BoundStatement("write", "DELETE FROM r", "DELETE FROM r", 1, "literal", True),
        BoundStatement("slow", "SELECT pg_sleep(1)", "SELECT pg_sleep(1)", 1, "literal", False),
        BoundStatement("bad", "SELECT * FROM missing", "SELECT * FROM missing", 1, "literal", False),
    ]
    res = replay(factory.connector(db), items, ReplayOptions(concurrency=2, repeats=3, warmup=1, statement_timeout_ms=200))
    assert len(res.samples["read"]) == 3 and len(res.samples["write"]) == 3
    assert res.timeouts["slow"] == 3 and res.samples["slow"] == [200.0] * 3
    assert len(res.errors["bad"]) == 3 and all(isinstance(e, StatementFailed) for e in res.errors["bad"])
    assert "does not exist" in res.errors["bad"][0].reason
    assert scalar(db, "SELECT count(*) FROM r") == 100


def test_tpch_parameters_follow_the_specification():
    rng = random.Random(5)
    q1 = tpch.query(1, rng)
    delta = int(q1.split("interval '")[1].split("'")[0])
    assert 60 <= delta <= 120
    with pytest.raises(KeyError):
        tpch.query(23, rng)


def test_binding_many_parameterized_statements_keeps_the_drivers_prepared_statements(db):
    # psycopg prepares a query it runs 5 times; binding once dropped those with DEALLOCATE ALL and then failed
    run(db, "CREATE TABLE o (id int PRIMARY KEY, c int, a int)", "INSERT INTO o SELECT x, x % 50, x % 7 "
        "FROM generate_series(1, 2000) x", "ANALYZE o")
    statements = tuple(Statement(str(i), f"SELECT * FROM o WHERE c = $1 AND a = $2 AND id > $3 + {i}", 1, 1.0)
                       for i in range(6))
    bound, skipped = bind_workload(PostgresConnector(db), Workload(statements))
    assert not skipped and len(bound) == 6 and all("$" not in b.sql for b in bound)
