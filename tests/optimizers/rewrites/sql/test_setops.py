"""Set operations: UNION [ALL], INTERSECT and EXCEPT of SELECTs are operators of the statement's term, every
branch searched in the one e-graph and written back in its place; on real PostgreSQL every registered optimizer
proposes only rewrites that return the statement's rows."""

from __future__ import annotations

import pytest

from optimizers.rewrites.sql.blocks import lower_block
from optimizers.rewrites.sql.emit import to_sql
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.search.egraph import Search
from optimizers.rewrites.sql.setops import lower_query
from optimizers.rewrites.search.strategies import greedy
from tests.optimizers.rewrites.test_regressions import OPTIMIZERS, assert_safe, shadow
from tests.optimizers.rewrites.sql.test_derived import DATA, SCHEMA, assert_same_rows

# a correlated scalar aggregate in each branch: each is decorrelated on its own
HIGH = ("SELECT o.id FROM o WHERE o.amount > (SELECT 2 * avg(o2.amount) FROM o AS o2 WHERE o2.cid = o.cid)")
LOW = ("SELECT o.id FROM o WHERE o.amount < (SELECT 0.5 * avg(o3.amount) FROM o AS o3 WHERE o3.cid = o.cid)")
STATEMENTS = {
    "union-all": f"{HIGH} UNION ALL {LOW} ORDER BY 1",
    "union": f"{HIGH} UNION {LOW}",
    "except": f"SELECT c.id FROM c EXCEPT {HIGH}",
    "intersect-all": f"SELECT o.id FROM o WHERE o.cid IS NOT NULL INTERSECT ALL {LOW}",
    # a derived table of the same alias in both branches: a filter on s.v means a different column in each
    "same-alias": "SELECT s.v FROM (SELECT o.cid AS v FROM o) AS s WHERE s.v > 1 UNION ALL "
                  "SELECT s.v FROM (SELECT o.amount AS v FROM o) AS s WHERE s.v > 1",
    "three": f"{HIGH} UNION ALL {LOW} UNION ALL SELECT c.id FROM c WHERE c.id NOT IN (SELECT o.cid FROM o)",
}


@pytest.mark.parametrize("sql,keyword", [(STATEMENTS["union-all"], "UNION ALL"), (STATEMENTS["union"], "UNION"),
                                         (STATEMENTS["except"], "EXCEPT"),
                                         (STATEMENTS["intersect-all"], "INTERSECT ALL")])
def test_a_set_operation_is_an_operator_over_its_branches(sql, keyword):
    low = lower_query(sql, SCHEMA, dialect="postgres")
    assert low.setop[0] == keyword and low.tables == ()
    left, right = low.setop[1:]
    assert not left.every_alias() & right.every_alias()  # renamed apart: no fact of one reaches the other


def test_output_names_stay_as_written_and_unsupported_branches_fall_back_to_a_block():
    low = lower_query("SELECT o.cid, count(*) FROM o GROUP BY o.cid UNION SELECT c.id, 1 FROM c", SCHEMA,
                      dialect="postgres")
    search = Search(low, {"c": 10.0, "o": 10.0}, lambda a: 0.1)
    assert to_sql(search.best(), low).startswith("SELECT o.cid, COUNT(*) FROM o GROUP BY o.cid UNION SELECT c.id, 1")
    parenthesised = f"({HIGH} LIMIT 3) UNION SELECT c.id FROM c, o WHERE o.cid = c.id"
    with pytest.raises(Unsupported):
        lower_query(parenthesised, SCHEMA, dialect="postgres")
    assert lower_block(parenthesised, SCHEMA, dialect="postgres").nested.what == "a branch of the UNION"


def test_every_branch_is_rewritten_in_place_and_keeps_the_rows(db):
    statement = STATEMENTS["union-all"]
    low = lower_query(statement, SCHEMA, dialect="postgres")
    search = Search(low, {"c": 1e4, "o": 1e5}, lambda a: 1e-4 if len(a.refs) > 1 else 0.1)
    greedy(search)
    best = to_sql(search.best(), low)
    assert best.count("GROUP BY") == 2 and "UNION ALL" in best and best.endswith("ORDER BY 1"), best
    assert_same_rows(db, shadow(db, DATA), statement, best)


@pytest.mark.parametrize("which", list(STATEMENTS))
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_keeps_the_rows_of_set_operations(db, name, which):
    assert_safe(db, shadow(db, DATA), DATA, STATEMENTS[which], name)


def test_a_filter_moves_into_the_view_of_its_own_branch():
    low = lower_query(STATEMENTS["same-alias"], SCHEMA, dialect="postgres")
    views = [v for branch in low.setop[1:] for v in branch.views]
    assert [(v.alias, [(outer, inner.sql) for outer, inner in v.pushes]) for v in views] == [
        ("s", [("s.v > 1", "o.cid > 1")]), ("s_2", [("s_2.v > 1", "o_2.amount > 1")])]
