"""Derived tables as operators of the algebra: what the rewriter needs to know of a subquery in FROM (or of a
grouped ``IN`` subquery) to search it together with the query around it.

A view is written ``(SELECT ... [GROUP BY ...]) AS alias[(columns)]``; its own query is a term of the e-graph like
any statement's (``optimizers.rewrites.term``): its FROM / WHERE core under its shell's operators
(``optimizers.rewrites.shell``, which also say its rows and their cost). What ``describe`` reads from the shell:

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

from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

SET_RETURNING = frozenset({"generate_series", "unnest", "json_array_elements", "jsonb_array_elements",
                           "regexp_matches", "json_each", "jsonb_each", "string_to_table", "generate_subscripts"})


@dataclass(frozen=True)
class Shape:
    """What a view's shell says about its rows (see the module)."""

    keys: tuple[str, ...]
    pushable: tuple[tuple[str, str], ...]
    grouped: bool = False  # rows that compare equal are merged (GROUP BY, DISTINCT): see ``push``


@dataclass(frozen=True)
class View:
    """A view of a lowered statement: its query lowered (``query``, an ``optimizers.rewrites.lower.Lowered``), its
    alias, how it is written (its FROM / WHERE are replaced at emission), its ``Shape``, its output columns' names,
    and the filters above it that may move into it (the outer atom's SQL -> the atom it becomes inside)."""

    query: object
    alias: str
    written: str
    shape: Shape
    columns: tuple[str, ...]
    unordered: bool = False  # the query around it keeps no order of its rows (``reads_order``)
    pushes: tuple[tuple[str, object], ...] = ()


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
               or returning or any(_has(e, exp.Window) for e in items))
    pushable = () if blocked else tuple(
        (c, e.sql(dialect=dialect)) for c, e in zip(columns, items)
        if not _has(e, (exp.AggFunc, exp.Window, exp.Subquery, exp.Select)) and not volatile(e)
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
    if volatile(node) or _has(node, (exp.Subquery, exp.Select, exp.AggFunc, exp.Window)):
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


ORDER_FREE = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop, exp.StddevSamp,
              exp.Variance, exp.VariancePop, exp.LogicalAnd, exp.LogicalOr)


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


def settle_order(low, free: bool):
    """``low`` (an ``optimizers.rewrites.lower.Lowered``) with each view's ``unordered`` kept only where no query
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


def _postgres_name(item: exp.Expression, dialect: str) -> str:
    """PostgreSQL's name of an unaliased item: a column's name (through casts), a function's name, ``case``,
    ``exists``, a scalar subquery's item's name, or ``?column?``."""
    while isinstance(item, exp.Cast):
        item = item.this
    if isinstance(item, exp.Column):
        return item.name
    if isinstance(item, exp.Anonymous):
        return str(item.this).lower()
    if isinstance(item, exp.Case):
        return "case"
    if isinstance(item, exp.Exists):
        return "exists"
    if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Select) and item.this.expressions:
        return _postgres_name(item.this.expressions[0], dialect)  # a scalar subquery: its item's name
    return item.sql_name().lower() if isinstance(item, exp.Func) else "?column?"


def _text_name(item: exp.Expression, dialect: str) -> str:
    """MySQL's (and MariaDB's) name of an unaliased item: a column's name, else the expression's text (the server
    keeps the text as written, here as the dialect writes it: spacing and letter case may differ, and names of
    columns compare without case there), at most 256 characters (the longest alias)."""
    return item.name if isinstance(item, exp.Column) else item.sql(dialect=dialect)[:256]


# how each dialect (a connector's dialect key) names a select list's unaliased item; one not listed names as
# PostgreSQL does
OUTPUT_NAMING = {"postgres": _postgres_name, "mariadb": _text_name, "mysql": _text_name}


def output_name(item: exp.Expression, dialect: str) -> str:
    """The name ``dialect`` gives a select list's item: its alias, else the dialect's naming (``OUTPUT_NAMING``).

    >>> items = sqlglot.parse_one("SELECT t.a, b::int, count(*), f(x), a + 1 AS s, a + 1", read="postgres").expressions
    >>> [output_name(e, "postgres") for e in items]
    ['a', 'b', 'count', 'f', 's', '?column?']
    >>> [output_name(e, "mysql") for e in sqlglot.parse_one("SELECT t.a, count(*), a + 1 AS s, a + 1",
    ...                                                        read="mysql").expressions]
    ['a', 'COUNT(*)', 's', 'a + 1']
    """
    if isinstance(item, exp.Alias):
        return item.alias
    return OUTPUT_NAMING.get(dialect, _postgres_name)(item, dialect)


def _has(node: exp.Expression, kinds) -> bool:
    return any(isinstance(n, kinds) for n in node.walk())


def aggregates(select: exp.Select) -> bool:
    """Whether ``select`` aggregates its rows: a HAVING, or an aggregate of its own (not a window's, nor a
    subquery's) in its select list or ORDER BY."""
    order = list((select.args.get("order") or exp.Order()).expressions)
    return select.args.get("having") is not None or has_aggregate([*select.expressions, *order])


def has_aggregate(items) -> bool:
    """Whether an aggregate of this query (not a window's, not a subquery's) is among ``items``."""
    return any(isinstance(n, exp.AggFunc) for e in items
               for n in e.walk(prune=lambda n: isinstance(n, exp.Window)
                               or (isinstance(n, (exp.Subquery, exp.Select)) and n is not e)))


def volatile(node: exp.Expression) -> bool:
    """Whether ``node`` may give another value each time it runs: random(), a UUID, and any function sqlglot does
    not know (a user's function may be volatile)."""
    return any(isinstance(n, (exp.Rand, exp.Uuid, exp.Anonymous)) for n in node.walk())


def set_returning(node: exp.Expression) -> bool:
    """Whether ``node`` holds a set-returning function (one row in, several out)."""
    return any(isinstance(n, (exp.Explode, exp.Unnest, exp.ExplodingGenerateSeries)) or (isinstance(n, exp.Func) and
               (n.sql_name() if not isinstance(n, exp.Anonymous) else str(n.this)).lower() in SET_RETURNING)
               for n in node.walk())
