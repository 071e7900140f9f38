"""Baseline index advisors on real what-if costs (HypoPG, TPC-H SF 0.01): no index, Dexter, Extend, ILP."""

import psycopg
import pytest

from advisor.domain import IndexChange
from connectors.postgres.whatif import HypoPG
from optimizers import registry
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import Candidate, IndexProblem, Query

O, L, C = ("public", "orders"), ("public", "lineitem"), ("public", "customer")


def ix(table, *cols):
    return IndexChange("public", table, cols)


QUERIES = (
    Query("cust", "SELECT * FROM orders WHERE o_custkey = 42", 10.0, frozenset({O})),
    Query("part", "SELECT sum(l_extendedprice) FROM lineitem WHERE l_partkey = 7", 5.0, frozenset({L})),
    Query("ship", "SELECT count(*) FROM lineitem WHERE l_shipdate >= date '1995-01-01' AND l_shipdate < "
                  "date '1995-01-10' AND l_discount = 0.05", 3.0, frozenset({L})),
    Query("join", "SELECT count(*) FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey "
                  "WHERE c.c_nationkey = 3", 1.0, frozenset({O, C})),
)
CANDIDATES = (
    Candidate(ix("orders", "o_custkey"), frozenset({"cust", "join"})),
    Candidate(ix("lineitem", "l_partkey"), frozenset({"part"})),
    Candidate(ix("lineitem", "l_shipdate"), frozenset({"ship"})),
    Candidate(ix("lineitem", "l_shipdate", "l_discount"), frozenset({"ship"})),
    Candidate(ix("lineitem", "l_discount"), frozenset({"ship"})),
    Candidate(ix("lineitem", "l_discount", "l_shipdate"), frozenset({"ship"})),
    Candidate(ix("customer", "c_nationkey"), frozenset({"join"})),
)


@pytest.fixture
def problem(tpch_dsn):
    with psycopg.connect(tpch_dsn, autocommit=True) as conn, HypoPG(conn) as session:
        yield IndexProblem(QUERIES, CANDIDATES, 64 << 20, CachedWhatIf(session))


def choose(name, p, **kw):
    return registry.create("indexes", name, **kw).choose(p)


def test_noindex_and_a_one_byte_budget_give_nothing(problem):
    assert choose("noindex", problem) == []
    tiny = problem.with_weights({q.queryid: q.weight for q in QUERIES}, 1)
    assert all(choose(name, tiny) == [] for name in ("dexter", "extend", "ilp"))


def test_dexter_picks_each_statements_best_single_index(problem):
    picked = choose("dexter", problem)
    assert ix("orders", "o_custkey") in picked and ix("lineitem", "l_partkey") in picked


def test_extend_lowers_the_cost_within_every_budget(problem):
    one = problem.whatif.size(ix("orders", "o_custkey"))
    for budget in (one, 3 * one, 64 << 20):
        p = problem.with_weights({q.queryid: q.weight for q in QUERIES}, budget)
        config = choose("extend", p)
        assert p.size(config) <= budget and config
        assert p.cost(config) < p.cost()
        assert set(config) <= {c.index for c in CANDIDATES}


def test_extend_grows_an_index_by_a_trailing_column(problem):
    p = problem.with_weights({"ship": 1.0}, 64 << 20)
    config = choose("extend", p)
    assert len(config) == 1 and len(config[0].columns) == 2  # (l_shipdate) or (l_discount) grown by one column


@pytest.mark.parametrize("budget_indexes", [1, 2, 10])
def test_ilp_is_at_least_as_good_as_extend_and_respects_the_budget(problem, budget_indexes):
    budget = budget_indexes * problem.whatif.size(ix("lineitem", "l_partkey"))
    p = problem.with_weights({q.queryid: q.weight for q in QUERIES}, budget)
    ilp = registry.create("indexes", "ilp")
    exact, greedy = ilp.choose(p), choose("extend", p)
    assert p.size(exact) <= budget and ilp.last_status == "optimal"
    assert p.cost(exact) <= p.cost(greedy) * 1.0001


def test_ilp_refuses_instances_too_large(problem):
    with pytest.raises(ValueError, match="too large"):
        registry.create("indexes", "ilp", max_candidates=3).choose(problem)
