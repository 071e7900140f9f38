"""Golden tests of the statement-level rules (``optimizers.rewrites.rules.statement``): per rule, inputs and the SQL
they must become, inputs their guards must leave alone (where the rewrite would change the rows), and each rewrite
checked by execution on real PostgreSQL (edge-case databases whose rows honour the keys); without the keys, the
same rewrites are caught as wrong (the check databases do break what the rules rely on)."""

import pytest

from advisor.tuning.rewrites.equivalence import check
from connectors import factory
from optimizers.rewrites.rules.base import Facts
from optimizers.rewrites.rules.statement import STATEMENT_RULES, variants

SCHEMA = {"c": {"id": "integer", "name": "text", "email": "text"},
          "o": {"id": "integer", "cid": "integer", "ref": "integer", "v": "integer"}}
NOT_NULL = frozenset({("c", "id"), ("o", "id"), ("o", "cid")})
FACTS = Facts(SCHEMA, NOT_NULL, {"c": (("id",), ("email",)), "o": (("id",),)},
              (("o", ("cid",), "c", ("id",)), ("o", ("ref",), "c", ("id",))), dialect="postgres")

GOLDEN = [  # (rule, input, expected)
    ("simplify_predicates", "SELECT o.id FROM o WHERE o.v > 5 AND o.v > 3 AND 1 = 1",
     "SELECT o.id FROM o WHERE o.v > 5"),
    ("simplify_predicates", "SELECT c.name FROM o JOIN c ON c.id = o.cid AND NOT (c.name <> 'a') WHERE o.v = 1 + 1",
     "SELECT c.name FROM o JOIN c ON c.id = o.cid AND c.name = 'a' WHERE o.v = 2"),
    ("drop_join_on_foreign_key", "SELECT o.v FROM o JOIN c ON o.cid = c.id WHERE o.v > 2",
     "SELECT o.v FROM o WHERE o.v > 2"),
    ("join_on_key_to_exists", "SELECT o.v FROM o JOIN c ON c.id = o.ref AND c.name = 'x'",
     "SELECT o.v FROM o WHERE EXISTS(SELECT 1 FROM c WHERE c.id = o.ref AND c.name = 'x')"),
    ("or_to_union_all", "SELECT o.id FROM o WHERE o.v = 1 OR o.cid = 2",
     "SELECT o.id FROM o WHERE o.v = 1 UNION ALL SELECT o.id FROM o WHERE o.cid = 2 AND (o.v = 1) IS NOT TRUE"),
    ("prune_derived_columns", "SELECT s.cid, s.n FROM (SELECT o.cid, count(*) AS n, max(o.v) AS m, o.cid + 1 AS k "
     "FROM o GROUP BY o.cid) AS s WHERE s.n > 1",
     "SELECT s.cid, s.n FROM (SELECT o.cid, COUNT(*) AS n FROM o GROUP BY o.cid) AS s WHERE s.n > 1"),
    ("prune_derived_columns", "SELECT count(*) AS n FROM (SELECT o.id, o.v FROM o) AS s",  # one item stays
     "SELECT COUNT(*) AS n FROM (SELECT o.id FROM o) AS s"),
    ("prune_derived_columns", "SELECT c.name, (SELECT max(p.v) FROM o AS p WHERE p.id = s.v) AS top FROM c JOIN "
     "(SELECT o.cid, o.v, o.ref FROM o) AS s ON s.cid = c.id",  # read inside a subquery around it
     "SELECT c.name, (SELECT MAX(p.v) FROM o AS p WHERE p.id = s.v) AS top FROM c JOIN "
     "(SELECT o.cid, o.v FROM o) AS s ON s.cid = c.id"),
]
LEFT_ALONE = [  # (rule, input): its guard must refuse
    ("simplify_predicates", "SELECT o.id FROM o WHERE o.v > 5 AND o.cid < 3"),  # nothing to simplify
    ("drop_join_on_foreign_key", "SELECT o.v FROM o JOIN c ON o.ref = c.id"),  # o.ref is nullable
    ("drop_join_on_foreign_key", "SELECT o.v, c.name FROM o JOIN c ON o.cid = c.id"),  # c is read
    ("join_on_key_to_exists", "SELECT c.name FROM c JOIN o ON o.cid = c.id"),  # o.cid is no key of o
    ("or_to_union_all", "SELECT DISTINCT o.v FROM o WHERE o.v = 1 OR o.cid = 2"),
    ("or_to_union_all", "SELECT count(*) FROM o WHERE o.v = 1 OR o.cid = 2"),
    ("or_to_union_all", "SELECT o.v FROM o WHERE o.v = 1 OR o.cid = 2 ORDER BY o.v"),
    ("prune_derived_columns", "SELECT s.* FROM (SELECT o.id, o.v FROM o) AS s"),  # every column read
    ("prune_derived_columns", "SELECT s.id FROM (SELECT DISTINCT o.id, o.v FROM o) AS s"),  # v makes rows distinct
    ("prune_derived_columns", "SELECT s.id FROM (SELECT o.id, o.v FROM o ORDER BY 2 LIMIT 3) AS s"),  # position
    ("prune_derived_columns", "SELECT s.id FROM (SELECT o.id, o.v AS w FROM o ORDER BY w LIMIT 3) AS s"),  # named
    ("prune_derived_columns", "SELECT s.id FROM (SELECT o.id, generate_series(1, o.v) AS g FROM o) AS s"),  # SRF
    ("prune_derived_columns", "SELECT s.id FROM (SELECT o.id, o.v FROM o) AS s JOIN c USING (id)"),  # USING
    ("prune_derived_columns", "SELECT s.id, to_json(s) AS j FROM (SELECT o.id, o.v FROM o) AS s"),  # whole row
    ("prune_derived_columns", "SELECT s.id, row_to_json(s.*) FROM (SELECT o.id, o.v FROM o) AS s"),  # whole row
    ("prune_derived_columns", "SELECT v FROM (SELECT o.v, c.id AS v2 FROM o, c) AS s WHERE v2 > 1"),  # unqualified
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
    verdict = check(factory.connector(db), SCHEMA, sql, expected, not_null=NOT_NULL, keys=FACTS.keys, foreign_keys=FACTS.foreign_keys)
    assert verdict.equivalent, verdict.mismatch


def test_every_rule_is_named_documented_and_listed_once():
    names = [r.name for r in STATEMENT_RULES]
    assert len(names) == len(set(names)) and all(r.doc.strip() for r in STATEMENT_RULES)


KEYED = [g for g in GOLDEN if g[0] == "drop_join_on_foreign_key"]


@pytest.mark.parametrize("rule,sql,expected", KEYED, ids=[f"{g[0]}-{i}" for i, g in enumerate(KEYED)])
def test_without_the_keys_the_check_catches_what_they_allow(db, rule, sql, expected):
    assert not check(factory.connector(db), SCHEMA, sql, expected, not_null=NOT_NULL).equivalent
