"""Blocks: a statement outside the rewriter's subset that holds a SELECT inside it (a derived table's query, a
CTE's, a UNION branch) is searched over that block, and emission puts the block back where it was."""

import pytest

from optimizers.rewrites.sql.emit import to_sql
from optimizers.rewrites.sql.blocks import lower_block
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.search.problem import RewriteProblem
from optimizers.rewrites.search.egraph import Search

SCHEMA = {"t": {"a": "int", "b": "int"}, "u": {"c": "int", "d": "text"}, "v": {"e": "int"}}


def test_the_block_of_most_tables_is_chosen_and_goes_back_in_place():
    sql = ("WITH small AS (SELECT a FROM t WHERE b > 1), big AS (SELECT t.a FROM t, u, v WHERE t.a = u.c "
           "AND u.c = v.e) SELECT * FROM small JOIN big USING (a)")
    low = lower_block(sql, SCHEMA, dialect="postgres")
    assert low.nested.what == "the CTE big's query" and [a for _, a in low.tables] == ["t", "u", "v"]
    assert "WITH" in low.nested.why
    search = Search(low, {"t": 1e6, "u": 10.0, "v": 10.0}, lambda atom: 0.1)
    out = to_sql(search.best(), low)  # the block as written, emitted back into the statement
    assert out.startswith("WITH small AS (SELECT a FROM t WHERE b > 1), big AS (SELECT t.a FROM t")
    assert out.endswith("SELECT * FROM small JOIN big USING (a)")
    assert low.nested.tables() == {"t", "u", "v", "small", "big"}


@pytest.mark.parametrize("sql", [
    "SELECT a.a FROM t AS a LEFT JOIN (t AS b INNER JOIN u AS c ON c.c = b.a) ON b.a = a.a",  # a nested join
    "SELECT * FROM (SELECT 1) AS s",  # the only block has no FROM
    "SELECT * FROM t, LATERAL (SELECT u.c FROM u WHERE u.c = t.a) AS l",  # reads the enclosing query's columns
    "UPDATE t SET a = 1 FROM (SELECT c FROM u) AS s WHERE s.c = t.b",  # only queries are rewritten
])
def test_statements_with_no_block_in_the_subset_keep_their_reason(sql):
    with pytest.raises(Unsupported):
        lower_block(sql, SCHEMA, dialect="postgres")


def test_a_subquery_in_an_expression_is_not_a_block():
    """It may read the enclosing query's columns: only the derived table's query is searched (the statement is
    outside the subset by its RIGHT JOIN; the scalar subquery has more tables, and is still not the block)."""
    sql = ("SELECT s.a FROM (SELECT t.a FROM t, u WHERE t.a = u.c) AS s RIGHT JOIN v AS w ON w.e = s.a "
           "WHERE s.a > (SELECT max(v.e) FROM v, u, t AS t2 WHERE v.e = u.c AND t2.a = u.c AND u.c = s.a)")
    low = lower_block(sql, SCHEMA, dialect="postgres")
    assert low.nested.what == "the derived table s's query" and [a for _, a in low.tables] == ["t", "u"]


def test_a_derived_table_is_searched_with_the_query_around_it():
    """Not a block: a view of the whole statement's term (its query lowered inside it)."""
    sql = "SELECT s.a FROM (SELECT t.a FROM t, u WHERE t.a = u.c) AS s JOIN v ON v.e = s.a WHERE s.a > 3"
    low = lower_block(sql, SCHEMA, dialect="postgres")
    assert low.nested is None and low.tables == (("", "s"), ("v", "v"))
    (view,) = low.views
    assert view.alias == "s" and [a for _, a in view.query.tables] == ["t", "u"]
    assert [(outer, inner.sql) for outer, inner in view.pushes] == [("s.a > 3", "t.a > 3")]


def test_a_statement_inside_the_subset_is_not_a_block():
    problem = RewriteProblem((("q", "SELECT t.a FROM t, u WHERE t.a = u.c"),), SCHEMA, dialect="postgres")
    assert problem.lowered["q"].nested is None and problem.unsupported == {}


def test_statement_rules_leave_a_statement_with_ctes_alone():
    """A CTE may shadow a table: ``c`` below is not the catalog's ``c`` whose key is id (o's foreign key reads the
    catalog's), so its join stays."""
    from optimizers.rewrites.rules.base import Facts
    from optimizers.rewrites.rules.statement import variants

    facts = Facts({"c": {"id": "int", "name": "text"}, "o": {"id": "int", "cid": "int"}},
                  frozenset({("c", "id"), ("o", "cid")}), {"c": (("id",),)}, (("o", ("cid",), "c", ("id",)),),
                  dialect="postgres")
    plain = "SELECT o.id FROM o JOIN c ON c.id = o.cid"
    assert variants(plain, facts)[0][1] == ("drop_join_on_foreign_key",)  # the catalog's c: each o meets one c
    shadowed = "WITH c AS (SELECT 1 AS id FROM c AS c0 UNION ALL SELECT 1) SELECT o.id FROM o JOIN c ON c.id = o.cid"
    assert variants(shadowed, facts) == [(shadowed, ())]


@pytest.mark.parametrize("sql", ["SELECT * FROM t JOIN u ON u.c = t.a JOIN v USING (e)",
                                 "SELECT a FROM t NATURAL JOIN t AS t2"])
def test_using_and_natural_joins_are_outside_the_subset(sql):
    """The qualification would turn them into ON, and SELECT * would then read both sides' merged column."""
    from optimizers.rewrites.sql.lower import lower

    with pytest.raises(Unsupported, match="USING and NATURAL"):
        lower(sql, {**SCHEMA, "v": {"e": "int"}}, dialect="postgres")
