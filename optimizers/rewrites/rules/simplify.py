"""Constant folding and predicate simplification (sqlglot's ``simplify``), a statement-level rule
(``rules.statement.STATEMENT_RULES``) in a module of its own because it holds in fewer dialects than the others:
sqlglot folds a comparison of two string constants by their bytes (``'a' = 'A'`` and ``'a ' = 'a'`` are FALSE,
``'ab' < 'B'`` FALSE), which is what PostgreSQL's deterministic collations say; MySQL and MariaDB compare strings
under the collation, by default without case and trailing spaces (``'a' = 'A'`` is TRUE there), so a folded
condition could keep or drop other rows.

>>> import sqlglot
>>> from optimizers.rewrites.rules.statement import Facts
>>> facts = Facts({"o": {"v": "int"}}, frozenset(), {}, dialect="postgres")
>>> simplify_predicates(sqlglot.parse_one("SELECT o.v FROM o WHERE o.v > 5 AND o.v > 3"), facts).sql()
'SELECT o.v FROM o WHERE o.v > 5'
>>> DIALECTS.why_not("mysql")[:41]
'sqlglot folds string comparisons by bytes'
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify
from sqlglot.tokens import Tokenizer

from optimizers.rewrites.rules.base import Dialects, Facts

WHY = ("sqlglot folds string comparisons by bytes ('a' = 'A' is FALSE), MariaDB and MySQL compare under the "
       "collation, by default without case or trailing spaces ('a' = 'A' is TRUE)")
DIALECTS = Dialects(refused=(("mariadb", WHY), ("mysql", WHY)))  # keyed by the connectors' dialect keys


def simplify_predicates(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """Constant folding and predicate simplification in WHERE and every ON (sqlglot's ``simplify``): constant
    arithmetic folded, an implied comparison dropped (``x > 5 AND x > 3``), double negations and repeated
    disjuncts removed, TRUE conjuncts dropped."""
    new = tree.copy()
    changed = False
    for node in [new.args.get("where"), *[j for j in new.args.get("joins") or ()]]:
        key = "this" if isinstance(node, exp.Where) else "on"
        if node is None or node.args.get(key) is None:
            continue
        before = node.args[key]
        after = simplify(before.copy(), dialect=facts.dialect)
        # more than the conjuncts' order (simplify sorts them) changed
        if _tokens(after, facts.dialect) != _tokens(before, facts.dialect):
            node.set(key, after)
            changed = True
    return new if changed else None


def _tokens(node: exp.Expression, dialect: str) -> list[str]:
    return sorted(t.text for t in Tokenizer(dialect=dialect).tokenize(node.sql(dialect=dialect)))
