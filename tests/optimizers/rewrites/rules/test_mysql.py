"""The rewriter in MySQL's (and MariaDB's) semantics: golden pairs read and written in the ``mysql`` dialect for the
rules that hold there, and the rules that do not, left out with their reason.

Checked against MySQL semantics, rule module by rule module (``optimizers.rewrites.rules``):
- ``pushdown``, ``joins``: a filter's value on a row does not depend on where it is evaluated; NULL-rejection is
  read off strict comparisons, as NULL compares there too (``<=>`` is NULL-safe: lenient). ``||`` is OR in MySQL
  (sqlglot reads it so), never concatenation. Only inner, LEFT, semi (EXISTS) and anti (NOT EXISTS) joins are
  written: no FULL OUTER or LATERAL join, which MariaDB lacks.
- ``nulls``: ``x NOT IN (SELECT y ...)`` and ``NOT EXISTS (... y = x)`` compare under the same collation and type
  conversion; with x and y never NULL the two agree.
- ``shell``: a unique key under a case-insensitive collation is unique under the collation DISTINCT compares with;
  a derived table's ORDER BY without LIMIT is ignored by MariaDB itself.
- ``decorrelate``, ``decorrelate_shell``: grouping by the correlation key puts the rows the correlated ``=`` finds
  in one group (same collation); ``TRUE AS v`` is 1; the division guard is stricter than needed (MySQL gives NULL).
- ``statement``: foreign keys are enforced by InnoDB; ``(p) IS NOT TRUE`` and UNION ALL exist.
- left out: ``views`` (a GROUP BY or DISTINCT shows one spelling of strings equal under the collation, and a string
  key compared with a number compares as a number) and ``simplify`` (sqlglot folds ``'a' = 'A'`` to FALSE; MySQL's
  default collation says TRUE).
"""

import pytest

from advisor.tuning.rewrites.tables import tables_named
from optimizers import registry
from optimizers.rewrites.search.problem import RewriteProblem
from optimizers.rewrites.rules import RULES, for_dialect, left_out
from optimizers.rewrites.rules.base import Facts
from optimizers.rewrites.rules.statement import variants
from optimizers.rewrites.sql.scopes import identifier
from optimizers.rewrites.sql.expressions import output_name

import sqlglot

SCHEMA = {"customers": {"id": "int", "name": "varchar(40)", "credit": "decimal(10,2)"},
          "orders": {"id": "int", "customer_id": "int", "amount": "decimal(10,2)", "status": "varchar(10)",
                     "ref": "int"},
          "Order": {"Key": "int", "v": "int"}}
NOT_NULL = frozenset({("customers", "id"), ("orders", "id"), ("orders", "customer_id"), ("Order", "Key")})
KEYS = {"customers": (("id",),), "orders": (("id",),), "Order": (("Key",),)}
FKS = (("orders", ("customer_id",), "customers", ("id",)), ("orders", ("ref",), "customers", ("id",)))
ROWS = {"customers": 1000, "orders": 5000, "Order": 100}
FACTS = Facts(SCHEMA, NOT_NULL, KEYS, FKS, dialect="mysql")

# (statement, the rewrite, the rules that made it): searched by the saturating optimizer in the mysql dialect
GOLDEN = [
    ("SELECT c.id, c.name FROM customers AS c WHERE c.credit > "
     "(SELECT AVG(o.amount) FROM orders AS o WHERE o.customer_id = c.id)",
     "SELECT c.id, c.name FROM customers AS c JOIN (SELECT o.customer_id AS k1, AVG(o.amount) AS v FROM orders AS o "
     "GROUP BY o.customer_id) AS dc1 ON dc1.k1 = c.id AND c.credit > dc1.v", "decorrelate_scalar_aggregate"),
    ("SELECT c.id, (SELECT COUNT(*) FROM orders AS o WHERE o.customer_id = c.id) AS n FROM customers AS c",
     "SELECT c.id, COALESCE(dc1.v, 0) AS n FROM customers AS c LEFT JOIN (SELECT o.customer_id AS k1, COUNT(*) AS v "
     "FROM orders AS o GROUP BY o.customer_id) AS dc1 ON dc1.k1 = c.id", "decorrelate_shell_aggregate"),
    # an unnamed item that was a subquery keeps MySQL's name for it: its text
    ("SELECT c.id, (SELECT MAX(o.amount) FROM orders AS o WHERE o.customer_id = c.id) FROM customers AS c",
     "SELECT c.id, dc1.v AS `(SELECT MAX(o.amount) FROM orders AS o WHERE o.customer_id = c.id)` FROM customers AS c "
     "LEFT JOIN (SELECT o.customer_id AS k1, MAX(o.amount) AS v FROM orders AS o GROUP BY o.customer_id) AS dc1 ON "
     "dc1.k1 = c.id", "decorrelate_shell_aggregate"),
    ("SELECT c.id FROM customers AS c WHERE c.id NOT IN (SELECT o.customer_id FROM orders AS o WHERE o.status = 'x')",
     "SELECT c.id FROM customers AS c WHERE NOT EXISTS(SELECT 1 FROM orders AS o WHERE o.customer_id = c.id AND "
     "o.status = 'x')", "not_in_to_anti_join"),
    ("SELECT c.name, o.amount FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id "
     "WHERE o.status = 'open'",
     "SELECT c.name, o.amount FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE o.status = 'open'",
     "left_join_to_inner"),
    ("SELECT DISTINCT c.id, c.name FROM customers AS c", "SELECT c.id, c.name FROM customers AS c",
     "drop_distinct_over_key"),
    # a reserved, mixed-case table name stays backquoted and as written (MySQL does not fold table names)
    ("SELECT DISTINCT `Order`.`Key` FROM `Order` WHERE `Order`.v > 1",
     "SELECT `Order`.`Key` FROM `Order` WHERE `Order`.v > 1", "drop_distinct_over_key"),
]


def test_left_out_in_mysql_with_why():
    out = left_out("mysql")
    assert set(out) == {"filter_into_view", "semi_join_to_join_on_key", "simplify_predicates"}
    assert "collation" in out["filter_into_view"] and "number" in out["semi_join_to_join_on_key"]
    assert "'a' = 'A'" in out["simplify_predicates"]
    assert all(why.startswith("not valid in mysql: ") for why in out.values())
    kept = for_dialect("mysql")
    assert {r.name for r in RULES} - {r.name for r in kept} == {"filter_into_view", "semi_join_to_join_on_key"}
    assert left_out("postgres") == {}  # PostgreSQL keeps every rule


@pytest.fixture(scope="module")
def rewrites():
    problem = RewriteProblem(tuple((f"q{i}", sql) for i, (sql, _, _) in enumerate(GOLDEN)), SCHEMA, ROWS, NOT_NULL,
                             keys=KEYS, foreign_keys=FKS, dialect="mysql")
    assert problem.unsupported == {}
    opt = registry.create("rewrites", "saturate", problem, seed=0)
    out: dict[str, list] = {}
    for config in opt.ask(3):
        for change in config:
            out.setdefault(change.queryid, []).append(change)
    return out, opt.report()


@pytest.mark.parametrize("i", range(len(GOLDEN)))
def test_golden_pairs_in_mysql(rewrites, i):
    sql, expected, rule = GOLDEN[i]
    forms = rewrites[0][f"q{i}"]
    assert expected in [f.rewritten for f in forms]
    assert any(rule in f.rules for f in forms if f.rewritten == expected)


def test_the_optimizers_report_the_rules_left_out(rewrites):
    assert rewrites[1]["rules_left_out"] == left_out("mysql")


STATEMENT_GOLDEN = [  # (rule, input, expected), statement-level rules in mysql
    ("drop_join_on_foreign_key", "SELECT o.amount FROM orders AS o JOIN customers AS c ON o.customer_id = c.id "
     "WHERE o.amount > 2", "SELECT o.amount FROM orders AS o WHERE o.amount > 2"),
    ("join_on_key_to_exists", "SELECT o.amount FROM orders AS o JOIN customers AS c ON c.id = o.ref AND c.name = 'x'",
     "SELECT o.amount FROM orders AS o WHERE EXISTS(SELECT 1 FROM customers AS c WHERE c.id = o.ref AND "
     "c.name = 'x')"),
    # || is OR in MySQL: the OR's branches become UNION ALL branches
    ("or_to_union_all", "SELECT o.id FROM orders AS o WHERE o.status = 'x' || o.customer_id = 3",
     "SELECT o.id FROM orders AS o WHERE o.status = 'x' UNION ALL SELECT o.id FROM orders AS o WHERE "
     "o.customer_id = 3 AND (o.status = 'x') IS NOT TRUE"),
    ("prune_derived_columns", "SELECT s.customer_id FROM (SELECT o.customer_id, o.amount FROM orders AS o) AS s",
     "SELECT s.customer_id FROM (SELECT o.customer_id FROM orders AS o) AS s"),
]


@pytest.mark.parametrize("rule,sql,expected", STATEMENT_GOLDEN)
def test_statement_rules_in_mysql(rule, sql, expected):
    assert expected in [text for text, rules in variants(sql, FACTS) if rule in rules]


def test_constant_string_comparisons_are_not_folded_in_mysql():
    """'a' = 'A' is TRUE under MySQL's default collation: sqlglot would fold it to FALSE (and drop every row)."""
    sql = "SELECT c.id FROM customers AS c WHERE c.name = 'a' AND 'a' = 'A'"
    assert variants(sql, FACTS) == [(sql, ())]
    pg = Facts(SCHEMA, NOT_NULL, KEYS, FKS, dialect="postgres")
    assert any("simplify_predicates" in rules for _, rules in variants(sql, pg))  # in PostgreSQL it is FALSE


def test_names_as_mysql_reads_and_names_them():
    assert [identifier(n, "mysql").sql(dialect="mysql") for n in ("Order", "order", "a b", "rlike", "x")] == \
        ["`Order`", "`order`", "`a b`", "`rlike`", "x"]
    items = sqlglot.parse_one("SELECT t.a, COUNT(*), a + 1, (SELECT 1) AS s", read="mysql").expressions
    assert [output_name(e, "mysql") for e in items] == ["a", "COUNT(*)", "a + 1", "s"]
    # table names keep their case in MySQL, fold to lower case in PostgreSQL
    assert tables_named("SELECT 1 FROM Orders JOIN `Items` ON 1 = 1", dialect="mysql") == {"Orders", "Items"}
    assert tables_named('SELECT 1 FROM Orders JOIN "Items" ON 1 = 1', dialect="postgres") == {"orders", "Items"}
