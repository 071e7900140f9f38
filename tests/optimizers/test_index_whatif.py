"""What-if costing with HypoPG on a real server: costs, sizes, the cache and incremental hypothetical indexes."""

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
Q = Query("q", "SELECT * FROM orders WHERE o_custkey = 42", 1.0, frozenset({ORDERS}))


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
    w, session, _ = whatif
    w.cost(Q, frozenset({O_CUST}))
    assert (w.calls, w.hits) == (1, 0)
    w.cost(Q, frozenset({O_CUST}))
    w.cost(Q, frozenset({O_CUST, L_PART}))  # lineitem's index cannot change a query on orders
    assert (w.calls, w.hits) == (1, 2)
    w.cost(Q, frozenset({O_CUST, O_DATE}))
    assert w.calls == 2 and w.counters()["cached"] == 2


def test_hypothetical_indexes_change_incrementally_and_never_leak(whatif, tpch_dsn):
    w, session, conn = whatif
    w.cost(Q, frozenset({O_CUST}))
    w.cost(Q, frozenset({O_CUST, O_DATE}))
    assert (session.creates, session.drops) == (2, 0)  # O_CUST stayed, O_DATE was added
    w.cost(Q, frozenset({O_DATE}))
    assert (session.creates, session.drops) == (2, 1)
    with psycopg.connect(tpch_dsn, autocommit=True) as other:  # another session sees none of them
        assert other.execute("SELECT count(*) FROM hypopg_list_indexes").fetchone()[0] == 0
    session.close()
    assert conn.execute("SELECT count(*) FROM hypopg_list_indexes").fetchone()[0] == 0


def test_the_hypothetical_index_is_what_the_plan_uses(whatif):
    w, _, _ = whatif
    # an index on a column the query does not filter on changes nothing
    assert w.cost(Q, frozenset({O_DATE})).total == pytest.approx(w.cost(Q, frozenset()).total)


def test_bad_statement_and_bad_index_are_clear_errors(whatif):
    w, _, _ = whatif
    with pytest.raises(BadStatement, match="cannot plan"):
        w.cost(Query("bad", "SELECT * FROM nowhere WHERE x = 1", 1.0, frozenset({ORDERS})), frozenset())
    with pytest.raises(BadStatement, match="cannot create hypothetical index"):
        w.cost(Q, frozenset({IndexChange("public", "orders", ("no_such_column",))}))
