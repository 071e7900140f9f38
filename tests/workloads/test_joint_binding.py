"""Issue 14, item 2: parameters bound jointly so that a statement keeps its meaning (real server, TPC-H SF 0.01)."""

import re

import psycopg

from advisor.core.domain import IndexChange, Statement, Workload
from advisor.tuning.indexes.problem import build_problem
from connectors.postgres import PostgresConnector
from tests.conftest import scalar
from workloads.statements.binding import bind_workload

DATE = re.compile(r"'(\d{4}-\d{2}-\d{2})'")


def _bind(dsn: str, text: str, queryid: str = "9001"):
    bound, skipped = bind_workload(PostgresConnector(dsn), Workload((Statement(queryid, text, 10, 1.0),)))
    assert not skipped, skipped
    return bound[0]


def _all(b) -> list[str]:
    return [b.sql, *b.samples]


def test_a_week_between_cast_parameters_stays_a_week_in_every_sample(tpch_dsn):
    b = _bind(tpch_dsn, "SELECT count(*) FROM orders WHERE o_orderdate BETWEEN $1::date AND $2::date + 6")
    assert b.source == "statistics" and len(b.samples) == 2
    starts = set()
    for text in _all(b):
        low, high = DATE.findall(text)
        assert low == high, text  # $2 is $1: the range is the 7 days the statement means
        starts.add(low)
        assert 0 < scalar(tpch_dsn, text) < 0.05 * scalar(tpch_dsn, "SELECT count(*) FROM orders")
    assert len(starts) == 3  # the samples are other weeks


def test_two_bare_bounds_of_one_column_are_drawn_together_as_a_narrow_range(tpch_dsn):
    b = _bind(tpch_dsn, "SELECT count(*) FROM lineitem WHERE l_shipdate >= $1 AND l_shipdate < $2")
    total = scalar(tpch_dsn, "SELECT count(*) FROM lineitem")
    for text in _all(b):  # independent medians would give an empty range (both the same value)
        low, high = DATE.findall(text)
        assert low < high
        assert 0 < scalar(tpch_dsn, text) <= 0.15 * total


def test_equality_with_a_cast_parameter_gets_dates_of_the_column(tpch_dsn):
    b = _bind(tpch_dsn, "SELECT * FROM orders o WHERE o.o_orderdate = CAST($1 AS date)")
    dates = [DATE.search(t).group(1) for t in _all(b)]
    assert len(set(dates)) == 3
    for d in dates:
        assert scalar(tpch_dsn, "SELECT count(*) FROM orders WHERE o_orderdate = %s::date", (d,)) > 0


def test_a_one_sided_date_range_with_an_equality_keeps_a_plausible_selectivity(tpch_dsn):
    b = _bind(tpch_dsn, "SELECT count(*) FROM orders WHERE o_orderdate >= $1::date AND o_orderstatus = $2")
    total = scalar(tpch_dsn, "SELECT count(*) FROM orders")
    for text in _all(b):
        after = scalar(tpch_dsn, f"SELECT count(*) FROM orders WHERE o_orderdate >= '{DATE.search(text).group(1)}'")
        assert 0 < after <= 0.35 * total  # not the median's half of the table
        status = re.search(r"o_orderstatus = '(\w)'", text).group(1)
        assert scalar(tpch_dsn, "SELECT count(*) FROM orders WHERE o_orderstatus = %s", (status,)) > 0


def _run_with_driver_parameters(dsn: str, values: list[tuple[str, int]]) -> str:
    """Runs the issue's statement with the driver binding its parameters (the extended protocol, as applications
    do): pg_stat_statements and pg_qualstats' example both keep ``$n``. Returns its queryid."""
    text = "SELECT count(*) FROM orders WHERE o_orderdate BETWEEN %s::date AND %s::date + 6 AND o_custkey > %s"
    with psycopg.connect(dsn, autocommit=True) as conn:
        for day, cust in values:
            conn.execute(text, (day, day, cust))
        # this statement only: other tests run the same range without the o_custkey condition
        return str(conn.execute("SELECT queryid FROM pg_stat_statements WHERE query LIKE "
                                "'SELECT count(*) FROM orders WHERE o_orderdate BETWEEN $1::date AND%o_custkey >%'"
                                ).fetchone()[0])


def test_driver_bound_parameters_take_the_constants_real_calls_used(tpch_dsn):
    queryid = _run_with_driver_parameters(tpch_dsn, [("1995-03-06", 7), ("1995-03-06", 7), ("1996-07-01", 9)])
    normalized = scalar(tpch_dsn, "SELECT query FROM pg_stat_statements WHERE queryid = %s::bigint", (queryid,))
    b = _bind(tpch_dsn, normalized, queryid)
    assert b.source == "qualstats"
    assert "1995-03-06" in b.sql and " 6 " in b.sql  # the most frequent real call's date, the statement's own + 6
    low, high = DATE.findall(b.sql)
    assert low == high  # the high bound (no constant of its own in pg_qualstats) keeps the week
    assert any("1996-07-01" in s for s in b.samples)
    assert scalar(tpch_dsn, b.sql) > 0


def test_a_statement_known_only_without_constants_is_bound_and_advised(tpch_dsn):
    queryid = _run_with_driver_parameters(tpch_dsn, [("1995-03-06", 7)])
    normalized = scalar(tpch_dsn, "SELECT query FROM pg_stat_statements WHERE queryid = %s::bigint", (queryid,))
    assert "$2::date + $4" in normalized  # even the statement's own 6 is a parameter here
    b = _bind(tpch_dsn, normalized, "9003")  # a queryid pg_qualstats never saw: no example, no constants
    assert b.source == "statistics" and len(b.samples) == 2
    for text in _all(b):
        low, high = DATE.findall(text)
        assert low == high and " + 7 " in text  # date + integer, a week
        assert scalar(tpch_dsn, text) > 0
    c = PostgresConnector(tpch_dsn)
    problem, session = build_problem(c, c.observe(), [b], 50 << 20)
    with session:
        (q,) = problem.queries
        assert q.samples == b.samples  # the what-if cost is the mean over the three bindings
        index = IndexChange("public", "orders", ("o_orderdate",))
        assert index in [cand.index for cand in problem.candidates]
        assert problem.cost([index]) < 0.5 * problem.cost()
        assert problem.whatif.calls == 6  # each binding planned once per configuration


def test_a_statement_that_ran_once_is_bound_to_that_call_alone(tpch_dsn):
    PostgresConnector(tpch_dsn).reset_statement_stats()  # pg_qualstats keeps at most pg_qualstats.max entries
    with psycopg.connect(tpch_dsn, autocommit=True) as conn:  # literal constants: the simple protocol
        conn.execute("SELECT count(*) FROM orders WHERE o_custkey = 4242 AND o_orderstatus = 'F'")
        queryid, normalized = conn.execute("SELECT queryid::text, query FROM pg_stat_statements WHERE query LIKE "
                                           "'SELECT count(*) FROM orders WHERE o_custkey = $1 AND%'").fetchone()
    once, _ = bind_workload(PostgresConnector(tpch_dsn), Workload((Statement(queryid, normalized, 1, 1.0),)))
    assert once[0].source == "qualstats" and "4242" in once[0].sql and once[0].samples == ()
    # the same statement seen ten times: its one example and statistics draws for the calls not sampled
    many, _ = bind_workload(PostgresConnector(tpch_dsn), Workload((Statement(queryid, normalized, 10, 1.0),)))
    assert "4242" in many[0].sql and len(many[0].samples) >= 1
