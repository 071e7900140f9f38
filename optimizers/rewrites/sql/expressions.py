"""What an expression or a select list's item is, as the SQL front end and the rules ask it: the name a dialect
gives an item (``output_name``), whether a query aggregates (``aggregates``, ``has_aggregate``), whether an
expression may change value from one run to the next (``volatile``) or makes several rows of one
(``set_returning``), and the aggregates that read no order of their rows (``ORDER_FREE``).
"""

from __future__ import annotations

from sqlglot import exp

SET_RETURNING = frozenset({"generate_series", "unnest", "json_array_elements", "jsonb_array_elements",
                           "regexp_matches", "json_each", "jsonb_each", "string_to_table", "generate_subscripts"})


ORDER_FREE = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Stddev, exp.StddevPop, exp.StddevSamp,
              exp.Variance, exp.VariancePop, exp.LogicalAnd, exp.LogicalOr)


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

    >>> import sqlglot
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


def has(node: exp.Expression, kinds) -> bool:
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
