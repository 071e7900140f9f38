"""Subqueries in a SELECT's shell: a scalar subquery, an [NOT] EXISTS or an [NOT] IN (SELECT ...) in the select
list, in HAVING or in ORDER BY, anywhere in their expressions (a CASE branch, a comparison, COALESCE...) but not
inside an aggregate's or a window's arguments, nor inside another subquery. The lowering
(``optimizers.rewrites.sql.lower``) finds them in the qualified shell and lowers each subquery's own query like a
condition's (its aliases renamed apart from the statement's), so the statement's term can offer the shell with
them decorrelated (``optimizers.rewrites.rules.decorrelate_shell``); the written shell keeps them as its text.

``candidates`` lists them in one fixed order (select list, HAVING, ORDER BY; depth first), so a copy of the shell
finds the same subquery at the same place.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT c.id, CASE WHEN EXISTS (SELECT 1 FROM o WHERE o.c = c.id) THEN 1 END, "
...                       "max((SELECT 1)) FROM c ORDER BY (SELECT max(o.v) FROM o WHERE o.c = c.id)", read="postgres")
>>> [(clause, type(node).__name__) for clause, node in candidates(q)]
[('select', 'Exists'), ('order', 'Subquery')]
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from optimizers.rewrites.sql.lowered import Lowered, ShellSubquery

Lower = Callable[[exp.Select, frozenset[str]], Lowered | None]  # a subquery's SELECT lowered, None outside the subset


def candidates(select: exp.Select) -> list[tuple[str, exp.Expression]]:
    """(clause, node) of each subquery in ``select``'s select list, HAVING and ORDER BY, in a fixed order: a scalar
    subquery's ``Subquery``, an ``Exists``, an ``In`` over a query. Not those inside an aggregate or a window, under
    ANY / ALL, or inside another query."""
    out: list[tuple[str, exp.Expression]] = []

    def visit(node: exp.Expression, clause: str) -> None:
        if isinstance(node, (exp.AggFunc, exp.Window, exp.Any, exp.All, exp.Select, exp.SetOperation)):
            return
        if isinstance(node, (exp.Subquery, exp.Exists)) or (isinstance(node, exp.In) and node.args.get("query")):
            out.append((clause, node))
            return
        for child in node.iter_expressions():
            visit(child, clause)

    for item in select.expressions:
        visit(item, "select")
    having = select.args.get("having")
    if having is not None:
        visit(having.this, "having")
    for ordered in (select.args.get("order") or exp.Order()).expressions:
        visit(ordered, "order")
    return out


def find(select: exp.Select, used: set[str], lower: Lower, *, dialect: str) -> tuple[ShellSubquery, ...]:
    """The subqueries of ``select``'s shell that ``lower`` takes (those outside the subset are left as text), each
    lowered with its aliases renamed apart from ``used`` (which then holds them too); their SQL written in ``dialect``."""
    out = []
    for index, (clause, node) in enumerate(candidates(select)):
        found = _one(index, clause, node, frozenset(used), lower, dialect)
        if found is not None:
            used |= found.sub.every_alias()
            out.append(found)
    return tuple(out)


def _one(index: int, clause: str, node: exp.Expression, scope: frozenset[str], lower: Lower,
         dialect: str) -> ShellSubquery | None:
    query = node.args.get("query") if isinstance(node, exp.In) else node.this
    query = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(query, exp.Select) or query.args.get("with_"):
        return None
    if not isinstance(node, exp.Exists) and len(query.expressions) != 1:
        return None
    sub = lower(query.copy(), scope)
    if sub is None:
        return None
    own = sub.every_alias()
    outer = frozenset(c.table for c in sub.shell.find_all(exp.Column) if c.table and c.table not in own)
    sql = node.sql(dialect=dialect)
    if isinstance(node, exp.Exists):
        return ShellSubquery(index, clause, "exists", sql, sub, outer=outer)
    item = sub.shell.expressions[0]
    value = item.unalias() if isinstance(item, exp.Alias) else item
    if isinstance(node, exp.In):
        left = node.this
        if any(isinstance(n, (exp.Subquery, exp.Select)) for n in left.walk()):
            return None
        return ShellSubquery(index, clause, "in", sql, sub, value.copy(), left.copy(), outer)
    return ShellSubquery(index, clause, "scalar", sql, sub, value.copy(), outer=outer)

