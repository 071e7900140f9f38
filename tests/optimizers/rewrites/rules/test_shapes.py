"""Golden tests of the statement-level rules for the shapes beyond decorrelation (``rules.semijoins``,
``rules.or_split``, ``rules.eager``, ``rules.ctes``, ``rules.windows``, ``rules.unions``): per rule, inputs and the SQL they must become, inputs
their guards must leave alone (where the rewrite would change the rows or gains nothing), and every golden rewrite
checked by execution on real PostgreSQL and MariaDB (edge-case databases whose rows honour the keys, NULLs in every
nullable column). The NULL semantics of NOT IN are shown to matter: the plain anti-join is caught as wrong."""

import pytest

from advisor.tuning.rewrites.equivalence import check
from connectors import factory
from optimizers.rewrites.rules.base import Facts
from optimizers.rewrites.rules.statement import variants
from workloads.datasets.sqlsource import to_dialect

SCHEMA = {"c": {"id": "integer", "name": "text", "seg": "integer"},
          "o": {"id": "integer", "cid": "integer", "ref": "integer", "v": "integer", "w": "numeric(10,2)"}}
NOT_NULL = frozenset({("c", "id"), ("o", "id")})
KEYS = {"c": (("id",),), "o": (("id",),)}
FKS = (("o", ("cid",), "c", ("id",)), ("o", ("ref",), "c", ("id",)))
FACTS = Facts(SCHEMA, NOT_NULL, KEYS, FKS, dialect="postgres")

GOLDEN = [  # (rule, input, expected)
    ("correlated_in_to_exists",
     "SELECT o.id FROM o WHERE o.v IN (SELECT p.v FROM o AS p WHERE p.cid = o.cid AND p.id <> o.id)",
     "SELECT o.id FROM o WHERE EXISTS(SELECT 1 FROM o AS p WHERE p.cid = o.cid AND p.id <> o.id AND p.v = o.v)"),
    ("not_in_to_not_exists",  # both sides nullable: the NULL checks of both
     "SELECT c.id FROM c WHERE c.seg NOT IN (SELECT o.cid FROM o WHERE o.v > 1)",
     "SELECT c.id FROM c WHERE NOT EXISTS(SELECT 1 FROM o WHERE o.v > 1 AND o.cid = c.seg) AND NOT EXISTS(SELECT 1 "
     "FROM o WHERE o.v > 1 AND o.cid IS NULL) AND (NOT c.seg IS NULL OR NOT EXISTS(SELECT 1 FROM o WHERE o.v > 1))"),
    ("not_in_to_not_exists",  # x declared NOT NULL, y nullable
     "SELECT c.name FROM c WHERE c.id NOT IN (SELECT o.cid FROM o)",
     "SELECT c.name FROM c WHERE NOT EXISTS(SELECT 1 FROM o WHERE o.cid = c.id) AND NOT EXISTS(SELECT 1 FROM o "
     "WHERE o.cid IS NULL)"),
    ("not_in_to_not_exists",  # both never NULL (y by a strict condition beside it): the anti-join alone
     "SELECT c.name FROM c WHERE c.id NOT IN (SELECT o.ref FROM o WHERE o.ref > 2)",
     "SELECT c.name FROM c WHERE NOT EXISTS(SELECT 1 FROM o WHERE o.ref > 2 AND o.ref = c.id)"),
    ("exists_to_left_join",
     "SELECT c.id, c.name FROM c WHERE c.seg = 1 OR EXISTS (SELECT 1 FROM o WHERE o.cid = c.id AND o.v > 2) "
     "ORDER BY c.id",
     "SELECT c.id, c.name FROM c LEFT JOIN (SELECT o.cid AS y1 FROM o WHERE o.v > 2 GROUP BY o.cid) AS o_k1 "
     "ON o_k1.y1 = c.id WHERE c.seg = 1 OR NOT o_k1.y1 IS NULL ORDER BY c.id"),
    ("exists_to_left_join",  # NOT EXISTS under OR
     "SELECT c.id FROM c WHERE c.seg = 1 OR NOT EXISTS (SELECT 1 FROM o WHERE o.ref = c.id)",
     "SELECT c.id FROM c LEFT JOIN (SELECT o.ref AS y1 FROM o GROUP BY o.ref) AS o_k1 ON o_k1.y1 = c.id "
     "WHERE c.seg = 1 OR o_k1.y1 IS NULL"),
    ("or_split",  # an OR of two edges in ON; the sort key not selected travels under a name of its own
     "SELECT c.name, o.v FROM o JOIN c ON o.cid = c.id OR o.ref = c.id WHERE o.v > 1 ORDER BY o.id LIMIT 5",
     "SELECT u._c1 AS name, u._c2 AS v FROM (SELECT c.name AS _c1, o.v AS _c2, o.id AS _o3 FROM o JOIN c ON "
     "o.cid = c.id WHERE o.v > 1 UNION ALL SELECT c.name AS _c1, o.v AS _c2, o.id AS _o3 FROM o JOIN c ON "
     "o.ref = c.id WHERE o.v > 1 AND (o.cid = c.id) IS NOT TRUE) AS u ORDER BY u._o3 LIMIT 5"),
    ("or_split",  # a filter OR an EXISTS, ordered
     "SELECT c.id, c.name FROM c WHERE c.seg = 1 OR EXISTS (SELECT 1 FROM o WHERE o.cid = c.id) ORDER BY c.id",
     "SELECT u._c1 AS id, u._c2 AS name FROM (SELECT c.id AS _c1, c.name AS _c2 FROM c WHERE c.seg = 1 UNION ALL "
     "SELECT c.id AS _c1, c.name AS _c2 FROM c WHERE EXISTS(SELECT 1 FROM o WHERE o.cid = c.id) AND (c.seg = 1) "
     "IS NOT TRUE) AS u ORDER BY u._c1"),
    ("eager_aggregate",
     "SELECT c.seg, count(*) AS n, sum(o.v) AS total, max(o.w) AS top FROM o JOIN c ON o.cid = c.id "
     "WHERE o.v > 0 AND c.name <> 'x' GROUP BY c.seg HAVING count(*) > 1 ORDER BY n DESC, c.seg",
     "SELECT c.seg, CAST(SUM(eager.a1) AS BIGINT) AS n, CAST(SUM(eager.a2) AS BIGINT) AS total, MAX(eager.a3) AS "
     "top FROM (SELECT o.cid AS k1, COUNT(*) AS a1, SUM(o.v) AS a2, MAX(o.w) AS a3, COUNT(*) AS a4 FROM o "
     "WHERE o.v > 0 GROUP BY o.cid) AS eager JOIN c ON eager.k1 = c.id WHERE c.name <> 'x' GROUP BY c.seg "
     "HAVING CAST(SUM(eager.a4) AS BIGINT) > 1 ORDER BY n DESC, c.seg"),
    ("inline_ctes",
     "WITH g AS (SELECT o.cid AS k, count(*) AS n FROM o GROUP BY o.cid) SELECT g1.k, g1.n FROM g AS g1 "
     "WHERE g1.k < 5 AND g1.n >= (SELECT avg(g2.n) FROM g AS g2 WHERE g2.k < 5) ORDER BY g1.k",
     "SELECT g1.k, g1.n FROM (SELECT o.cid AS k, COUNT(*) AS n FROM o GROUP BY o.cid) AS g1 WHERE g1.k < 5 AND "
     "g1.n >= (SELECT AVG(g2.n) FROM (SELECT o.cid AS k, COUNT(*) AS n FROM o GROUP BY o.cid) AS g2 "
     "WHERE g2.k < 5) ORDER BY g1.k"),
]
GOLDEN += [
    ("push_into_ctes",  # both readings filtered on the grouping column: their OR moves below the grouping
     "WITH g AS (SELECT o.cid AS k, count(*) AS n FROM o WHERE o.v > 0 GROUP BY o.cid) SELECT g1.k, g1.n FROM g AS g1 "
     "WHERE g1.k < 5 AND g1.n >= (SELECT avg(g2.n) FROM g AS g2 WHERE g2.k > 7) ORDER BY g1.k",
     "WITH g AS (SELECT o.cid AS k, COUNT(*) AS n FROM o WHERE o.v > 0 AND ((o.cid < 5) OR (o.cid > 7)) "
     "GROUP BY o.cid) SELECT g1.k, g1.n FROM g AS g1 WHERE g1.k < 5 AND g1.n >= (SELECT AVG(g2.n) FROM g AS g2 "
     "WHERE g2.k > 7) ORDER BY g1.k"),
]
GOLDEN += [
    ("window_joinback",  # the same filter in and out; cid nullable: its NULLs, which the join dropped, dropped
     "SELECT o.id, o.v FROM o JOIN (SELECT p.cid, avg(p.v) AS m FROM o AS p WHERE p.w > 1 GROUP BY p.cid) AS g "
     "ON o.cid = g.cid WHERE o.w > 1 AND o.v > g.m ORDER BY o.id",
     "SELECT o.id, o.v FROM (SELECT o.id, o.cid, o.v, AVG(o.v) OVER (PARTITION BY o.cid) AS m FROM o WHERE o.w > 1 "
     "AND NOT o.cid IS NULL) AS o WHERE o.m < o.v ORDER BY o.id"),
    ("window_joinback",  # a CTE read once; its integer key read outside, under its name
     "WITH g AS (SELECT p.ref AS r, max(p.w) AS top, count(*) AS n FROM o AS p GROUP BY p.ref) SELECT o.id, g.r, "
     "g.n FROM o JOIN g ON g.r = o.ref WHERE o.w = g.top ORDER BY o.id",
     "SELECT o.id, o.ref AS r, o.n FROM (SELECT o.id, o.ref, o.w, MAX(o.w) OVER (PARTITION BY o.ref) AS top, "
     "COUNT(*) OVER (PARTITION BY o.ref) AS n FROM o WHERE NOT o.ref IS NULL) AS o WHERE o.w = o.top ORDER BY o.id"),
    ("window_joinback",  # a key declared NOT NULL; the outer's own extra condition stays above the window
     "SELECT a.id, a.w - g.m AS d FROM o AS a JOIN (SELECT b.id, sum(b.w) AS m FROM o AS b WHERE b.v BETWEEN 1 "
     "AND 5 GROUP BY b.id) AS g ON a.id = g.id WHERE a.v BETWEEN 1 AND 5 AND a.cid > 2 ORDER BY d, a.id",
     "SELECT a.id, a.w - a.m AS d FROM (SELECT a.id, a.cid, a.w, SUM(a.w) OVER (PARTITION BY a.id) AS m FROM o AS a "
     "WHERE a.v BETWEEN 1 AND 5) AS a WHERE a.cid > 2 ORDER BY d, a.id"),
    ("push_into_unions",  # by position: u.k is o.cid in one branch, c.id in the other
     "SELECT u.k, count(*) AS n FROM (SELECT o.cid AS k, o.v FROM o UNION ALL SELECT c.id, c.seg FROM c) AS u "
     "WHERE u.k BETWEEN 2 AND 5 GROUP BY u.k ORDER BY u.k",
     "SELECT u.k, COUNT(*) AS n FROM (SELECT o.cid AS k, o.v FROM o WHERE o.cid <= 5 AND o.cid >= 2 UNION ALL "
     "SELECT c.id, c.seg FROM c WHERE c.id <= 5 AND c.id >= 2) AS u GROUP BY u.k ORDER BY u.k"),
    ("push_into_unions",  # a UNION ALL CTE read twice, both readings filtered: their OR in each branch
     "WITH u AS (SELECT o.cid AS k, o.v FROM o UNION ALL SELECT c.id, c.seg FROM c) SELECT u1.k, count(*) AS n "
     "FROM u AS u1 WHERE u1.k < 4 GROUP BY u1.k HAVING 10 * count(*) >= (SELECT count(*) FROM u AS u2 "
     "WHERE u2.k > 1) ORDER BY u1.k",
     "WITH u AS (SELECT o.cid AS k, o.v FROM o WHERE ((o.cid < 4) OR (o.cid > 1)) UNION ALL SELECT c.id, c.seg "
     "FROM c WHERE ((c.id < 4) OR (c.id > 1))) SELECT u1.k, COUNT(*) AS n FROM u AS u1 WHERE u1.k < 4 GROUP BY "
     "u1.k HAVING 10 * COUNT(*) >= (SELECT COUNT(*) FROM u AS u2 WHERE u2.k > 1) ORDER BY u1.k"),
    ("push_into_unions",  # UNION (distinct): the plain column predicate moves, abs() of the value stays
     "SELECT u.k, u.v FROM (SELECT o.cid AS k, o.v FROM o UNION SELECT c.id, c.seg FROM c) AS u "
     "WHERE (u.k IS NULL OR u.k > 3) AND abs(u.v) > 2",
     "SELECT u.k, u.v FROM (SELECT o.cid AS k, o.v FROM o WHERE (o.cid IS NULL OR o.cid > 3) UNION SELECT c.id, "
     "c.seg FROM c WHERE (c.id IS NULL OR c.id > 3)) AS u WHERE ABS(u.v) > 2"),
    ("union_to_or",
     "SELECT o.cid, o.v FROM o WHERE o.w > 2 UNION SELECT p.cid, p.v FROM o AS p WHERE p.v IS NULL OR p.cid = 1",
     "SELECT DISTINCT o.cid, o.v FROM o WHERE (o.w > 2) OR (o.v IS NULL OR o.cid = 1)"),
]
LEFT_ALONE = [  # (rule, input): its guard must refuse
    ("correlated_in_to_exists", "SELECT o.id FROM o WHERE o.v IN (SELECT c.seg FROM c)"),  # uncorrelated: a join
    ("correlated_in_to_exists",  # grouped: not a plain semi-join's right side
     "SELECT o.id FROM o WHERE o.v IN (SELECT p.v FROM o AS p WHERE p.cid = o.cid GROUP BY p.v)"),
    ("not_in_to_not_exists",  # a row of nullable columns: NOT IN's NULLs are per column
     "SELECT c.id FROM c WHERE (c.id, c.seg) NOT IN (SELECT o.cid, o.v FROM o)"),
    ("not_in_to_not_exists", "SELECT c.id FROM c WHERE c.seg = 1 OR c.id NOT IN (SELECT o.cid FROM o)"),  # in OR
    ("not_in_to_not_exists",  # the outer column read again inside the subquery's alias: it would be captured
     "SELECT o.id FROM o WHERE o.v NOT IN (SELECT o.v FROM o WHERE o.id > 1)"),
    ("exists_to_left_join", "SELECT c.id FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.cid = c.id)"),  # a semi-join
    ("exists_to_left_join",  # correlated by more than equalities
     "SELECT c.id FROM c WHERE c.seg = 1 OR EXISTS (SELECT 1 FROM o WHERE o.v > c.seg)"),
    ("or_split", "SELECT DISTINCT c.name FROM o JOIN c ON o.cid = c.id OR o.ref = c.id"),  # DISTINCT
    ("or_split", "SELECT c.name FROM c LEFT JOIN o ON o.cid = c.id OR o.ref = c.id ORDER BY 1"),  # LEFT JOIN
    ("or_split", "SELECT count(*) FROM o JOIN c ON o.cid = c.id OR o.ref = c.id"),  # an aggregate
    ("eager_aggregate", "SELECT o.v, count(*) FROM c JOIN o ON o.cid = c.id GROUP BY o.v"),  # o.cid: no key of o
    ("eager_aggregate", "SELECT c.seg, avg(o.v) FROM o JOIN c ON o.cid = c.id GROUP BY c.seg"),  # avg
    ("eager_aggregate", "SELECT c.seg, count(DISTINCT o.v) FROM o JOIN c ON o.cid = c.id GROUP BY c.seg"),
    ("eager_aggregate", "SELECT c.seg, sum(o.v) FROM o JOIN c ON o.cid = c.id WHERE o.v > c.seg GROUP BY c.seg"),
    ("push_into_ctes",  # one reading unfiltered: it needs every row
     "WITH g AS (SELECT o.cid AS k, count(*) AS n FROM o GROUP BY o.cid) SELECT g1.k FROM g AS g1 WHERE g1.k < 5 "
     "AND g1.n >= (SELECT avg(g2.n) FROM g AS g2)"),
    ("push_into_ctes",  # a filter on the count: not row by row
     "WITH g AS (SELECT o.cid AS k, count(*) AS n FROM o GROUP BY o.cid) SELECT g1.k FROM g AS g1, g AS g2 "
     "WHERE g1.n > 2 AND g2.n > 2"),
    ("inline_ctes", "WITH g AS (SELECT o.cid FROM o) SELECT g.cid FROM g"),  # read once: inlined by the planner
    ("inline_ctes", "WITH g AS MATERIALIZED (SELECT o.cid FROM o) SELECT g1.cid FROM g AS g1, g AS g2"),
    ("inline_ctes", "WITH g AS (SELECT random() AS r FROM o) SELECT g1.r FROM g AS g1 JOIN g AS g2 ON g1.r = g2.r"),
    ("window_joinback",  # a filter inside only: the outer rows need not be the grouped rows
     "SELECT o.id FROM o JOIN (SELECT p.cid, avg(p.v) AS m FROM o AS p WHERE p.v > 1 GROUP BY p.cid) AS g "
     "ON o.cid = g.cid WHERE o.v > g.m"),
    ("window_joinback",  # joined on one of two grouping columns: a row meets several groups
     "SELECT o.id FROM o JOIN (SELECT p.cid, p.ref, avg(p.v) AS m FROM o AS p GROUP BY p.cid, p.ref) AS g "
     "ON o.cid = g.cid WHERE o.v > g.m"),
    ("window_joinback",  # DISTINCT: no window takes it
     "SELECT o.id FROM o JOIN (SELECT p.cid, count(DISTINCT p.v) AS m FROM o AS p GROUP BY p.cid) AS g "
     "ON o.cid = g.cid WHERE o.v > g.m"),
    ("window_joinback",  # an outer join keeps rows without a group
     "SELECT o.id FROM o LEFT JOIN (SELECT p.cid, avg(p.v) AS m FROM o AS p GROUP BY p.cid) AS g "
     "ON o.cid = g.cid WHERE o.v > g.m"),
    ("window_joinback",  # another table
     "SELECT o.id FROM o JOIN (SELECT c.id, avg(c.seg) AS m FROM c GROUP BY c.id) AS g ON o.cid = g.id "
     "WHERE o.v > g.m"),
    ("window_joinback",  # a numeric key read outside: the group shows one of 1.0 and 1.00
     "SELECT o.id, g.w FROM o JOIN (SELECT p.w, count(*) AS n FROM o AS p GROUP BY p.w) AS g ON o.w = g.w "
     "WHERE g.n > 1"),
    ("push_into_unions",  # numeric in one branch, integer in the other
     "SELECT u.x FROM (SELECT o.w AS x FROM o UNION ALL SELECT c.seg FROM c) AS u WHERE u.x > 1"),
    ("push_into_unions",  # every branch holds the filter already: nothing to do
     "SELECT u.k FROM (SELECT o.cid AS k FROM o WHERE o.cid > 1 UNION ALL SELECT c.id FROM c WHERE c.id > 1) AS u "
     "WHERE u.k > 1"),
    ("push_into_unions",  # UNION (distinct), a function of the value
     "SELECT u.k FROM (SELECT o.cid AS k, o.v FROM o UNION SELECT c.id, c.seg FROM c) AS u WHERE abs(u.v) > 2"),
    ("push_into_unions",  # a CTE reading without a filter needs every row
     "WITH u AS (SELECT o.cid AS k FROM o UNION ALL SELECT c.id FROM c) SELECT u1.k FROM u AS u1 WHERE u1.k < 4 "
     "AND u1.k IN (SELECT u2.k FROM u AS u2)"),
    ("union_to_or", "SELECT o.cid FROM o WHERE o.w > 2 UNION ALL SELECT p.cid FROM o AS p WHERE p.v IS NULL"),
    ("union_to_or", "SELECT o.cid FROM o WHERE o.w > 2 INTERSECT SELECT p.cid FROM o AS p WHERE p.v IS NULL"),
    ("union_to_or", "SELECT o.cid FROM o WHERE o.w > 2 UNION SELECT p.ref FROM o AS p WHERE p.v IS NULL"),
]


def produced(rule: str, sql: str) -> list[str]:
    return [text for text, rules in variants(sql, FACTS) if rule in rules]


@pytest.mark.parametrize("rule,sql,expected", GOLDEN, ids=[f"{g[0]}-{i}" for i, g in enumerate(GOLDEN)])
def test_golden(rule, sql, expected):
    assert produced(rule, sql) == [expected]


@pytest.mark.parametrize("rule,sql", LEFT_ALONE, ids=[f"{g[0]}-{i}" for i, g in enumerate(LEFT_ALONE)])
def test_guarded(rule, sql):
    assert produced(rule, sql) == []


@pytest.mark.parametrize("rule,sql,expected", GOLDEN, ids=[f"{g[0]}-{i}" for i, g in enumerate(GOLDEN)])
def test_every_golden_rewrite_returns_the_same_rows(db, rule, sql, expected):
    verdict = check(factory.connector(db), SCHEMA, sql, expected, not_null=NOT_NULL, keys=KEYS, foreign_keys=FKS)
    assert verdict.equivalent, verdict.mismatch


@pytest.mark.parametrize("rule,sql,expected", GOLDEN, ids=[f"{g[0]}-{i}" for i, g in enumerate(GOLDEN)])
def test_every_golden_rewrite_returns_the_same_rows_on_mariadb(maria, rule, sql, expected):
    """The same pairs written in MariaDB's SQL (the rules hold in every dialect: ``DIALECTS``) and checked there."""
    name = f"shape_{GOLDEN.index((rule, sql, expected))}"
    maria.create_database(name)
    original, rewritten = (to_dialect(s, "postgres", "mariadb") for s in (sql, expected))
    verdict = check(maria.connector(name), SCHEMA, original, rewritten, not_null=NOT_NULL, keys=KEYS,
                    foreign_keys=FKS)
    assert verdict.equivalent, verdict.mismatch


MINE = [g for g in GOLDEN if g[0] in ("window_joinback", "push_into_unions", "union_to_or")]


@pytest.mark.parametrize("rule,sql,expected", MINE, ids=[f"{g[0]}-{i}" for i, g in enumerate(MINE)])
def test_windows_and_unions_rewrite_in_mariadbs_own_dialect(maria, rule, sql, expected):
    """Read and written as MariaDB (no predicate simplification there: its filters are compared as written), the
    statement gets the rule's form, and that form returns the same rows on MariaDB."""
    facts = Facts(SCHEMA, NOT_NULL, KEYS, FKS, dialect="mariadb")
    original = to_dialect(sql, "postgres", "mariadb")
    (rewritten,) = [text for text, rules in variants(original, facts) if rule in rules]
    name = f"shape_maria_{MINE.index((rule, sql, expected))}"
    maria.create_database(name)
    verdict = check(maria.connector(name), SCHEMA, original, rewritten, not_null=NOT_NULL, keys=KEYS,
                    foreign_keys=FKS)
    assert verdict.equivalent, verdict.mismatch


def test_not_in_over_nullable_columns_is_no_anti_join(db):
    """What ``not_in_to_not_exists`` adds is needed: the plain anti-join of a NOT IN over nullable columns returns
    other rows on the check databases."""
    sql = "SELECT c.id FROM c WHERE c.seg NOT IN (SELECT o.cid FROM o WHERE o.v > 1)"
    naive = "SELECT c.id FROM c WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.v > 1 AND o.cid = c.seg)"
    assert not check(factory.connector(db), SCHEMA, sql, naive, not_null=NOT_NULL, keys=KEYS,
                     foreign_keys=FKS).equivalent
