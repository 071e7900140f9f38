"""The rewrite rules, each a small named unit (``Rule``: a name, what it does, and its egglog ruleset), listed in
one ordered tuple as sqlglot lists its optimizer rules. A rule's guard reads the analyses of
``optimizers.rewrites.algebra`` (aliases a relation carries, aliases a predicate reads or whose NULLs it
rejects), so a rewrite is only made where it keeps the statement's meaning. Golden tests:
``tests/optimizers/test_rewrite_rules.py``. Expanding rules (``decorrelate``: a WHERE clause's comparison with a
correlated scalar aggregate; ``decorrelate_shell``: the subqueries of a select list, CASE, ORDER BY or HAVING) run in
Python when a statement's term is built and add their form as equal to the written one (``optimizers.rewrites.term``;
golden tests: ``tests/optimizers/test_rewrite_decorrelate*.py``).
"""

from __future__ import annotations

from optimizers.rewrites.rules.base import Rule
from optimizers.rewrites.rules.joins import JOIN_RULES
from optimizers.rewrites.rules.nulls import NULL_RULES
from optimizers.rewrites.rules.pushdown import ON_RULES, PUSHDOWN_RULES
from optimizers.rewrites.rules.shell import SHELL_RULES
from optimizers.rewrites.rules.views import VIEW_RULES

RULES: tuple[Rule, ...] = (*PUSHDOWN_RULES, *ON_RULES, *JOIN_RULES, *VIEW_RULES, *NULL_RULES, *SHELL_RULES)


def by_name(name: str) -> Rule:
    for rule in RULES:
        if rule.name == name:
            return rule
    raise KeyError(f"no rewrite rule named {name!r} (rules: {', '.join(r.name for r in RULES)})")
