"""Views: a derived table in FROM, and a grouped IN subquery, are operators of the statement's term (their own
query searched inside it). What a view's shell allows (``describe``), how a filter moves into it (``push``), the
lowering, and on real PostgreSQL: the forms the view rules make return the statement's rows, and every registered
optimizer proposes only rewrites that do (NULL keys, duplicates, empty groups, empty tables)."""

from __future__ import annotations

import pytest
import sqlglot

from egglog import EGraph, set_

from advisor.tuning.rewrites import equivalence as rewrite_equivalence
from connectors import factory
from optimizers.rewrites.algebra.analyses import analyse, rows as rows_of
from optimizers.rewrites.algebra.terms import Rel
from optimizers.rewrites.sql.blocks import lower_block
from optimizers.rewrites.sql.emit import to_sql
from optimizers.rewrites.sql.lower import lower
from optimizers.rewrites.sql.lowered import VIEW
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.rules import by_name
from optimizers.rewrites.search.egraph import Search
from optimizers.rewrites.sql.setops import lower_query
from optimizers.rewrites.sql.shell_operators import shell
from optimizers.rewrites.sql.derived import describe, push
from tests.optimizers.rewrites.test_regressions import OPTIMIZERS, Case, assert_safe, rows, shadow

SCHEMA = {"c": {"id": "int", "name": "text"}, "o": {"id": "int", "cid": "int", "amount": "numeric"}}


@pytest.mark.parametrize("sql,rows,keys,pushable", [
    ("SELECT o.cid AS cid, sum(o.amount) AS t FROM o GROUP BY o.cid", 100.0, ("cid",), ("cid",)),
    ("SELECT o.cid AS cid, o.id AS id FROM o GROUP BY o.cid, o.id", 100.0, (), ("cid", "id")),
    ("SELECT sum(o.amount) AS t, count(*) AS n FROM o", 1.0, ("t", "n"), ()),  # one row: nothing moves in
    ("SELECT o.cid AS cid, count(*) AS n FROM o GROUP BY o.cid HAVING count(*) > 2", 100 / 3, ("cid",), ("cid",)),
    ("SELECT DISTINCT o.cid AS cid FROM o", 500.0, ("cid",), ("cid",)),
    ("SELECT o.cid AS cid FROM o ORDER BY o.amount LIMIT 3", 3.0, (), ()),  # never past a LIMIT
    ("SELECT o.id AS id, row_number() OVER (ORDER BY o.id) AS r FROM o", 1000.0, (), ()),  # nor a window
    ("SELECT o.id AS id, random() AS r, o.amount * 2 AS a FROM o", 1000.0, (), ("id", "a")),  # volatile
    ("SELECT o.id AS id, generate_series(1, o.cid) AS g FROM o", 1000.0, (), ()),  # set-returning
])
def test_a_views_shape_says_its_keys_and_what_may_move_in_and_its_operators_its_rows(sql, rows, keys, pushable):
    tree = sqlglot.parse_one(sql, read="postgres")
    shape = describe(tree, [e.alias_or_name for e in tree.expressions], dialect="postgres")
    assert (shape.keys, tuple(c for c, _ in shape.pushable)) == (keys, pushable)
    # the rows of the view's query over 1,000 rows of o, as the analyses estimate them from its shell's operators
    term, facts = shell(lower(sql, SCHEMA, dialect="postgres"), Rel.scan("o", "o"), None)
    g = EGraph()
    g.register(term, set_(rows_of(Rel.scan("o", "o"))).to(1000.0), *facts)
    analyse(g)
    assert g.extract(rows_of(term)).value == pytest.approx(rows)


def test_the_planners_count_of_groups_is_a_groupings_rows():
    low = lower("SELECT o.cid AS cid, count(*) AS n FROM o GROUP BY o.cid", SCHEMA, dialect="postgres")
    asked = []
    term, facts = shell(low, Rel.scan("o", "o"), lambda keys: asked.append(keys) or 7.0)
    g = EGraph()
    g.register(term, set_(rows_of(Rel.scan("o", "o"))).to(1000.0), *facts)
    analyse(g)
    assert asked == ["o.cid"] and g.extract(rows_of(term)).value == 7.0


def test_push_rewrites_a_filter_over_the_views_inner_expressions_or_refuses():
    pushable = {"cid": "o.cid", "a": "o.amount * 2"}
    assert push("v.cid = 3 AND v.a > v.cid", "v", pushable, dialect="postgres") == \
        "o.cid = 3 AND (o.amount * 2) > o.cid"
    assert push("v.t > 1", "v", pushable, dialect="postgres") is None  # not pushable (an aggregate's column)
    # volatile: evaluated per row either way, but not moved
    assert push("v.cid > random()", "v", pushable, dialect="postgres") is None
    assert push("v.cid IN (SELECT 1)", "v", pushable, dialect="postgres") is None


def test_a_grouped_in_subquery_is_a_semi_join_with_a_view_keyed_on_its_column():
    low = lower("SELECT c.name FROM c WHERE c.id IN (SELECT o.cid FROM o GROUP BY o.cid HAVING sum(o.amount) > 1)",
                SCHEMA, dialect="postgres")
    (atom,) = low.atoms
    ((table, name),) = atom.sub.tables
    assert atom.kind == "exists" and table == VIEW and name.startswith("sq_")
    (view,) = atom.sub.views
    assert view.shape.keys == ("cid",) and view.written.startswith("(SELECT o.cid AS cid FROM o") \
        and "GROUP BY o.cid HAVING" in view.written
    assert [a.sql for a in atom.sub.atoms] == [f"{name}.cid = c.id"]
    # two grouped IN subqueries of one statement are views of different names
    two = lower("SELECT c.name FROM c WHERE c.id IN (SELECT o.cid FROM o GROUP BY o.cid HAVING count(*) > 1) "
                "AND c.id IN (SELECT o.cid FROM o GROUP BY o.cid HAVING sum(o.amount) > 1)", SCHEMA, dialect="postgres")
    assert len({a.sub.tables[0][1] for a in two.atoms}) == 2
    with pytest.raises(Unsupported, match="reads the outer query"):
        lower("SELECT c.name FROM c WHERE c.id IN (SELECT o.cid FROM o WHERE o.amount > c.id GROUP BY o.cid)", SCHEMA,
              dialect="postgres")


def test_a_derived_table_aliasing_an_outer_name_is_renamed_apart():
    low = lower("SELECT o.cid FROM (SELECT o.cid FROM o) AS o JOIN c ON c.id = o.cid", SCHEMA, dialect="postgres")
    (view,) = low.views
    assert [a for _, a in view.query.tables] == ["o_2"] and "FROM o AS o_2" in view.written


# --- on real PostgreSQL --------------------------------------------------------------------------------------------

DATA = Case(SCHEMA, {"c": 1000, "o": 1000},
            ("INSERT INTO c VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, NULL), (NULL, 'n')",
             "INSERT INTO o VALUES (1, 1, 5), (2, 1, 7), (3, 2, 1), (4, NULL, 20), (5, NULL, 30), (6, 3, NULL), "
             "(7, 2, 12)"))

STATEMENTS = {
    "in-grouped": "SELECT c.name FROM c WHERE c.id IN (SELECT o.cid FROM o GROUP BY o.cid HAVING sum(o.amount) > 6)",
    "not-in-grouped": "SELECT c.name FROM c WHERE c.id NOT IN (SELECT o.cid FROM o GROUP BY o.cid "
                      "HAVING count(*) > 1)",
    "group-key-filter": "SELECT s.cid, s.total FROM (SELECT o.cid, sum(o.amount) AS total FROM o GROUP BY o.cid) "
                        "AS s WHERE s.cid > 1 AND s.total > 5",
    "limit": "SELECT s.cid FROM (SELECT o.cid FROM o ORDER BY o.amount DESC NULLS LAST, o.id LIMIT 3) AS s "
             "WHERE s.cid > 1",
    "window": "SELECT s.id, s.r FROM (SELECT o.id, row_number() OVER (ORDER BY o.id) AS r FROM o) AS s "
              "WHERE s.id > 2",
    "joined-view": "SELECT c.name, s.n FROM c JOIN (SELECT o.cid, count(*) AS n FROM o GROUP BY o.cid) AS s "
                   "ON s.cid = c.id WHERE s.n >= 1 AND c.id < 3",
    "one-row": "SELECT s.total FROM (SELECT sum(o.amount) AS total FROM o) AS s WHERE s.total IS NULL",
    # a CTE read once is inlined as a view, its correlated aggregate decorrelated with the query around it
    "cte": "WITH hi AS (SELECT o.id, o.cid FROM o WHERE o.amount > (SELECT 2 * avg(o2.amount) FROM o AS o2 "
           "WHERE o2.cid = o.cid)) SELECT c.name, count(*) FROM hi JOIN c ON c.id = hi.cid WHERE hi.cid < 3 "
           "GROUP BY c.name",
    "cte-chain": "WITH a AS (SELECT o.cid, o.amount FROM o WHERE o.amount > 1), b AS (SELECT a.cid, max(a.amount) "
                 "AS m FROM a GROUP BY a.cid) SELECT c.name, b.m FROM c LEFT JOIN b ON b.cid = c.id WHERE b.cid > 1",
}


def _forms(sql: str, rule: str) -> list[str]:
    """The forms the search's best holds after the analyses and ``rule`` ran (pushdown rules first, so a filter
    reaches the view), the statement as written first. A join is estimated to keep few pairs, so a join with a
    view is cheaper than the semi-join it replaces."""
    low = lower(sql, SCHEMA, dialect="postgres")
    search = Search(low, {"c": 1e5, "o": 1e5}, lambda a: 1e-6 if len(a.refs) > 1 else 0.1,
                    keys={"c": (("id",),)})
    written = to_sql(search.best(), low)
    for name in ("split_conjunction", "swap_filters", "push_filter_join_right", rule):
        search.run(by_name(name))
    return [written, to_sql(search.best(), low)]


@pytest.mark.parametrize("which,rule,expected", [
    ("in-grouped", "semi_join_to_join_on_key", "JOIN (SELECT o.cid AS cid FROM o GROUP BY o.cid HAVING"),
    ("group-key-filter", "filter_into_view", "FROM o WHERE o.cid > 1 GROUP BY o.cid"),
    ("joined-view", "filter_into_view", None),  # s.n is a count: it stays above the view
    ("limit", "filter_into_view", None),
    ("window", "filter_into_view", None),
    ("one-row", "filter_into_view", None),
])
def test_the_view_rules_forms_return_the_statements_rows(db, which, rule, expected):
    dsn = shadow(db, DATA)
    statement = STATEMENTS[which]
    written, best = _forms(statement, rule)
    if expected is None:
        assert best == written  # nothing to move in: the statement as written
        return
    assert expected in best and expected not in written, best
    assert_same_rows(db, dsn, statement, best)


def assert_same_rows(db: str, dsn: str, statement: str, rewrite: str, keys: dict | None = None) -> None:
    """``rewrite`` returns ``statement``'s rows on the shadow ``dsn`` and on every edge-case database (whose rows
    honour ``keys``, the unique keys the search was told of)."""
    assert rows(dsn, rewrite) == rows(dsn, statement)
    verdict = rewrite_equivalence.check(factory.connector(db), SCHEMA, statement, rewrite, shadow=factory.connector(dsn), keys=keys)
    assert verdict.equivalent, verdict.mismatch


@pytest.mark.parametrize("which", list(STATEMENTS))
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_keeps_the_rows_of_statements_with_views(db, name, which):
    dsn = shadow(db, DATA)
    assert_safe(db, dsn, DATA, STATEMENTS[which], name)


def test_a_cte_read_once_is_inlined_as_a_view_and_others_are_left_as_written():
    low = lower_block(STATEMENTS["cte-chain"], SCHEMA, dialect="postgres")
    assert low.inlined == ("a", "b") and low.nested is None
    (b,) = low.views
    (a,) = b.query.views
    assert (b.alias, a.alias) == ("b", "a")
    for sql, why in [("WITH x AS MATERIALIZED (SELECT o.cid FROM o) SELECT x.cid FROM x", "MATERIALIZED"),
                     ("WITH x AS (SELECT o.cid FROM o) SELECT x.cid FROM x, x AS y", "read 2 times"),
                     ("WITH RECURSIVE x AS (SELECT o.cid FROM o) SELECT x.cid FROM x", "RECURSIVE")]:
        with pytest.raises(Unsupported, match=why):
            lower_query(sql, SCHEMA, dialect="postgres")
