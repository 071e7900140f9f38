"""The rewriter's SQL dialect is data: a problem's dialect (the target's ``connector.dialect``) is the one every
statement is read in, every rewrite written in, and the one that picks the rules (each rule module's ``DIALECTS``)."""

from types import ModuleType

import pytest

from optimizers import registry
from optimizers.rewrites.sql.emit import to_sql
from optimizers.rewrites.sql.lower import lower
from optimizers.rewrites.sql.parsing import Unsupported
from optimizers.rewrites.search.problem import RewriteProblem
from optimizers.rewrites.rules import MODULES, RULES, for_dialect, left_out, pushdown
from optimizers.rewrites.rules.base import Dialects
from optimizers.rewrites.search.egraph import Search

SCHEMA = {"order": {"a": "int", "b": "int"}, "u": {"c": "int", "d": "int"}}
MYSQL = "SELECT o.a FROM `order` AS o, u WHERE o.a = u.c AND o.b > 1 AND u.d < 3"
ROWS = {"order": 1e5, "u": 1e5}


def test_a_statement_is_read_and_written_in_the_problems_dialect():
    low = lower(MYSQL, SCHEMA, dialect="mysql")
    search = Search(low, ROWS, lambda a: 1e-5 if len(a.refs) > 1 else 0.1)
    out = to_sql(search.best(), low)
    assert "`order`" in out and '"order"' not in out  # MySQL's quoting, not PostgreSQL's
    with pytest.raises(Unsupported, match="postgres"):
        lower(MYSQL, SCHEMA, dialect="postgres")  # a backquoted name is not PostgreSQL


def test_the_optimizers_rewrite_in_the_problems_dialect():
    problem = RewriteProblem((("q", MYSQL),), SCHEMA, ROWS, dialect="mysql")
    opt = registry.create("rewrites", "greedy", problem, seed=0)
    (config,) = opt.ask(1)
    (change,) = config
    assert "`order`" in change.rewritten and "JOIN" in change.rewritten
    # the rules that do not hold in MySQL's semantics are left out, each with why (test_mysql.py beside this file)
    assert set(opt.report()["rules_left_out"]) == {"filter_into_view", "semi_join_to_join_on_key",
                                                   "simplify_predicates"}


def test_every_rule_holds_in_postgres():
    assert for_dialect("postgres") == RULES and left_out("postgres") == {}
    problem = RewriteProblem((("q", "SELECT 1 FROM u"),), SCHEMA, dialect="postgres")
    assert problem.left_out == {} and problem.search("q").rules == RULES


def test_a_module_that_does_not_hold_in_a_dialect_leaves_its_rules_out_with_why():
    # a dialect every real module holds in (MySQL leaves some out: tests/optimizers/rewrites/rules/test_mysql.py)
    strict = ModuleType("strict")
    strict.DIALECTS = Dialects(refused=(("sqlite", "NULL-safe comparisons differ"),))
    names = dict(MODULES)[pushdown]
    modules = ((strict, names), *((m, n) for m, n in MODULES if m is not pushdown))
    kept = for_dialect("sqlite", modules)
    assert names and not {r.name for r in kept} & set(names)
    assert [r for r in RULES if r.name not in names] == list(kept)
    assert left_out("sqlite", modules) == {n: "not valid in sqlite: NULL-safe comparisons differ" for n in names}
    assert for_dialect("postgres", modules) == RULES  # refused in sqlite only
    only = Dialects(frozenset({"postgres"}))
    assert only.why_not("postgres") is None and "postgres" in only.why_not("mysql")
