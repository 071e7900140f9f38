"""What-if costing with HypoPG on a real server: costs, sizes, the cache and incremental hypothetical indexes,
means over a statement's bindings, planning timeouts."""

import psycopg
import pytest

from advisor.core.domain import IndexChange
from advisor.core.errors import BadStatement
from connectors.postgres.whatif import HypoPG
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import Query

ORDERS = ("public", "orders")
LINEITEM = ("public", "lineitem")
O_CUST = IndexChange("public", "orders", ("o_custkey",))
O_DATE = IndexChange("public", "orders", ("o_orderdate",))
L_PART = IndexChange("public", "lineitem", ("l_partkey",))
O_CUST_DATE = IndexChange("public", "orders", ("o_custkey", "o_orderdate"))
Q = Query("q", "SELECT * FROM orders WHERE o_custkey = 42", 1.0, frozenset({ORDERS}))
Q2 = Query("q2", "SELECT * FROM orders WHERE o_custkey = 42 AND o_orderdate > date '1998-01-01'", 1.0,
           frozenset({ORDERS}))


@pytest.fixture
def whatif(tpch_dsn):
    with psycopg.connect(tpch_dsn, autocommit=True) as conn, HypoPG(conn) as session:
        yield CachedWhatIf(session), session, conn


def test_an_index_lowers_the_cost_and_has_a_size(whatif):
    w, _, _ = whatif
    without, with_ = w.cost(Q, frozenset()), w.cost(Q, frozenset({O_CUST}))
    assert with_.total < 0.2 * without.total
    assert without.seq_scans.get("orders", 0) > 0 and "orders" not in with_.seq_scans
    assert 8192 <= w.size(O_CUST) < 50 << 20


def test_cache_hits_for_repeats_and_for_indexes_on_other_tables(whatif):
    _, session, _ = whatif
    w = CachedWhatIf(session, prune=False)
    w.cost(Q, frozenset({O_CUST}))
    assert (w.calls, w.hits) == (1, 0)
    w.cost(Q, frozenset({O_CUST}))
    w.cost(Q, frozenset({O_CUST, L_PART}))  # lineitem's index cannot change a query on orders
    assert (w.calls, w.hits) == (1, 2)
    w.cost(Q, frozenset({O_CUST, O_DATE}))  # Q never names o_orderdate: O_DATE cannot change its plan
    assert w.calls == 1
    w.cost(Q, frozenset({O_CUST, O_CUST_DATE}))
    assert w.calls == 2 and w.counters()["cached"] == 2


def test_hypothetical_indexes_change_incrementally_and_never_leak(whatif, tpch_dsn):
    _, session, conn = whatif
    w = CachedWhatIf(session, prune=False)
    w.cost(Q2, frozenset({O_CUST}))
    w.cost(Q2, frozenset({O_CUST, O_DATE}))
    assert (session.creates, session.drops) == (2, 0)  # O_CUST stayed, O_DATE was added
    w.cost(Q2, frozenset({O_DATE}))
    assert (session.creates, session.drops) == (2, 1)
    with psycopg.connect(tpch_dsn, autocommit=True) as other:  # another session sees none of them
        assert other.execute("SELECT count(*) FROM hypopg_list_indexes").fetchone()[0] == 0
    session.close()
    assert conn.execute("SELECT count(*) FROM hypopg_list_indexes").fetchone()[0] == 0


def test_the_hypothetical_index_is_what_the_plan_uses(whatif):
    _, session, _ = whatif
    # an index on a column the query does not filter on changes nothing
    assert session.plan(Q.sql, [O_DATE], Q.tables).total == pytest.approx(session.plan(Q.sql, [], Q.tables).total)


def test_bad_statement_and_bad_index_are_clear_errors(whatif):
    w, _, _ = whatif
    with pytest.raises(BadStatement, match="cannot plan"):
        w.cost(Query("bad", "SELECT * FROM nowhere WHERE x = 1", 1.0, frozenset({ORDERS})), frozenset())
    with pytest.raises(BadStatement, match="cannot create hypothetical index"):
        w.cost(Q, frozenset({IndexChange("public", "orders", ("o_custkey", "no_such_column"))}))


# --- issue 14: bindings averaged, plans reused and ruled out, planning bounded ------------------------------------

def _week(day: str) -> str:
    return f"SELECT * FROM orders WHERE o_orderdate BETWEEN date '{day}' AND date '{day}' + 6 AND o_custkey > 10"


def test_the_cost_of_a_statement_is_the_mean_over_its_bindings(whatif):
    w, _, _ = whatif
    days = ("1995-03-06", "1992-01-01", "1998-07-01")
    one = [w.cost(Query(f"s{i}", _week(d), 1.0, frozenset({ORDERS})), frozenset({O_DATE})) for i, d in enumerate(days)]
    assert len({c.total for c in one}) == 3  # the bindings really cost differently
    calls = w.calls
    q = Query("s", _week(days[0]), 1.0, frozenset({ORDERS}), samples=(_week(days[1]), _week(days[2])))
    both = w.cost(q, frozenset({O_DATE}))
    assert both.total == pytest.approx(sum(c.total for c in one) / 3)
    assert both.seq_scans.get("orders", 0.0) == pytest.approx(sum(c.seq_scans.get("orders", 0.0) for c in one) / 3)
    assert w.calls == calls  # each binding's plan was already known: reused, whichever query asked
    w.cost(q, frozenset({O_DATE}))
    assert w.calls == calls and w.hits == 1
    fresh = CachedWhatIf(w.planner)
    assert fresh.cost(q, frozenset()).total > fresh.cost(q, frozenset({O_DATE})).total
    assert fresh.calls == 6  # three bindings, two configurations


def test_an_index_whose_leading_column_the_statement_never_names_is_not_planned(whatif):
    w, session, _ = whatif
    base = w.cost(Q, frozenset())
    other = IndexChange("public", "orders", ("o_orderdate", "o_custkey"))
    assert w.cost(Q, frozenset({O_DATE, other})).total == base.total and w.calls == 1
    assert session.plan(Q.sql, [O_DATE, other], Q.tables).total == pytest.approx(base.total)
    assert w.cost(Q, frozenset({O_CUST_DATE})).total < base.total and w.calls == 2


def test_an_index_the_plan_ignores_alone_is_ruled_out_of_later_configurations(whatif):
    w, session, _ = whatif
    q = Query("all", "SELECT * FROM orders WHERE o_custkey = 42 AND o_orderdate > date '1900-01-01'", 1.0,
              frozenset({ORDERS}))  # every order is after 1900: an index on the date is no use
    base = w.cost(q, frozenset())
    assert w.cost(q, frozenset({O_DATE})).total == base.total
    with_cust = w.cost(q, frozenset({O_CUST}))
    assert w.calls == 3
    assert w.cost(q, frozenset({O_CUST, O_DATE})) == with_cust and w.calls == 3  # not planned again
    assert session.plan(q.sql, [O_CUST, O_DATE], q.tables).total == pytest.approx(with_cust.total)
    exact = CachedWhatIf(session, prune=False)
    for config in ({O_DATE}, {O_CUST}, {O_CUST, O_DATE}):
        exact.cost(q, frozenset(config))
    assert exact.calls == 3


def test_planning_that_times_out_is_answered_without_the_indexes_and_counted(db):
    from tests.conftest import run

    run(db, "CREATE TABLE t (id int, a int)", "INSERT INTO t SELECT x, x % 5000 FROM generate_series(1, 20000) x",
        "ANALYZE t",
        # an immutable function is evaluated while planning: this one is slow only under hypothetical indexes
        "CREATE FUNCTION slow_under_hypopg() RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN "
        "IF EXISTS (SELECT 1 FROM hypopg_list_indexes) THEN PERFORM pg_sleep(60); END IF; RETURN 42; END $$")
    t, a = ("public", "t"), IndexChange("public", "t", ("a",))
    slow = Query("slow", "SELECT * FROM t WHERE a = slow_under_hypopg()", 1.0, frozenset({t}))
    fast = Query("fast", "SELECT * FROM t WHERE a = 42", 1.0, frozenset({t}))
    with psycopg.connect(db, autocommit=True) as conn:
        with HypoPG(conn, timeout_ms=1000) as session:
            w = CachedWhatIf(session)
            without = w.cost(slow, frozenset())
            assert w.cost(slow, frozenset({a})).total == without.total  # the fallback: no benefit credited
            assert session.timeouts == 1 and w.counters()["timeouts"] == 1
            assert w.cost(fast, frozenset({a})).total < 0.2 * w.cost(fast, frozenset()).total  # index made again
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "1s"
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"  # the session's own setting is back


def test_a_sample_the_planner_refuses_is_left_out_of_the_mean(whatif):
    w, _, _ = whatif
    q = Query("r", Q.sql, 1.0, Q.tables, samples=("SELECT * FROM orders WHERE o_custkey = 'x'",))
    assert w.cost(q, frozenset({O_CUST})).total == w.cost(Q, frozenset({O_CUST})).total
    assert w.counters()["refused_samples"] == 1
