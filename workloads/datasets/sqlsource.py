r"""Workload SQL written once, in the dialect its workload names (each built-in workload's ``SOURCE_DIALECT``), and
run on any engine: ``to_dialect`` transpiles a statement to the connector's dialect with sqlglot (the text as it is
when the dialects are the same), ``script`` splits a workload's own multi-statement text, and ``string_literal`` /
``identifier`` quote values and names in standard SQL, which every source dialect here reads and sqlglot rewrites
for the target.

>>> to_dialect("SELECT 1 FROM t WHERE d = $1::date", "postgres", "postgres")
'SELECT 1 FROM t WHERE d = $1::date'
>>> to_dialect("SELECT o.x FROM t AS o WHERE d = DATE '1998-01-01' AND " + identifier("k") + " = 1", "postgres", "mysql")
"SELECT o.x FROM t AS o WHERE d = CAST('1998-01-01' AS DATE) AND `k` = 1"
>>> to_dialect("SELECT 1 FROM t WHERE d BETWEEN $1::date AND $2::date + 6 LIMIT $3", "postgres", "mysql")
'SELECT 1 FROM t WHERE d BETWEEN CAST($1 AS DATE) AND DATE_ADD(CAST($2 AS DATE), INTERVAL 6 DAY) LIMIT $3'
>>> to_dialect("SELECT a.x FROM a UNION SELECT b.y FROM b ORDER BY 1 LIMIT 5", "postgres", "mysql")
'SELECT a.x FROM a UNION SELECT b.y FROM b ORDER BY CASE WHEN `x` IS NULL THEN 1 ELSE 0 END, `x` LIMIT 5'
>>> string_literal("O'Brien"), identifier('a"b')
("'O''Brien'", '"a""b"')
>>> script("CREATE TABLE a (x int); CREATE TABLE b (y int);")
['CREATE TABLE a (x int)', 'CREATE TABLE b (y int)']
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from advisor.core.errors import BadStatement
from advisor.core.sqltext import shorten


# source dialects in which ``date + n`` adds n days (a number of days, not an interval)
DAYS_BY_NUMBER = frozenset({"postgres"})


def to_dialect(statement: str, source: str, target: str) -> str:
    """``statement`` (one, written in ``source``) as ``target``'s SQL; unchanged when the two are the same.
    BadStatement naming the statement when sqlglot cannot read or write it.

    >>> to_dialect("CREATE INDEX li_ok ON lineitem (l_orderkey, l_shipdate DESC)", "postgres", "mysql")
    'CREATE INDEX li_ok ON lineitem(l_orderkey, l_shipdate DESC)'
    """
    if source == target:
        return statement
    try:
        trees = [_kept_meaning(tree, source, target) for tree in sqlglot.parse(statement, read=source) if tree is not None]
        out = [tree.sql(dialect=target, unsupported_level=sqlglot.ErrorLevel.RAISE) for tree in trees]
    except SqlglotError as e:
        why = (str(e).strip().splitlines() or ["?"])[0]
        raise BadStatement(f"cannot write in {target}'s SQL: {shorten(statement, 80)} ({why})", reason=why) from None
    if len(out) != 1:
        raise BadStatement(f"expected one statement, got {len(out)}: {shorten(statement, 80)}")
    return out[0]


def _kept_meaning(tree: exp.Expression, source: str, target: str) -> exp.Expression:
    """What sqlglot would otherwise lose between dialects: a ``$n`` parameter (the neutral placeholder above
    connectors) stays ``$n`` in any dialect (MySQL's writer makes it a user variable ``@n``), and PostgreSQL's
    ``date + n`` / ``date - n`` (n days, where the left side is cast to date) becomes a date addition of n days
    (MySQL's ``date + 6`` is a number); a set operation's ``ORDER BY 1`` names the output column, so that its
    NULLs can be ordered as the source orders them."""
    def placeholder(node: exp.Expression) -> exp.Expression:
        return exp.var(f"${node.name}") if isinstance(node, exp.Parameter) and node.name.isdigit() else node

    def days(node: exp.Expression) -> exp.Expression:
        if (source in DAYS_BY_NUMBER and isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.this, exp.Cast)
                and node.this.to.is_type(exp.DataType.Type.DATE)
                and not isinstance(node.expression, exp.Interval)
                and (node.expression.is_int or isinstance(node.expression, exp.Var))):
            kind = exp.DateAdd if isinstance(node, exp.Add) else exp.DateSub
            return kind(this=node.this, expression=node.expression, unit=exp.var("DAY"))
        return node

    def named_order(node: exp.Expression) -> exp.Expression:
        """``... UNION SELECT ... ORDER BY 1``: the output column's name instead of its position, so that a
        dialect that orders NULLs otherwise can spell out the source's order (sqlglot cannot with a position)."""
        order = node.args.get("order") if isinstance(node, exp.SetOperation) else None
        if order is None:
            return node
        first = node
        while isinstance(first, exp.SetOperation):
            first = first.this
        names = [e.alias_or_name for e in getattr(first, "expressions", [])]
        if not all(names) or len(set(names)) != len(names):
            return node
        for ordered in order.expressions:
            key = ordered.this
            if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(names):
                key.replace(exp.column(names[int(key.name) - 1], quoted=True))
        return node

    def index_keys(node: exp.Expression) -> exp.Expression:
        """An index's key columns keep no NULL order of the source's: where NULLs sort is the index's own, and a
        dialect without NULLS FIRST/LAST would otherwise get ``CASE WHEN x IS NULL ...`` expressions as keys."""
        if isinstance(node, exp.IndexParameters):
            ordering = Dialect.get_or_raise(target).NULL_ORDERING  # the target's own NULL order
            for ordered in node.args.get("columns") or ():
                if isinstance(ordered, exp.Ordered):
                    desc = bool(ordered.args.get("desc"))
                    first = {"nulls_are_small": not desc, "nulls_are_large": desc}.get(ordering, False)
                    ordered.set("nulls_first", first)
        return node

    return tree.transform(placeholder).transform(days).transform(named_order).transform(index_keys)


def all_to_dialect(statements: Iterable[str], source: str, target: str) -> list[str]:
    """Each of ``statements`` as ``to_dialect`` writes it."""
    return [to_dialect(s, source, target) for s in statements]


def script(text: str) -> list[str]:
    """A workload's own multi-statement text (statements ending with ``;``, no ``;`` inside a literal) as a
    list of statements."""
    return [s.strip() for s in text.split(";") if s.strip()]


def string_literal(text: str) -> str:
    """``text`` as a standard SQL string literal (a quote doubled; backslashes are plain characters)."""
    return "'" + text.replace("'", "''") + "'"


def identifier(name: str) -> str:
    """``name`` as a standard SQL quoted identifier (a double quote doubled)."""
    return '"' + name.replace('"', '""') + '"'
