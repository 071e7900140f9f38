"""Soundness cases found in review of views, set operations, CTE inlining, keys and nullability: statements the
lowering must refuse (their shape changes rows in a way the algebra does not hold), and statements every form of
whose search, after every rule ran, returns the statement's rows on real PostgreSQL (NULLs, duplicates, a
one-row aggregate, volatile functions, column names two relations share)."""

from __future__ import annotations

import pytest

from optimizers.rewrites.sql.blocks import lower_block
from optimizers.rewrites.sql.emit import to_sql
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.rules import RULES
from optimizers.rewrites.search.egraph import Search
from tests.optimizers.rewrites.test_regressions import shadow
from tests.optimizers.rewrites.sql.test_derived import DATA, SCHEMA, assert_same_rows

REFUSED = {
    "SELECT c.name FROM c WHERE c.id IN (SELECT count(*) OVER () FROM o)": "window",
    "SELECT c.name FROM c WHERE c.id IN (SELECT o.cid FROM o GROUP BY o.cid HAVING count(*) > c.id)":
        "reads the outer query",
    "SELECT c.name FROM c WHERE c.id NOT IN (SELECT DISTINCT ON (o.amount) o.cid FROM o ORDER BY o.amount, o.id)":
        "DISTINCT ON",
    "SELECT c.name FROM c WHERE EXISTS (SELECT count(*) FROM o WHERE o.cid = c.id)": "an aggregate",
    "SELECT c.name FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.cid = c.id OFFSET 1)": "OFFSET",
    "SELECT y.cid FROM o AS y(cid, id)": "renames its columns",
}


@pytest.mark.parametrize("sql", list(REFUSED))
def test_shapes_the_algebra_does_not_hold_are_refused(sql):
    with pytest.raises(Unsupported, match=REFUSED[sql]):
        lower_block(sql, SCHEMA, dialect="postgres")


STATEMENTS = [
    # the statement's own columns unqualified, and a subquery of the same table joined in by a key
    "SELECT cid, amount FROM o WHERE cid IN (SELECT cid FROM o GROUP BY cid HAVING count(*) > 1)",
    "SELECT name, id FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.id = c.id)",
    # two sibling subqueries of one alias, both joined in on a key
    "SELECT c.name FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.id = c.id) "
    "AND EXISTS (SELECT 1 FROM o WHERE o.id = c.id + 1 AND o.amount > 5)",
    # a CTE written in capitals, read in lower case, beside the base table it is drawn from
    "WITH C AS (SELECT o.cid AS id, o.amount FROM o WHERE o.amount > 5) "
    "SELECT c.id, o.amount FROM c JOIN o ON o.cid = c.id WHERE c.id > 1",
    # 5 IN (a, b) rejects no NULL of a: NOT IN over c.name's neighbour stays NOT IN
    "SELECT c.name FROM c WHERE 3 IN (c.id, 3) AND c.id NOT IN (SELECT o.cid FROM o WHERE o.cid IS NOT NULL)",
    # an aggregate only in ORDER BY: one row, whatever the filter above
    "SELECT s.one FROM (SELECT 1 AS one FROM o ORDER BY count(*)) AS s WHERE s.one = 1",
    # a CTE's own column list renamed at its reference
    "WITH x AS (SELECT o.cid AS a, o.amount AS b FROM o) SELECT y.a FROM x AS y(b, a) WHERE y.a > 6",
]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_every_form_after_every_rule_returns_the_statements_rows(db, statement):
    dsn = shadow(db, DATA)
    low = lower_block(statement, SCHEMA, dialect="postgres")
    keys = {"c": (("id",),), "o": (("id",),)}  # the shadow's rows honour them
    search = Search(low, {"c": 1e5, "o": 1e5}, lambda a: 1e-6 if len(a.refs) > 1 else 0.1, keys=keys,
                    not_null=frozenset({("o", "id")}))
    for _ in range(3):
        for rule in RULES:
            search.run(rule)
    forms = {to_sql(term, low) for _, term in search.alternatives(8)} | {to_sql(search.best(), low)}
    for form in sorted(forms):
        assert_same_rows(db, dsn, statement, form, keys)
