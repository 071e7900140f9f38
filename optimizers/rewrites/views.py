"""Derived tables as operators of the algebra: what the rewriter needs to know of a subquery in FROM (or of a
grouped ``IN`` subquery) to search it together with the query around it.

A view is written ``(SELECT ... [GROUP BY ...]) AS alias[(columns)]``; its own FROM / WHERE core is a term of the
e-graph like any statement's (``optimizers.rewrites.term``), and its shell (select list, GROUP BY, HAVING, ORDER
BY, LIMIT) stays as written inside it. What ``describe`` reads from the shell:

- its rows per input row (``factor``) and at most (``cap``): a GROUP BY keeps a tenth without better knowledge,
  an aggregate without GROUP BY gives one row, a LIMIT caps them; its cost per input row (``weight``): grouping,
  aggregating or DISTINCT hashes or sorts each row, a plain SELECT costs nothing of its own (PostgreSQL pulls it
  up into the query around it);
- ``keys``: output columns no two of its rows share (the one GROUP BY expression's column, a DISTINCT's single
  column, every column of a one-row aggregate), what turning a semi-join into a join needs;
- ``pushable``: for each output column a filter above the view may read, the inner expression it stands for.
  Pushing ``filter(view, p)`` into the view's WHERE keeps its rows when p reads only columns computed row by row
  (no aggregate, window, subquery or volatile function) and, under GROUP BY, only grouping expressions (a group's
  rows share them, so p keeps or drops whole groups); never past a LIMIT, DISTINCT ON, window or set-returning
  function, nor into a one-row aggregate.

>>> q = sqlglot.parse_one("SELECT l.k AS k, sum(l.q) AS s FROM l GROUP BY l.k", read="postgres")
>>> d = describe(q, ["k", "s"])
>>> d.factor, d.keys, d.pushable
(0.1, ('k',), (('k', 'l.k'),))
>>> push("v.k > 3 AND v.k < 9", "v", dict(d.pushable))
'l.k > 3 AND l.k < 9'
>>> push("v.s > 3", "v", dict(d.pushable)) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

GROUP_ROWS = 0.1  # a grouped view's rows per row of its input, without better knowledge
DISTINCT_ROWS = 0.5
GROUP_WEIGHT = 2.0  # the cost of grouping per input row, beyond reading it (hashing or sorting it)
SET_RETURNING = frozenset({"generate_series", "unnest", "json_array_elements", "jsonb_array_elements",
                           "regexp_matches", "json_each", "jsonb_each", "string_to_table", "generate_subscripts"})


@dataclass(frozen=True)
class Shape:
    """What a view's shell says about its rows (see the module)."""

    factor: float
    cap: float
    keys: tuple[str, ...]
    pushable: tuple[tuple[str, str], ...]
    weight: float = 0.0


@dataclass(frozen=True)
class View:
    """A view of a lowered statement: its query lowered (``query``, an ``optimizers.rewrites.lower.Lowered``), its
    alias, how it is written (its FROM / WHERE are replaced at emission), its ``Shape``, and the filters above it
    that may move into it (the outer atom's SQL -> the atom it becomes inside)."""

    query: object
    alias: str
    written: str
    shape: Shape
    pushes: tuple[tuple[str, object], ...] = ()


def describe(select: exp.Select, columns: list[str]) -> Shape:
    """The ``Shape`` of a view whose query is ``select`` (qualified) with output ``columns`` (by position)."""
    items = [e.unalias() if isinstance(e, exp.Alias) else e for e in select.expressions]
    group = [g.sql(dialect="postgres") for g in (select.args.get("group") or exp.Group()).expressions]
    order = [o for o in (select.args.get("order") or exp.Order()).expressions]
    aggregated = any(_aggregates(e) for e in items + order) or select.args.get("having") is not None
    returning = any(set_returning(e) for e in items)
    distinct = select.args.get("distinct")
    limit = select.args.get("limit")
    factor, cap = 1.0, float("inf")
    if group:
        factor = GROUP_ROWS
    elif aggregated:
        factor, cap = 0.0, 1.0
    elif distinct is not None:
        factor = DISTINCT_ROWS
    if limit is not None and isinstance(limit.expression, exp.Literal) and limit.expression.is_int:
        cap = min(cap, float(limit.expression.this))
    keys: tuple[str, ...] = ()
    if returning:
        pass  # several rows per input row (per group): nothing is known unique
    elif not group and aggregated:
        keys = tuple(columns)
    elif len(group) == 1:
        keys = tuple(c for c, e in zip(columns, items) if e.sql(dialect="postgres") == group[0])[:1]
    elif distinct is not None and not distinct.args.get("on") and len(items) == 1:
        keys = (columns[0],)
    blocked = (limit is not None or select.args.get("offset") is not None or (not group and aggregated)
               or (distinct is not None and distinct.args.get("on") is not None)
               or returning or any(_has(e, exp.Window) for e in items))
    pushable = () if blocked else tuple(
        (c, e.sql(dialect="postgres")) for c, e in zip(columns, items)
        if not _has(e, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select)) and not _volatile(e)
        and (not group or e.sql(dialect="postgres") in group))
    weight = GROUP_WEIGHT if group or aggregated or distinct is not None else 0.0
    return Shape(factor, cap, keys, pushable, weight)


def push(atom_sql: str, alias: str, pushable: dict[str, str]) -> str | None:
    """``atom_sql`` (reading only ``alias``'s columns) with each column replaced by the view's inner expression;
    None when it reads a column that cannot be pushed, or holds a volatile function or a subquery."""
    node = sqlglot.parse_one(atom_sql, read="postgres")
    if _volatile(node) or _has(node, (exp.Subquery, exp.Select, exp.AggFunc, exp.Window)):
        return None
    columns = list(node.find_all(exp.Column))
    if isinstance(node, exp.Column) or not columns or any(c.table != alias or c.name not in pushable for c in columns):
        return None
    for c in columns:
        inner = sqlglot.parse_one(pushable[c.name], read="postgres")
        c.replace(exp.Paren(this=inner) if not isinstance(inner, exp.Column) else inner)
    return node.sql(dialect="postgres")


def _has(node: exp.Expression, kinds) -> bool:
    return any(isinstance(n, kinds) for n in node.walk())


def _aggregates(node: exp.Expression) -> bool:
    """Whether ``node`` holds an aggregate of its own query (not a window's, nor a subquery's)."""
    return any(isinstance(n, exp.AggFunc) for n in
               node.walk(prune=lambda n: isinstance(n, exp.Window)
                         or (isinstance(n, (exp.Subquery, exp.Select)) and n is not node)))


def _volatile(node: exp.Expression) -> bool:
    """Whether ``node`` may give another value each time it runs: random(), a UUID, and any function sqlglot does
    not know (a user's function may be volatile)."""
    return any(isinstance(n, (exp.Rand, exp.Uuid, exp.Anonymous)) for n in node.walk())


def set_returning(node: exp.Expression) -> bool:
    """Whether ``node`` holds a set-returning function (one row in, several out)."""
    return any(isinstance(n, (exp.Explode, exp.Unnest, exp.ExplodingGenerateSeries)) or (isinstance(n, exp.Func) and
               (n.sql_name() if not isinstance(n, exp.Anonymous) else str(n.this)).lower() in SET_RETURNING)
               for n in node.walk())
