"""Decorrelating a comparison with a correlated scalar aggregate (TPC-H Q17, Q20, Q2): PostgreSQL runs such a
subquery once per outer row; grouped once by its correlation keys and joined, it runs once.

    x < (SELECT 0.2 * avg(l.q) FROM lineitem l WHERE l.k = p.k AND <inner>)
    ->  JOIN (SELECT l.k AS k1, 0.2 * avg(l.q) AS v FROM lineitem l WHERE <inner> GROUP BY l.k) dc1
        ON dc1.k1 = p.k  WHERE x < dc1.v

Guards that keep the meaning:
- every correlated conjunct is ``inner column = outer expression`` (the grouping keys; one derived row per key,
  so no outer row is duplicated), and the select expression holds an aggregate and nothing correlated;
- an empty group: the subquery gives NULL for avg/sum/min/max, and a strict expression of them is NULL, so the
  comparison is not true and the row goes, exactly as when the join finds no group. The select expression must
  therefore be strict (no COALESCE, CASE, IS NULL...);
- the COUNT bug: COUNT over an empty group is 0, not NULL. A select expression that is exactly ``COUNT(...)``
  is joined with LEFT JOIN and compared as ``COALESCE(dc1.v, 0)``; any other expression holding COUNT is left
  correlated.
This is an expanding rule: applied when the statement's term is built (``optimizers.rewrites.term``), it adds its
form as equal to the written one, and extraction and the shadow's measurements choose. (``x NOT IN (SELECT y ...)``
-> NOT EXISTS is a rule of the e-graph, ``rules.nulls``, guarded by the nullability analysis.)
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from optimizers.rewrites.predicates import LENIENT, Atom

NAME = "decorrelate_scalar_aggregate"


@dataclass(frozen=True)
class Decorrelated:
    sql: str  # the grouped subquery
    alias: str
    on: tuple[Atom, ...]  # the join on its keys
    compare: Atom  # the comparison with its value
    outer: bool  # LEFT JOIN (COUNT) rather than JOIN


def scalar_aggregate(atom: Atom, alias: str) -> Decorrelated | str:
    """The decorrelated form of a ``scalar`` atom (see ``optimizers.rewrites.lower``), or why there is none."""
    op, outer_sql, _, select = atom.detail
    sub = atom.sub
    if not list(select.find_all(exp.AggFunc)):
        return "the subquery's value is not an aggregate"
    if any(isinstance(n, (exp.Window, exp.Subquery, exp.Select)) for n in select.walk() if n is not select):
        return "the subquery's value holds a window or another subquery"
    counting = isinstance(select, exp.Count)
    if not counting and (list(select.find_all(exp.Count)) or any(isinstance(n, LENIENT) for n in select.walk())):
        return "the subquery's value is not NULL on an empty group (COUNT inside, or COALESCE/CASE)"
    if _refs(select) - sub.aliases:
        return "the subquery's value reads an outer column"
    keys: list[tuple[str, str]] = []  # (inner column, outer expression)
    inner: list[Atom] = []
    for a in sub.atoms:
        if a.refs <= sub.aliases:
            inner.append(a)
            continue
        key = _key(a, sub.aliases)
        if key is None:
            return f"a correlated condition is not an equality of an inner column with outer values: {a.sql}"
        keys.append(key)
    if not keys:
        return "the subquery is not correlated"
    if any(a.kind != "plain" for a in inner):
        return "the subquery holds subqueries of its own"
    grouped = sub.shell.copy()
    grouped.set("expressions", [sqlglot.parse_one(f"{col} AS k{i}", read="postgres")
                                for i, (col, _) in enumerate(keys, 1)]
                + [exp.alias_(select.copy(), "v")])
    grouped.set("where", exp.Where(this=sqlglot.parse_one(" AND ".join(f"({a.sql})" for a in inner),
                                                          read="postgres")) if inner else None)
    grouped.set("group", exp.Group(expressions=[sqlglot.parse_one(col, read="postgres") for col, _ in keys]))
    outer_refs = atom.refs
    on = tuple(Atom(f"{alias}.k{i} = {outer}", frozenset({alias}) | (_refs_sql(outer) & outer_refs),
                    frozenset({alias}) | (_refs_sql(outer) & outer_refs)) for i, (_, outer) in enumerate(keys, 1))
    value = f"COALESCE({alias}.v, 0)" if counting else f"{alias}.v"
    compare_refs = frozenset({alias}) | (_refs_sql(outer_sql) & outer_refs)
    compare = Atom(f"{outer_sql} {op} {value}", compare_refs, frozenset() if counting else compare_refs)
    return Decorrelated(grouped.sql(dialect="postgres"), alias, on, compare, counting)


def _key(atom: Atom, inner: frozenset[str]) -> tuple[str, str] | None:
    node = sqlglot.parse_one(atom.sql, read="postgres")
    if not isinstance(node, exp.EQ):
        return None
    for col, other in ((node.this, node.expression), (node.expression, node.this)):
        if isinstance(col, exp.Column) and col.table in inner and not (_refs(other) & inner) and _refs(other):
            if any(isinstance(n, (exp.Subquery, exp.Select, exp.AggFunc)) for n in other.walk()):
                return None
            return col.sql(dialect="postgres"), other.sql(dialect="postgres")
    return None


def _refs(node: exp.Expression) -> frozenset[str]:
    return frozenset(c.table for c in node.find_all(exp.Column) if c.table)


def _refs_sql(sql: str) -> frozenset[str]:
    return _refs(sqlglot.parse_one(sql, read="postgres"))
