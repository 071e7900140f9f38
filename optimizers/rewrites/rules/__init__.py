"""The rewrite rules, each a small named unit (``Rule``: a name, what it does, and its egglog ruleset), listed in one
ordered tuple as sqlglot lists its optimizer rules. A rule's guard reads the analyses of
``optimizers.rewrites.algebra.analyses`` (aliases a relation carries, aliases a predicate reads or whose NULLs it
rejects), so a rewrite is only made where it keeps the statement's meaning. Golden tests:
``tests/optimizers/rewrites/rules/test_rules.py``. Expanding rules (``decorrelate``: a WHERE clause's comparison with
a correlated scalar aggregate; ``decorrelate_shell``: the subqueries of a select list, CASE, ORDER BY or HAVING) run
in Python when a statement's term is built and add their form as equal to the written one
(``optimizers.rewrites.search.term``; golden tests: ``tests/optimizers/rewrites/rules/test_decorrelate*.py``).
Statement-level rules (``rules.statement``) rewrite a whole statement's syntax tree; the shapes beyond decorrelation
are each a module of them: ``semijoins`` (correlated IN as EXISTS, NOT IN as NOT EXISTS with its NULLs, an
EXISTS under OR as a LEFT JOIN to its grouped subquery),
``or_split`` (an OR in a join's ON as UNION ALL branches), ``eager`` (aggregation below a join on a key),
``ctes`` (a CTE read twice: its readings' filters pushed into it, or written as derived tables), ``windows`` (a
grouped derived table joined back to its own table as a window function), ``unions`` (a filter on a UNION ALL
derived table or CTE moved into each branch; a UNION of one table's filters as one scan under their OR); golden
tests:
``tests/optimizers/rewrites/rules/test_shapes.py``.

Dialects: a rule keeps a statement's meaning under one engine's semantics, which another's may break (how NULLs
and strings compare, what a GROUP BY may select). Every rule module declares ``DIALECTS`` (``base.Dialects``: the
dialects, by the connectors' dialect keys, it holds in, or why it does not hold in one); ``for_dialect(dialect)``
is ``RULES`` less the rules of the modules that do not hold in ``dialect``, and ``left_out(dialect)`` says which rules (of the e-graph,
the expanding and the statement-level ones) are left out and why, for the optimizers' why-not. The problem's
dialect (``RewriteProblem.dialect``, the target's ``connector.dialect``) picks them. Every rule holds in
``postgres``; in ``mariadb`` and ``mysql`` the view rules (``rules.views``) and the folding of constant
comparisons (``rules.simplify``) do not: strings compare under a collation there (by default without case or
trailing spaces), and a string compared with a number compares as numbers. The reasons of the others, checked
against MySQL's semantics, are in ``tests/optimizers/rewrites/rules/test_mysql.py``.
"""

from __future__ import annotations

from types import ModuleType

from optimizers.rewrites.rules import (ctes, decorrelate, decorrelate_shell, eager, joins, nulls, or_split,
                                      pushdown, semijoins, shell, simplify, statement, unions, views, windows)
from optimizers.rewrites.rules.base import Rule
from optimizers.rewrites.rules.joins import JOIN_RULES
from optimizers.rewrites.rules.nulls import NULL_RULES
from optimizers.rewrites.rules.pushdown import ON_RULES, PUSHDOWN_RULES
from optimizers.rewrites.rules.shell import SHELL_RULES
from optimizers.rewrites.rules.views import VIEW_RULES

RULES: tuple[Rule, ...] = (*PUSHDOWN_RULES, *ON_RULES, *JOIN_RULES, *VIEW_RULES, *NULL_RULES, *SHELL_RULES)

# each rule module with the names of the rules it holds (an expanding module's names are those ``rules.shown`` reports)
MODULES: tuple[tuple[ModuleType, tuple[str, ...]], ...] = (
    (pushdown, tuple(r.name for r in (*PUSHDOWN_RULES, *ON_RULES))),
    (joins, tuple(r.name for r in JOIN_RULES)),
    (views, tuple(r.name for r in VIEW_RULES)),
    (nulls, tuple(r.name for r in NULL_RULES)),
    (shell, tuple(r.name for r in SHELL_RULES)),
    (decorrelate, ("decorrelate_scalar_aggregate",)),
    (decorrelate_shell, decorrelate_shell.NAMES),
    (statement, tuple(r.name for r in statement.STATEMENT_RULES if r.dialects is statement.DIALECTS)),
    (simplify, ("simplify_predicates",)),
    (semijoins, ("correlated_in_to_exists", "exists_to_left_join", "not_in_to_not_exists")),
    (or_split, ("or_split",)),
    (eager, ("eager_aggregate",)),
    (ctes, ("push_into_ctes", "inline_ctes")),
    (windows, ("window_joinback",)),
    (unions, ("push_into_unions", "union_to_or")),
)


def left_out(dialect: str, modules=MODULES) -> dict[str, str]:
    """The rules that do not hold in ``dialect`` (a connector's dialect key), each with why (its module's ``DIALECTS``);
    ``modules``: (module, its rules' names) pairs, ``MODULES`` unless given."""
    out = {}
    for module, names in modules:
        why = module.DIALECTS.why_not(dialect)
        if why is not None:
            out.update((name, f"not valid in {dialect}: {why}") for name in names)
    return out


def holds(module: ModuleType, dialect: str) -> bool:
    """Whether the rules of ``module`` (one of ``MODULES``) hold in ``dialect``."""
    return module.DIALECTS.why_not(dialect) is None


def for_dialect(dialect: str, modules=MODULES) -> tuple[Rule, ...]:
    """``RULES`` less those that do not hold in ``dialect`` (``left_out``), in order.

    >>> for_dialect("postgres") == RULES, left_out("postgres")
    (True, {})
    """
    out = left_out(dialect, modules)
    return tuple(r for r in RULES if r.name not in out)


def by_name(name: str) -> Rule:
    for rule in RULES:
        if rule.name == name:
            return rule
    raise KeyError(f"no rewrite rule named {name!r} (rules: {', '.join(r.name for r in RULES)})")
