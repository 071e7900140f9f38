"""Eager aggregation: a statement-level rule (``rules.statement``) that aggregates a table before it is joined.

``eager_aggregate``: ``SELECT g..., agg(c.m)... FROM c JOIN p ON c.x = p.k [WHERE ...] GROUP BY g...`` where the
join's equalities cover a unique key of ``p`` (each row of ``c`` meets at most one row of ``p``) and every
aggregate reads only ``c`` (``count(*)``, ``count``, ``sum``, ``min``, ``max``, none DISTINCT) becomes ``... FROM
(SELECT c.x, <c's grouping columns>, count(*), sum(c.m)... FROM c WHERE <c's conditions> GROUP BY c.x, ...) AS
eager JOIN p ON eager.x = p.k WHERE <p's conditions> GROUP BY g...`` with ``sum`` of the partial counts and sums,
``min`` of the minima, ``max`` of the maxima: each group's rows of ``c`` are split by their join columns, whose rows
all meet the same row of ``p``, so the partial aggregates combine into the whole. A group's count is then a sum:
cast back to a whole number, as is a sum of whole numbers on PostgreSQL (where the sum of sums of ``integer`` is
``numeric``, the sum ``bigint``); sums of floating-point columns are left alone (their rounding would change).
The join then meets one row per join value instead of every row of ``c``.

>>> import sqlglot
>>> from optimizers.rewrites.rules.base import Facts
>>> facts = Facts({"c": {"x": "integer", "m": "integer"}, "p": {"k": "integer", "g": "text"}}, frozenset(),
...               {"p": (("k",),)}, dialect="postgres")
>>> tree = sqlglot.parse_one("SELECT p.g, count(*) AS n, max(c.m) AS top FROM c JOIN p ON c.x = p.k "
...                          "WHERE c.m > 0 GROUP BY p.g ORDER BY n DESC LIMIT 5")
>>> print(eager_aggregate(tree, facts).sql())  # doctest: +NORMALIZE_WHITESPACE
SELECT p.g, CAST(SUM(eager.a1) AS BIGINT) AS n, MAX(eager.a2) AS top FROM (SELECT c.x AS k1, COUNT(*) AS a1,
MAX(c.m) AS a2 FROM c WHERE c.m > 0 GROUP BY c.x) AS eager JOIN p ON eager.k1 = p.k GROUP BY p.g
ORDER BY n DESC LIMIT 5
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT, Facts
from optimizers.rewrites.rules.syntax import aliases_of, conjuncts, join_columns, reads, with_conjuncts

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

WHOLE = ("smallint", "integer", "int", "int2", "int4", "tinyint", "mediumint")  # sums of these are bigint (PG)
EXACT = WHOLE + ("bigint", "int8", "numeric", "decimal")
# the dialects (connector keys, as ``DIALECTS``) whose SUM of a WHOLE column is an integer (bigint): a sum of the
# partial sums is then numeric there and is cast back; elsewhere (MariaDB, MySQL: DECIMAL either way) it is left
INTEGER_SUMS = frozenset({"postgres"})
ALIAS = "eager"


def _type(col: exp.Column, table: str, facts: Facts) -> str:
    return facts.schema.get(table, {}).get(col.name, "").lower().split("(")[0].strip()


def eager_aggregate(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """Aggregate the joined large table by its join columns (and its own grouping columns) before the join on a
    unique key of the other table; the partial counts and sums summed, minima and maxima taken again."""
    if any(tree.args.get(k) for k in ("distinct", "with_")) or not tree.args.get("group"):
        return None
    sources, joins = aliases_of(tree), tree.args.get("joins") or []
    if sources is None or len(sources) != 2 or len(joins) != 1 or joins[0].side or not joins[0].args.get("on"):
        return None
    c, p = list(sources)
    pairs = join_columns(joins[0].args["on"], c, p)
    if not pairs or not any(set(k) <= {name for _, name in pairs} for k in facts.keys.get(sources[p][0], ())):
        return None
    if ALIAS in sources or tree.find(exp.Window) or any(n is not tree for n in tree.find_all(exp.Select)):
        return None
    new = tree.copy()
    group = new.args["group"].expressions
    if any(reads(g) - {c, p} or isinstance(g, exp.Literal) for g in group):
        return None
    keys = [col.copy() for col, _ in pairs] + [g.copy() for g in group if reads(g) == {c}]
    inner_items = [exp.alias_(k, f"k{n + 1}") for n, k in enumerate(keys)]
    aggs: list[exp.Expression] = []

    def partial(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.AggFunc):
            return node
        arg = node.this
        if node.find(exp.Distinct) or not isinstance(node, (exp.Count, exp.Sum, exp.Min, exp.Max)) \
                or (not isinstance(arg, exp.Star) and reads(arg) != {c}):
            raise _Refused
        kind = _type(arg, sources[c][0], facts) if isinstance(arg, exp.Column) else ""
        if isinstance(node, exp.Sum) and kind not in EXACT:
            raise _Refused  # a float's sum rounds differently in pieces (or the type is not known)
        aggs.append(exp.alias_(node.copy(), f"a{len(aggs) + 1}"))
        ref = exp.column(f"a{len(aggs)}", table=ALIAS)
        if isinstance(node, (exp.Min, exp.Max)):
            return type(node)(this=ref)
        total = exp.Sum(this=ref)
        whole = isinstance(node, exp.Count) or (kind in WHOLE and facts.dialect in INTEGER_SUMS)
        return exp.Cast(this=total, to=exp.DataType.build("BIGINT")) if whole else total

    def outside(node: exp.Expression) -> exp.Expression:
        for k, key in enumerate(keys):
            if node == key and k >= len(pairs):
                return exp.column(f"k{k + 1}", table=ALIAS)
        if isinstance(node, exp.Column) and node.table == c:
            raise _Refused  # a column of c outside an aggregate that is not one of its grouping columns
        return node

    try:
        for key in ("expressions", "having", "order"):
            if new.args.get(key) is not None:
                node = new.args[key]
                done = [e.transform(partial).transform(outside) for e in node] if isinstance(node, list) else \
                    node.transform(partial).transform(outside)
                new.set(key, done)
        new.set("group", exp.Group(expressions=[g.transform(outside) for g in group]))
    except _Refused:
        return None
    if not aggs:
        return None
    mine = [x for x in conjuncts(tree) if reads(x) <= {c}]
    theirs = [x for x in conjuncts(tree) if not reads(x) <= {c}]
    if any(c in reads(x) for x in theirs):
        return None
    body = exp.select(*inner_items, *aggs).from_(tree.args["from_"].this.copy())
    body = with_conjuncts(body, mine) if mine else body
    body.set("group", exp.Group(expressions=[k.copy() for k in keys]))
    on = exp.and_(*[exp.EQ(this=exp.column(f"k{n + 1}", table=ALIAS), expression=exp.column(name, table=p))
                    for n, (_, name) in enumerate(pairs)])
    new.set("from_", exp.From(this=exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(ALIAS)))))
    new.args["joins"][0].set("on", on)
    return with_conjuncts(new, theirs)


class _Refused(Exception):
    """A part of the statement the rule does not rewrite (raised from inside a tree transform)."""
