"""Derived tables, the algebra's views: what the rewriter needs to know of a subquery in FROM (or of a grouped
``IN`` subquery) to search it together with the query around it (``optimizers.rewrites.sql.lowered.View``).

A view is written ``(SELECT ... [GROUP BY ...]) AS alias[(columns)]``; its own query is a term of the e-graph like
any statement's (``optimizers.rewrites.search.term``): its FROM / WHERE core under its shell's operators
(``optimizers.rewrites.sql.shell_operators``, which also say its rows and their cost). What ``describe`` reads from
the shell:

- ``keys``: output columns no two of its rows share (the one GROUP BY expression's column, a DISTINCT's single
  column, every column of a one-row aggregate), what turning a semi-join into a join needs;
- ``pushable``: for each output column a filter above the view may read, the inner expression it stands for.
  Pushing ``filter(view, p)`` into the view's WHERE keeps its rows when p reads only columns computed row by row
  (no aggregate, window, subquery or volatile function) and, under GROUP BY, only grouping expressions (a group's
  rows share them, so p keeps or drops whole groups); never past a LIMIT, DISTINCT ON, window or set-returning
  function, nor into a one-row aggregate.

>>> q = sqlglot.parse_one("SELECT l.k AS k, sum(l.q) AS s FROM l GROUP BY l.k", read="postgres")
>>> d = describe(q, ["k", "s"], dialect="postgres")
>>> d.keys, d.pushable
(('k',), (('k', 'l.k'),))
>>> push("v.k > 3 AND v.k < 9", "v", dict(d.pushable), dialect="postgres")
'l.k > 3 AND l.k < 9'
>>> push("v.s > 3", "v", dict(d.pushable), dialect="postgres") is None
True
"""

from __future__ import annotations

from dataclasses import replace

import sqlglot
from sqlglot import exp

from optimizers.rewrites.sql.expressions import ORDER_FREE, aggregates, has, set_returning, volatile
from optimizers.rewrites.sql.lowered import Lowered, Shape

def describe(select: exp.Select, columns: list[str], *, dialect: str) -> Shape:
    """The ``Shape`` of a view whose query is ``select`` (qualified) with output ``columns`` (by position); its
    expressions compared and written in ``dialect``."""
    items = [e.unalias() if isinstance(e, exp.Alias) else e for e in select.expressions]
    group = [g.sql(dialect=dialect) for g in (select.args.get("group") or exp.Group()).expressions]
    aggregated = aggregates(select)
    returning = any(set_returning(e) for e in items)
    distinct = select.args.get("distinct")
    limit = select.args.get("limit")
    keys: tuple[str, ...] = ()
    if returning:
        pass  # several rows per input row (per group): nothing is known unique
    elif not group and aggregated:
        keys = tuple(columns)
    elif len(group) == 1:
        keys = tuple(c for c, e in zip(columns, items) if e.sql(dialect=dialect) == group[0])[:1]
    elif distinct is not None and not distinct.args.get("on") and len(items) == 1:
        keys = (columns[0],)
    blocked = (limit is not None or select.args.get("offset") is not None or (not group and aggregated)
               or (distinct is not None and distinct.args.get("on") is not None)
               or returning or any(has(e, exp.Window) for e in items))
    pushable = () if blocked else tuple(
        (c, e.sql(dialect=dialect)) for c, e in zip(columns, items)
        if not has(e, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select)) and not volatile(e)
        and (not group or e.sql(dialect=dialect) in group))
    return Shape(keys, pushable, bool(group) or distinct is not None)


def push(atom_sql: str, alias: str, pushable: dict[str, str], grouped: bool = False, *, dialect: str) -> str | None:
    """``atom_sql`` (reading only ``alias``'s columns) with each column replaced by the view's inner expression;
    None when it reads a column that cannot be pushed, or holds a volatile function or a subquery. Into a
    ``grouped`` view only a comparison of a bare column with constants moves: values that compare equal are one
    group, and only such a comparison is sure to keep or drop them alike (``v.x::text = '1.0'`` tells the numeric
    1.0 from 1.00, which group together; below the grouping it would change the group's rows).

    >>> push("v.x::text = '1.0'", "v", {"x": "t.x"}, grouped=True, dialect="postgres") is None
    True
    >>> push("v.x BETWEEN 1 AND 3", "v", {"x": "t.x"}, grouped=True, dialect="postgres")
    't.x BETWEEN 1 AND 3'
    """
    node = sqlglot.parse_one(atom_sql, read=dialect)
    if volatile(node) or has(node, (exp.Subquery, exp.Select, exp.AggFunc, exp.Window)):
        return None
    if grouped and not _compares_bare(node):
        return None
    columns = list(node.find_all(exp.Column))
    if isinstance(node, exp.Column) or not columns or any(c.table != alias or c.name not in pushable for c in columns):
        return None
    for c in columns:
        inner = sqlglot.parse_one(pushable[c.name], read=dialect)
        c.replace(exp.Paren(this=inner) if not isinstance(inner, exp.Column) else inner)
    return node.sql(dialect=dialect)


def reads_order(select: exp.Select) -> bool:
    """Whether ``select`` keeps an order of the rows of its FROM: a LIMIT, OFFSET or DISTINCT ON picks rows by it, a
    window or an aggregate other than the order-free ones (``array_agg``, ``string_agg``..., a user's) reads it.

    >>> reads_order(sqlglot.parse_one("SELECT v.k, count(*) FROM v GROUP BY v.k", read="postgres"))
    False
    >>> reads_order(sqlglot.parse_one("SELECT string_agg(v.s, ',') FROM v", read="postgres"))
    True
    """
    distinct = select.args.get("distinct")
    if select.args.get("limit") or select.args.get("offset") or (distinct is not None and distinct.args.get("on")):
        return True
    for n in select.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Select)) and n is not select):
        if isinstance(n, (exp.Window, exp.Anonymous)) or (isinstance(n, exp.AggFunc) and not isinstance(n, ORDER_FREE)):
            return True
    return False


def settle_order(low: Lowered, free: bool) -> Lowered:
    """``low`` with each view's ``unordered`` kept only where no query
    around it reads the order of its rows, however far out: ``free`` says whether the context of ``low`` reads
    none (False for a block of a statement outside the subset, whose surroundings are not lowered); a set
    operation's LIMIT or OFFSET reads its branches' order, a SELECT's LIMIT, window or order-sensitive aggregate
    its FROM's (``reads_order``). A condition's subquery starts afresh: IN and EXISTS read no order."""
    if low.setop is not None:
        keyword, left, right = low.setop
        free = free and low.shell.args.get("limit") is None and low.shell.args.get("offset") is None
        return replace(low, setop=(keyword, settle_order(left, free), settle_order(right, free)))
    free = free and not reads_order(low.shell)
    return replace(low, views=tuple(replace(v, unordered=v.unordered and free, query=settle_order(v.query, free))
                                    for v in low.views),
                   atoms=tuple(replace(a, sub=settle_order(a.sub, True)) if a.sub is not None else a
                               for a in low.atoms))


COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In, exp.Is)


def _compares_bare(node: exp.Expression) -> bool:
    """Whether ``node`` compares one bare column with constants (literals, NULL, parameters), possibly negated."""
    node = node.this if isinstance(node, exp.Not) else node
    node = node.unnest() if isinstance(node, exp.Paren) else node
    if not isinstance(node, COMPARISONS):
        return False
    sides = [v for k, v in node.args.items() if k != "query" and isinstance(v, exp.Expression)]
    sides += [x for k, v in node.args.items() if isinstance(v, list) for x in v]
    bare = [s for s in sides if isinstance(s, exp.Column)]
    constants = all(isinstance(s, (exp.Literal, exp.Null, exp.Boolean, exp.Placeholder, exp.Parameter))
                    or (isinstance(s, exp.Neg) and isinstance(s.this, exp.Literal)) for s in sides if s not in bare)
    return len(bare) == 1 and constants


