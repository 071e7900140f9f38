"""What the statement-level rules of the shapes beyond decorrelation (``rules.semijoins``, ``rules.or_split``,
``rules.eager``, ``rules.ctes``) read of a SELECT's syntax tree: its WHERE's conjuncts, which table each alias
of its FROM names (and whether a LEFT JOIN may make its columns NULL), which aliases an expression reads, whether a
column can be NULL by the catalog's facts, and whether a subquery is a plain semi-join's right side.

>>> tree = sqlglot.parse_one("SELECT a.x FROM t a LEFT JOIN u b ON b.y = a.x WHERE a.x > 1 AND (b.z = 2 OR a.x = 3)")
>>> [c.sql() for c in conjuncts(tree)], aliases_of(tree), sorted(reads(conjuncts(tree)[1]))
(['a.x > 1', 'b.z = 2 OR a.x = 3'], {'a': ('t', False), 'b': ('u', True)}, ['a', 'b'])
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from optimizers.rewrites.rules.base import Facts


def conjuncts(tree: exp.Select) -> list[exp.Expression]:
    """The conjuncts of ``tree``'s WHERE (parentheses taken off), none without one."""
    where = tree.args.get("where")
    if where is None:
        return []
    parts = where.this.flatten() if isinstance(where.this, exp.And) else [where.this]
    return [p.unnest() for p in parts]


def with_conjuncts(tree: exp.Select, parts: list[exp.Expression]) -> exp.Select:
    """A copy of ``tree`` whose WHERE is the conjunction of ``parts`` (none: no WHERE)."""
    new = tree.copy()
    new.set("where", exp.Where(this=exp.and_(*[_paren(p.copy()) for p in parts])) if parts else None)
    return new


def _paren(node: exp.Expression) -> exp.Expression:
    return exp.Paren(this=node) if isinstance(node, exp.Or) else node


def aliases_of(tree: exp.Select) -> dict[str, tuple[str, bool]] | None:
    """Each alias of ``tree``'s FROM and joins with (its table, whether a LEFT JOIN may NULL its columns); None when
    a source is not a base table or a join is other than inner, cross or LEFT."""
    frm = tree.args.get("from_")
    if frm is None or not isinstance(frm.this, exp.Table):
        return None
    out = {frm.this.alias_or_name: (frm.this.name, False)}
    for j in tree.args.get("joins") or ():
        side = (j.side or "").upper()
        if not isinstance(j.this, exp.Table) or side not in ("", "LEFT") or j.args.get("using") \
                or (j.kind or "").upper() not in ("", "INNER", "CROSS", "OUTER"):
            return None
        out[j.this.alias_or_name] = (j.this.name, side == "LEFT")
    return out


def reads(node: exp.Expression) -> set[str]:
    """The aliases ``node``'s qualified columns read (an unqualified column reads ``''``)."""
    return {c.table for c in node.find_all(exp.Column)}


def not_null(col: exp.Expression, aliases: dict[str, tuple[str, bool]], facts: Facts,
             where: list[exp.Expression] = ()) -> bool:
    """Whether ``col`` is a column that is never NULL: declared NOT NULL in its table (reached through
    ``aliases``, not on the nullable side of a LEFT JOIN), or compared with a strict comparison or ``IS NOT NULL``
    in one of ``where``'s conjuncts."""
    if not isinstance(col, exp.Column) or col.table not in aliases:
        return False
    table, nullable = aliases[col.table]
    if not nullable and (table, col.name) in facts.not_null:
        return True
    for c in where:
        if isinstance(c, exp.Not) and isinstance(c.this, exp.Is) and c.this.this == col:
            return True
        operands = (c.this,) if isinstance(c, exp.Between) else (c.this, c.expression)
        if isinstance(c, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)) and col in operands \
                and not any(isinstance(n, (exp.Coalesce, exp.Case, exp.If)) for n in c.walk()):
            return True
    return False


def plain_subquery(node: exp.Expression) -> exp.Select | None:
    """The SELECT of an ``IN``'s subquery when it is a semi-join's plain right side: base tables in FROM, no
    GROUP BY, HAVING, LIMIT, OFFSET, DISTINCT ON, aggregate, window, set-returning or nested WITH; else None."""
    sub = node.this if isinstance(node, exp.Subquery) else node
    if not isinstance(sub, exp.Select) or aliases_of(sub) is None or sub.args.get("with_"):
        return None
    if any(sub.args.get(k) is not None for k in ("group", "having", "limit", "offset", "order")):
        return None
    distinct = sub.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        return None
    if any(e.find(exp.AggFunc, exp.Window, exp.Anonymous, exp.UDTF, exp.Explode, exp.Unnest) for e in
           sub.expressions):
        return None
    return sub


def correlated(sub: exp.Select) -> bool:
    """Whether ``sub`` reads a column of an alias it does not define (its WHERE only; a plain subquery)."""
    own = set((aliases_of(sub) or {}).keys())
    return any(c.table and c.table not in own for c in sub.find_all(exp.Column))


def inside(node: exp.Expression, ancestor: exp.Expression) -> bool:
    """Whether ``node`` is ``ancestor`` or lies under it."""
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def join_columns(on: exp.Expression, c: str, p: str) -> list[tuple[exp.Column, str]] | None:
    """(c's column, p's column name) per equality of ``on``; None unless every conjunct is ``c.x = p.k``."""
    out = []
    for conj in on.flatten() if isinstance(on, exp.And) else [on]:
        conj = conj.unnest()
        if not isinstance(conj, exp.EQ) or not all(isinstance(s, exp.Column) for s in (conj.this, conj.expression)):
            return None
        left, right = conj.this, conj.expression
        if left.table == p:
            left, right = right, left
        if left.table != c or right.table != p:
            return None
        out.append((left, right.name))
    return out


def parse(sql: str, dialect: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=dialect)
