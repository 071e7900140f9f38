"""Planning a batch of what-if costs over several HypoPG sessions at once (``CachedWhatIf.prefetch``): the same
costs and the same choices as one session asked one call at a time, the helper sessions really plan, a statement
the planner refuses still fails where it is costed, and ``build_problem`` opens (and closes) one session per core
where the engine's sessions are independent. Real PostgreSQL + HypoPG on TPC-H SF 0.01."""

import time

import psycopg
import pytest

from advisor.core.errors import BadStatement
from connectors.postgres.whatif import HypoPG
from optimizers import registry
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import IndexProblem, Query
from tests.optimizers.indexes.test_index_baselines import CANDIDATES, QUERIES


class Counted:
    """A real planner session that counts the EXPLAINs it made."""

    def __init__(self, session: HypoPG):
        self.session, self.plans = session, 0

    def plan(self, sql, indexes, tables):
        self.plans += 1
        return self.session.plan(sql, indexes, tables)

    def index_size(self, index):
        return self.session.index_size(index)


@pytest.fixture(scope="module")
def sessions(tpch_dsn):
    conns = [psycopg.connect(tpch_dsn, autocommit=True) for _ in range(4)]
    hypos = [HypoPG(c) for c in conns]
    yield hypos
    for h, c in zip(hypos, conns):
        h.close()
        c.close()


def problems(sessions):
    """(one session asked one call at a time, the same over three sessions with their helpers counted)."""
    helpers = [Counted(s) for s in sessions[2:]]
    alone = IndexProblem(QUERIES, CANDIDATES, 64 << 20, CachedWhatIf(sessions[0]))
    shared = IndexProblem(QUERIES, CANDIDATES, 64 << 20, CachedWhatIf(sessions[1], helpers=helpers))
    return alone, shared, helpers


@pytest.mark.parametrize("advisor", ["extend", "dexter", "ilp"])
def test_every_baseline_chooses_the_same_set_with_the_batch_planned_over_sessions(sessions, advisor):
    alone, shared, helpers = problems(sessions)
    one = registry.create("indexes", advisor, alone).ask(1)[0]
    many = registry.create("indexes", advisor, shared).ask(1)[0]
    assert list(one) == list(many) and one
    assert alone.cost(one) == shared.cost(many)
    assert sum(h.plans for h in helpers) > 0  # the helpers planned part of the batches


def test_prefetched_costs_equal_costs_asked_one_by_one_and_count_as_calls(sessions):
    alone, shared, helpers = problems(sessions)
    pairs = [(q, frozenset({c.index})) for q in QUERIES for c in CANDIDATES if c.table in q.tables]
    planned = shared.whatif.prefetch(pairs)
    assert planned > 2 and sum(h.plans for h in helpers) > 0
    before = shared.whatif.calls
    for q, cfg in pairs:
        assert alone.whatif.cost(q, cfg).total == shared.whatif.cost(q, cfg).total
    assert shared.whatif.calls == before  # all planned ahead: nothing planned again
    assert shared.whatif.calls == alone.whatif.calls  # and counted as one session would have


def test_a_statement_the_planner_refuses_still_fails_where_it_is_costed(sessions):
    _alone, shared, _helpers = problems(sessions)
    bad = Query("bad", "SELECT no_such_column FROM orders WHERE o_custkey = 1", 1.0, frozenset({("public", "orders")}))
    good = QUERIES[0]
    shared.whatif.prefetch([(bad, frozenset()), (good, frozenset()), (good, frozenset({CANDIDATES[0].index}))])
    with pytest.raises(BadStatement):
        shared.whatif.cost(bad, frozenset())
    assert shared.whatif.cost(good, frozenset({CANDIDATES[0].index})).total < shared.whatif.cost(good, frozenset()).total


def test_build_problem_plans_on_several_sessions_and_closes_them(db):
    from advisor.tuning.indexes.problem import build_problem
    from connectors.postgres import PostgresConnector
    from tests.conftest import run, scalar
    from workloads.statements.binding import BoundStatement

    # no autovacuum: its own ANALYZE between the two builds would give them other statistics, so other costs
    run(db, "CREATE TABLE t (id int PRIMARY KEY, a int, b int) WITH (autovacuum_enabled = false)",
        "INSERT INTO t SELECT x, x % 5000, x % 7 FROM generate_series(1, 50000) x", "ANALYZE t")
    count = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    idle = scalar(db, count)
    snap = PostgresConnector(db).observe()
    statements = [BoundStatement("a", "SELECT * FROM t WHERE a = $1", "SELECT * FROM t WHERE a = 42", 1.0, "literal",
                                 False),
                  BoundStatement("b", "SELECT * FROM t WHERE b = $1 AND a > $2",
                                 "SELECT * FROM t WHERE b = 3 AND a > 4990", 1.0, "literal", False)]
    problem, session = build_problem(PostgresConnector(db), snap, statements, 10 << 20, sessions=3)
    with session:
        assert problem.whatif.counters()["sessions"] == 3
        assert scalar(db, count) == idle + 3
        many = registry.create("indexes", "extend", problem).ask(1)[0]
    for _ in range(50):  # a closed session leaves pg_stat_activity a moment after its connection closes
        if scalar(db, count) == idle:
            break
        time.sleep(0.1)
    assert scalar(db, count) == idle  # every session closed
    single, session = build_problem(PostgresConnector(db), snap, statements, 10 << 20, sessions=1)
    with session:
        assert single.whatif.counters()["sessions"] == 1
        assert list(registry.create("indexes", "extend", single).ask(1)[0]) == list(many) and many
