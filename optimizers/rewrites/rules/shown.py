"""The rules whose form shows in an extracted term, beyond those a search's steps report (the e-graph rules that
matched): the lowering's CTE inlining, the expanding rules (``rules.decorrelate``, ``rules.decorrelate_shell``), whose
forms the term holds from the start, and NOT IN as an anti-join (``rules.nulls``), read off the extracted term and
the statement as lowered. The optimizers name them on each rewrite they propose (``QueryRewrite.rules``).
"""

from __future__ import annotations

from egglog import get_callable_args, get_callable_fn, get_literal_value
from sqlglot.dialects.dialect import Dialect

from optimizers.rewrites.algebra.terms import Pred, Rel
from optimizers.rewrites.rules.decorrelate_shell import rule_of
from optimizers.rewrites.sql.lowered import Lowered


def shown(term: Rel, low: Lowered) -> tuple[str, ...]:
    """The rules whose form shows in the extracted ``term``: CTEs inlined (``optimizers.rewrites.sql.ctes``), the
    scalar decorrelation (an expanding rule, ``optimizers.rewrites.rules.decorrelate``: a derived table's value in
    a condition), the shell's (``rules.decorrelate_shell``: a subquery of a shell no longer in its operator's
    text) and NOT IN as an anti-join (``rules.nulls``)."""
    found: list[str] = []
    texts: set[str] = set()
    clauses: list[str] = []
    derived: list[str] = []

    def walk(t) -> None:
        fn, args = get_callable_fn(t), get_callable_args(t)
        if fn == Rel.derived:
            derived.append(get_literal_value(args[1]))
        if fn in (Rel.project, Rel.group, Rel.sort):
            clauses.extend(get_literal_value(a) for a in args[1:])
        if fn == Pred.atom:
            texts.add(get_literal_value(args[0]))
            return
        for a in args or ():
            if isinstance(a, (Rel, Pred)):
                walk(a)

    walk(term)
    if any(f"{alias}.v" in text for alias in derived for text in texts):
        found.append("decorrelate_scalar_aggregate")
    for part in _selects(low):
        for s in part.subqueries:
            if not any(_shows(text, s.sql, low.dialect) for text in clauses):
                found.append(rule_of(s))
    if any(a.kind == "not_in" and a.sql not in texts for part in _selects(low) for a in part.atoms):
        found.append("not_in_to_anti_join")
    if low.inlined:
        found.insert(0, "inline_cte")
    return tuple(dict.fromkeys(found))


def _shows(text: str, sql: str, dialect: str) -> bool:
    """Whether ``sql`` stands in the clause ``text`` as an expression, not as a quoted name (MySQL names an item
    that was a subquery by the subquery's text: ``dc1.v AS `(SELECT MAX(o.v) FROM o ...)```).

    >>> _shows("c.id, dc1.v AS `(SELECT 1)`", "(SELECT 1)", "mysql"), _shows("c.id, (SELECT 1)", "(SELECT 1)", "mysql")
    (False, True)
    """
    quotes = {q[0] if isinstance(q, (tuple, list)) else q[:1]
              for q in Dialect.get_or_raise(dialect).tokenizer_class.IDENTIFIERS}
    at = text.find(sql)
    while at >= 0:
        if at == 0 or text[at - 1] not in quotes:
            return True
        at = text.find(sql, at + 1)
    return False


def _selects(low: Lowered):
    """``low`` and the SELECTs of its views and set operation branches (whose conditions are in the term)."""
    yield low
    for part in low.selects():
        yield from _selects(part)
