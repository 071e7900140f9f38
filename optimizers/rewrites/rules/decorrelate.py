"""Decorrelating a comparison with a correlated scalar aggregate (TPC-H Q17, Q20, Q2): PostgreSQL runs such a
subquery once per outer row; grouped once by its correlation keys and joined, it runs once.

    x < (SELECT 0.2 * avg(l.q) FROM lineitem l WHERE l.k = p.k AND <inner>)
    ->  JOIN (SELECT l.k AS k1, 0.2 * avg(l.q) AS v FROM lineitem l WHERE <inner> GROUP BY l.k) dc1
        ON dc1.k1 = p.k  WHERE x < dc1.v

Guards that keep the meaning:
- every correlated conjunct is ``inner column = outer expression`` (the grouping keys; one derived row per key,
  so no outer row is duplicated), the subquery reads the outer query nowhere else, and the select expression
  holds an aggregate;
- an empty group: the subquery gives NULL for avg/sum/min/max, and a strict expression of them is NULL, so the
  comparison is not true and the row goes, exactly as when the join finds no group. The select expression must
  therefore keep a NULL NULL outside its aggregates (arithmetic, casts, ``round``...: no COALESCE, CASE,
  ``greatest``, IS NULL or unknown function, which may turn the empty group's NULL into a value);
- the COUNT bug: COUNT over an empty group is 0, not NULL. A select expression that is exactly ``COUNT(...)``
  is joined with LEFT JOIN and compared as ``COALESCE(dc1.v, 0)``; any other expression holding COUNT is left
  correlated;
- an aggregate that reads the order of its rows (``string_agg``, ``array_agg``...) is left correlated: the two
  forms may feed it its rows in another order.
This is an expanding rule: applied when the statement's term is built (``optimizers.rewrites.search.term``), it adds its
form as equal to the written one, and extraction and the shadow's measurements choose. The shared core
(``correlation``, ``empty_value``, ``derived_sql``, ``join_on``) also serves the subqueries of a SELECT's shell
(``rules.decorrelate_shell``). (``x NOT IN (SELECT y ...)`` -> NOT EXISTS is a rule of the e-graph, ``rules.nulls``,
guarded by the nullability analysis.)

>>> empty_value(sqlglot.parse_one("round(avg(x), 2)")), empty_value(sqlglot.parse_one("count(*)"))
('null', 'count')
>>> empty_value(sqlglot.parse_one("greatest(max(x), 0)"))
"the subquery's value is not NULL on an empty group (COUNT inside, or COALESCE/CASE/another function)"
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT
from optimizers.rewrites.sql.expressions import ORDER_FREE
from optimizers.rewrites.sql.lowered import Atom, Lowered
from optimizers.rewrites.sql.predicates import NULL_PROPAGATING

DIALECTS = EVERY_DIALECT  # the dialects this rule keeps a statement's meaning in (``rules.base.Dialects``)

NAME = "decorrelate_scalar_aggregate"
# functions that return NULL whenever an argument is NULL (beyond ``sql.predicates.NULL_PROPAGATING``): a value built of
# these over non-COUNT aggregates is NULL on an empty group, as the join's missing row is
STRICT_FUNCTIONS = (exp.Round, exp.Floor, exp.Ceil, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow, exp.DPipe,
                    exp.Trim, exp.DateTrunc, exp.TimestampTrunc, exp.Sign)
NOT_NULL_ON_EMPTY = ("the subquery's value is not NULL on an empty group (COUNT inside, or COALESCE/CASE/another "
                     "function)")


@dataclass(frozen=True)
class Decorrelated:
    sql: str  # the grouped subquery
    alias: str
    on: tuple[Atom, ...]  # the join on its keys
    compare: Atom  # the comparison with its value
    outer: bool  # LEFT JOIN (COUNT) rather than JOIN


def scalar_aggregate(atom: Atom, alias: str) -> Decorrelated | str:
    """The decorrelated form of a ``scalar`` atom (see ``optimizers.rewrites.sql.lower``), or why there is none."""
    op, outer_sql, _, select = atom.detail
    sub = atom.sub
    empty = empty_value(select)
    if empty not in ("null", "count"):
        return empty
    if _refs(select) - sub.aliases:
        return "the subquery's value reads an outer column"
    found = correlation(sub)
    if isinstance(found, str):
        return found
    keys, inner = found
    sql = derived_sql(sub, keys, inner, select, grouped=True)
    if sql is None:
        return "the subquery reads the outer query outside its WHERE conjuncts"
    counting = empty == "count"
    outer_refs = atom.refs
    value = f"COALESCE({alias}.v, 0)" if counting else f"{alias}.v"
    compare_refs = frozenset({alias}) | (_refs_sql(outer_sql, sub.dialect) & outer_refs)
    compare = Atom(f"{outer_sql} {op} {value}", compare_refs, frozenset() if counting else compare_refs)
    return Decorrelated(sql, alias, join_on(alias, keys, outer_refs, sub.dialect), compare, counting)


def empty_value(select: exp.Expression) -> str:
    """What a scalar aggregate subquery's value is over no rows: ``"null"`` (aggregates other than COUNT under parts
    that keep a NULL NULL), ``"count"`` (exactly ``COUNT(...)``: 0), or why it is neither (then the value over an
    empty group differs from the NULL a join's missing row gives, and the subquery stays correlated)."""
    aggregates = [n for n in select.walk(prune=lambda n: isinstance(n, exp.AggFunc)) if isinstance(n, exp.AggFunc)]
    if not aggregates:
        return "the subquery's value is not an aggregate"
    if any(isinstance(n, (exp.Window, exp.Subquery, exp.Select)) for n in select.walk() if n is not select):
        return "the subquery's value holds a window or another subquery"
    if any(not isinstance(a, ORDER_FREE) for a in aggregates):
        return "the subquery's aggregate reads the order of its rows"
    if isinstance(select, exp.Count):
        return "count"
    outside = [n for n in select.walk(prune=lambda n: isinstance(n, exp.AggFunc)) if not isinstance(n, exp.AggFunc)]
    if any(isinstance(a, exp.Count) for a in aggregates) or not all(
            isinstance(n, (*NULL_PROPAGATING, *STRICT_FUNCTIONS)) for n in outside):
        return NOT_NULL_ON_EMPTY
    return "null"


def correlation(sub: Lowered, outer: frozenset[str] | None = None) -> tuple[list[tuple[str, str]], list[Atom]] | str:
    """A correlated subquery's keys, (inner column, outer expression) of each correlated conjunct, and its other
    (inner) conjuncts; or why it cannot be grouped by them: a correlated conjunct that is not an equality of an
    inner column with outer values (reading only ``outer`` where given), an inner condition with a subquery of its
    own, no correlation at all."""
    keys: list[tuple[str, str]] = []
    inner: list[Atom] = []
    for a in sub.atoms:
        if a.refs <= sub.aliases:
            inner.append(a)
            continue
        key = _key(a, sub.aliases, sub.dialect)
        if key is None or (outer is not None and not _refs_sql(key[1], sub.dialect) <= outer):
            return f"a correlated condition is not an equality of an inner column with outer values: {a.sql}"
        keys.append(key)
    if not keys:
        return "the subquery is not correlated"
    if any(a.kind != "plain" for a in inner):
        return "the subquery holds subqueries of its own"
    return keys, inner


def derived_sql(sub: Lowered, keys: list[tuple[str, str]], inner: list[Atom], value: exp.Expression | None,
                grouped: bool) -> str | None:
    """The derived table ``SELECT <key> AS k1, ..., <value> AS v FROM <sub's FROM> WHERE <inner> [GROUP BY <keys>]``
    (``value`` None: ``TRUE``); None where it would read a relation outside its FROM (the subquery reads the outer
    query outside its WHERE: a join's ON, its select list), written in the subquery's dialect."""
    dialect = sub.dialect
    out = sub.shell.copy()
    for clause in ("order", "limit", "offset", "distinct", "having", "group"):
        out.set(clause, None)
    out.set("expressions", [sqlglot.parse_one(f"{col} AS k{i}", read=dialect) for i, (col, _) in enumerate(keys, 1)]
            + [exp.alias_(value.copy() if value is not None else exp.true(), "v")])
    out.set("where", exp.Where(this=sqlglot.parse_one(" AND ".join(f"({a.sql})" for a in inner), read=dialect))
            if inner else None)
    if grouped:
        out.set("group", exp.Group(expressions=[sqlglot.parse_one(col, read=dialect) for col, _ in keys]))
    if _refs(out) - sub.every_alias():
        return None
    return out.sql(dialect=dialect)


def join_on(alias: str, keys: list[tuple[str, str]], outer_refs: frozenset[str], dialect: str) -> tuple[Atom, ...]:
    """The join's condition: ``alias.k<i> = <outer expression>`` for each key (the keys' SQL in ``dialect``)."""
    out = []
    for i, (_, outer) in enumerate(keys, 1):
        refs = frozenset({alias}) | (_refs_sql(outer, dialect) & outer_refs)
        out.append(Atom(f"{alias}.k{i} = {outer}", refs, refs))
    return tuple(out)


def _key(atom: Atom, inner: frozenset[str], dialect: str) -> tuple[str, str] | None:
    node = sqlglot.parse_one(atom.sql, read=dialect)
    if not isinstance(node, exp.EQ):
        return None
    for col, other in ((node.this, node.expression), (node.expression, node.this)):
        if isinstance(col, exp.Column) and col.table in inner and not (_refs(other) & inner) and _refs(other):
            if any(isinstance(n, (exp.Subquery, exp.Select, exp.AggFunc, exp.Window)) for n in other.walk()):
                return None
            return col.sql(dialect=dialect), other.sql(dialect=dialect)
    return None


def _refs(node: exp.Expression) -> frozenset[str]:
    return frozenset(c.table for c in node.find_all(exp.Column) if c.table)


def _refs_sql(sql: str, dialect: str) -> frozenset[str]:
    return _refs(sqlglot.parse_one(sql, read=dialect))
