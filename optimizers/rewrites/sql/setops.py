"""Set operations (UNION [ALL], INTERSECT [ALL], EXCEPT [ALL]) as operators of the algebra: each branch is lowered
like a SELECT (its aliases renamed apart from the other branches', so a fact about one branch's predicate never
reaches another), and the statement's term is ``setop(keyword, left, right)`` over the branches' cores; each
branch's shell and the statement's own ORDER BY / LIMIT stay as written. Every branch is searched in the one
e-graph, and emission (``optimizers.rewrites.sql.emit``) writes each branch back in its place.

>>> low = lower_query("SELECT a FROM t WHERE a > 1 UNION ALL SELECT t.a FROM t, u WHERE t.a = u.c ORDER BY 1",
...                   {"t": {"a": "int"}, "u": {"c": "int"}}, dialect="postgres")
>>> low.setop[0], [b.tables for b in low.setop[1:]]
('UNION ALL', [(('t', 't'),), (('t', 't_2'), ('u', 'u'))])
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from optimizers.rewrites.sql.ctes import inline
from optimizers.rewrites.sql.lower import lower_select, lower_tree, qualified
from optimizers.rewrites.sql.lowered import Lowered, Schema
from optimizers.rewrites.sql.parsing import parse, Unsupported
from optimizers.rewrites.sql.scopes import names_as_written
from optimizers.rewrites.sql.derived import settle_order


def lower_query(sql: str, schema: Schema, *, dialect: str) -> Lowered:
    """``sql`` (in ``dialect``) lowered: a SELECT (``optimizers.rewrites.sql.lower``) or a set operation of SELECTs,
    after a WITH's CTEs are inlined where PostgreSQL would inline them (``optimizers.rewrites.sql.ctes``)."""
    tree = parse(sql, dialect=dialect)
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        raise Unsupported(f"{tree.key.upper()} statements are not rewritten (only queries)")
    if tree.args.get("with_"):
        tree, names = inline(tree, dialect)  # CTEs PostgreSQL would inline, as derived tables
        try:
            return replace(lower_query(tree.sql(dialect=dialect), schema, dialect=dialect), inlined=names)
        except Unsupported as e:
            raise Unsupported(f"WITH (its CTEs inlined): {e}") from None
    if isinstance(tree, exp.Select):
        return settle_order(lower_tree(tree, schema, dialect=dialect), True)
    return settle_order(_side(qualified(tree, schema, dialect=dialect), tree, set(), dialect, top=True), True)


def _side(node: exp.Expression, original: exp.Expression, used: set[str], dialect: str,
          top: bool = False) -> Lowered:
    """One side of a set operation lowered (``original``: the same side as written); ``used``: the aliases of the
    branches lowered so far (it gains this side's)."""
    if isinstance(node, exp.Select) and isinstance(original, exp.Select):
        low = lower_select(node, None, frozenset(used), dialect=dialect)
        used |= low.every_alias()
        return replace(low, shell=names_as_written(low.shell, original))
    if isinstance(node, exp.SetOperation) and not node.args.get("by_name") and not node.args.get("side"):
        keyword = node.key.upper() + ("" if node.args.get("distinct") else " ALL")
        left = _side(node.this, original.this, used, dialect)
        right = _side(node.expression, original.expression, used, dialect)
        return Lowered((), (), (), (original if top else node).copy(), setop=(keyword, left, right), dialect=dialect)
    raise Unsupported("a set operation's branch that is not a SELECT (a parenthesised query, VALUES...)")
