"""Baseline index advisors on real what-if costs (PostgreSQL + HypoPG, TPC-H SF 0.01): no index, Dexter, Extend,
the exact ILP. Costs are planner cost units, sizes HypoPG's estimates in bytes."""

import psycopg
import pytest

from advisor.core.domain import IndexChange
from advisor.tuning.indexes.choice import propose
from connectors.postgres.whatif import HypoPG
from optimizers import registry
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.ilp import NotSolved
from optimizers.indexes.problem import Candidate, IndexProblem, Query
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.refine import refine

O, L, C = ("public", "orders"), ("public", "lineitem"), ("public", "customer")
BIG = 64 << 20  # bytes: every candidate fits


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
WEIGHTS = {q.queryid: q.weight for q in QUERIES}
ALL = ("noindex", "dexter", "extend", "ilp")


@pytest.fixture(scope="module")
def problem(tpch_dsn):
    """One HypoPG session and what-if cache for the module (the costs are deterministic)."""
    with psycopg.connect(tpch_dsn, autocommit=True) as conn, HypoPG(conn) as session:
        yield IndexProblem(QUERIES, CANDIDATES, BIG, CachedWhatIf(session))


def budgeted(p, budget, weights=WEIGHTS):
    return p.with_weights(weights, budget)


def choose(name, p, **kw):
    return list(registry.create("indexes", name, p, **kw).ask(1)[0])


def size(p, name):
    return p.whatif.size(ix(*name))


def test_noindex_and_a_one_byte_budget_give_nothing(problem):
    assert choose("noindex", problem) == []
    tiny = budgeted(problem, 1)
    assert {name: choose(name, tiny) for name in ALL} == {name: [] for name in ALL}


def test_dexter_picks_each_statements_best_single_index(problem):
    picked = choose("dexter", problem)
    assert ix("orders", "o_custkey") in picked and ix("lineitem", "l_partkey") in picked
    assert problem.cost(picked) < problem.cost()
    assert ix("lineitem", "l_discount") not in picked  # worse for "ship" than the other candidates


def test_dexter_respects_the_budget_and_its_minimum_gain(problem):
    one = size(problem, ("orders", "o_custkey"))
    p = budgeted(problem, one)
    assert choose("dexter", p) == [ix("orders", "o_custkey")]  # the best per byte of its picks; the others do not fit
    assert choose("dexter", problem, min_gain=1.0) == []  # no index removes a statement's whole cost


@pytest.mark.parametrize("budget", [8192, "one", "three", BIG])
def test_extend_lowers_the_cost_within_every_budget(problem, budget):
    one = size(problem, ("orders", "o_custkey"))
    budget = {"one": one, "three": 3 * one}.get(budget, budget)
    p = budgeted(problem, budget)
    config = choose("extend", p)
    assert p.size(config) <= budget
    assert set(config) <= {c.index for c in CANDIDATES}
    if budget >= one:
        assert config and p.cost(config) < p.cost()
    else:
        assert p.cost(config) <= p.cost()


def test_extend_grows_an_index_by_a_trailing_column(problem):
    p = budgeted(problem, BIG, {"ship": 1.0})
    config = choose("extend", p)
    assert len(config) == 1 and len(config[0].columns) == 2  # (l_shipdate) or (l_discount) grown by one column
    assert p.cost(config) < p.cost([ix("lineitem", "l_shipdate")])


@pytest.mark.parametrize("budget_indexes", [1, 2, 10, None])
def test_ilp_is_at_least_as_good_as_extend_and_respects_the_budget(problem, budget_indexes):
    budget = budget_indexes * size(problem, ("lineitem", "l_partkey")) if budget_indexes else BIG
    p = budgeted(problem, budget)
    ilp = registry.create("indexes", "ilp", p)
    exact, greedy = ilp.ask(1)[0], choose("extend", p)
    assert p.size(exact) <= budget
    assert ilp.last_status == "optimal" and ilp.last_gap is not None and ilp.last_gap <= 1e-4
    assert p.cost(exact) <= p.cost(greedy) * 1.0001
    assert p.cost(exact) <= ilp.last_objective * 1.0001  # the model never underestimates (more indexes: cheaper)
    assert p.cost(exact) < p.cost()


def test_ilp_beats_extend_where_the_greedy_order_misleads_it(problem):
    # with room for one lineitem index, Extend first takes the small orders index (best per byte), after which
    # l_partkey no longer fits; the ILP takes l_partkey alone, which saves more
    p = budgeted(problem, size(problem, ("lineitem", "l_partkey")))
    exact = choose("ilp", p)
    assert p.cost(exact) < p.cost(choose("extend", p))


def test_ilp_builds_no_index_that_no_chosen_atom_uses(problem):
    exact = choose("ilp", problem)
    assert ix("lineitem", "l_discount") not in exact  # free in the model (no maintenance), yet useless


def test_ilp_without_pairs_or_over_its_atom_cap_still_solves(problem):
    for kw in ({"pairs": False}, {"max_atoms": 5}):
        ilp = registry.create("indexes", "ilp", problem, **kw)
        config = ilp.ask(1)[0]
        assert ilp.last_status == "optimal" and problem.cost(config) < problem.cost()
        assert ilp.last_atoms <= len(QUERIES) + sum(len(c.queries) for c in CANDIDATES)  # at most empty + singles


def test_ilp_refuses_instances_too_large(problem):
    with pytest.raises(NotSolved, match="ILP instance too large: 7 candidates"):
        registry.create("indexes", "ilp", problem, max_candidates=3).ask(1)


def test_refine_drops_an_index_the_set_makes_redundant_and_never_costs_more(problem):
    """(l_shipdate) next to (l_shipdate, l_discount) serves "ship" no better: refine drops it, keeps the cost."""
    p = budgeted(problem, BIG, {"ship": 1.0, "part": 1.0})
    given = [ix("lineitem", "l_shipdate"), ix("lineitem", "l_shipdate", "l_discount"), ix("lineitem", "l_partkey")]
    out, report = refine(p, given)
    assert ix("lineitem", "l_shipdate") not in out and report["dropped"] == ["lineitem(l_shipdate)"]
    assert p.cost(out) <= p.cost(given) and p.size(out) < p.size(given)
    assert report["cost"] == [p.cost(given), p.cost(out)]


def test_refine_spends_the_space_it_frees_within_the_budget(problem):
    """A tight budget held by a useless index: refine drops it and spends the space on the statement's best."""
    need = size(problem, ("orders", "o_custkey"))
    p = budgeted(problem, need, {"cust": 1.0, "ship": 1.0})
    useless = [ix("customer", "c_nationkey")]  # serves only "join", which this mix leaves out
    assert p.size(useless) <= need
    out, report = refine(p, useless)
    assert p.size(out) <= need and p.cost(out) < p.cost(useless)
    assert "customer(c_nationkey)" in report["dropped"] and report["added"]


def test_refine_never_makes_extends_set_costlier(problem):
    best = choose("extend", problem)
    out, report = refine(problem, best)
    assert problem.cost(out) <= problem.cost(best)
    if not report["dropped"] and not report["added"]:
        assert out == best and report["cost"][0] == report["cost"][1]


class Padded(IndexOptimizer):
    """A learned optimizer's stand-in: Extend's set plus the one-column prefix of its multi-column indexes."""

    name = "padded"
    checked_against_baselines = True

    def _select(self):
        chosen = choose("extend", self.problem)
        allowed = {c.index for c in self.problem.candidates}
        return chosen + [p for i in chosen if len(i.columns) > 1
                         for p in [IndexChange(i.schema, i.table, i.columns[:1])] if p in allowed and p not in chosen]


def test_the_pipeline_refines_a_learned_optimizers_set_and_says_so(problem, monkeypatch):
    monkeypatch.setitem(registry.OPTIMIZERS, "indexes", registry.OPTIMIZERS["indexes"] + (Padded,))
    padded = choose("padded", problem)
    extra = [i for i in padded if len(i.columns) == 1 and any(j.columns[:1] == i.columns and len(j.columns) > 1
                                                               for j in padded)]
    assert extra  # the stand-in did pad the set
    refined, _, whatif = propose(problem, "padded", options={"fallback": False})  # the padded set, refined
    assert sorted(whatif["refined"]["dropped"]) == sorted(i.label() for i in extra)
    assert problem.cost(refined) <= problem.cost(padded) and problem.size(refined) < problem.size(padded)
    kept, _, plain = propose(problem, "padded", options={"refine": False, "fallback": False})
    assert "refined" not in plain and set(kept) == set(padded)
    # a baseline answers as itself: no refinement
    assert "refined" not in propose(problem, "extend")[2]
