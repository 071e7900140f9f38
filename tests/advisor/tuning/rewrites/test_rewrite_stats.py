"""The rewriter's selectivities come from the planner's estimates on a real server: a selective filter gets a small
fraction, a filter that keeps every row gets 1, a join condition the planner's join estimate; a predicate with a
subquery keeps the default."""

from optimizers.rewrites.search.problem import RewriteProblem, default_selectivity
from tests.conftest import run

SCHEMA = {"t": {"id": "integer", "g": "integer"}, "u": {"tid": "integer", "w": "integer"}}
SQL = ("SELECT t.id FROM t JOIN u ON u.tid = t.id WHERE t.g = 3 AND t.id > 0 "
       "AND EXISTS (SELECT 1 FROM u AS v WHERE v.w = t.g)")


def test_selectivities_are_the_planners(db):
    from advisor.tuning.rewrites.stats import planner_selectivity
    from connectors import factory

    run(db, "CREATE TABLE t (id int PRIMARY KEY, g int)", "CREATE TABLE u (tid int, w int)",
        "INSERT INTO t SELECT x, x % 100 FROM generate_series(1, 10000) x",
        "INSERT INTO u SELECT x % 10000 + 1, x % 7 FROM generate_series(1, 20000) x", "ANALYZE")
    rows = {"t": 10000.0, "u": 20000.0}
    problem = RewriteProblem((("q", SQL),), SCHEMA, rows, dialect="postgres")
    low = problem.lowered["q"]
    sel = planner_selectivity(factory.connector(db), problem.lowered, rows)
    by_sql = {a.sql: a for a in low.atoms}
    assert 0.005 <= sel(by_sql["t.g = 3"]) <= 0.02  # 1 in 100, as ANALYZE saw it
    assert sel(by_sql["t.id > 0"]) > 0.9
    (on,) = low.joins[0][2]
    assert 0.5e-4 <= sel(on) <= 2e-4  # each u row matches one of 10,000 t rows
    exists = next(a for a in low.atoms if a.kind == "exists")
    assert sel(exists) == default_selectivity(exists)
