"""Statement families for a query rewriter beyond decorrelation: the shapes of TPC-DS- and DSB-like work that a
planner runs badly as written and a rewrite runs well, over any schema's edges. Like ``rewrites``, each is a
function from a ``Ctx`` to SQL (written in ``catalog.SOURCE_DIALECT``) or None when this schema or draw gives none.

- ``not_in``: ``x NOT IN (SELECT y FROM child ...)`` over an edge, y nullable or not: PostgreSQL runs it as a
  (hashed, or when the subquery is large, plain: quadratic) subplan per row, never an anti-join;
- ``correlated_in``: ``x IN (SELECT y ... WHERE <correlated>)``: a correlated IN is not pulled up into a semi-join
  (a subplan per outer row); written EXISTS it is;
- ``or_join``: a join whose ON is an OR over two edges between the same tables (a nested loop: no hash or merge join
  takes an OR), or a filter OR an EXISTS (a subplan per row);
- ``join_aggregate``: a large table joined to a referenced one on its key and grouped by the referenced table's
  columns: aggregating the large table by its edge's columns first (eager aggregation) joins far fewer rows;
- ``cte_reuse``: a grouped CTE read twice (materialized, so a filter on its grouping column is applied after the
  whole aggregation), each reading filtered on the grouping column (TPC-DS's customer_total_return shape);
- ``window_joinback``: rows compared with their group's aggregate through a grouped derived table (or CTE) of the
  same table joined back on the grouping column, under the same filter (two scans, an aggregation and a join, where
  a window function takes one scan);
- ``union_filter``: a UNION ALL (sometimes UNION) of two tables' key columns along an edge, filtered on the key
  outside the union: as a derived table, or as a CTE read twice (materialized, so filtered after both tables are
  read whole; TPC-DS's channel unions).

Every ``LIMIT`` follows an ``ORDER BY`` that ends in a unique key (or every selected column), so a rewrite can be
checked by comparing results.
"""

from __future__ import annotations

from workloads.datasets.synthetic.catalog import Edge
from workloads.datasets.synthetic.draw import (Ctx, alias, categorical, measures, pick_edge, pick_table, pick_value,
                                               rangeable)
from workloads.datasets.synthetic.families import Builder, between, col, equality, on_clause, parent_filter, shown
from workloads.datasets.synthetic.rewrites import _child_range, _keys, _pair, _tuple


def not_in(ctx: Ctx) -> str | None:
    """Parent rows (a few, by an equality) whose key no child row (all of them, or a range) references."""
    pair = _pair(ctx, need_keys=False)
    if pair is None:
        return None
    e, child, parent, ca, pa = pair
    crow = ctx.row(child, list(e.columns) + [c.name for c in rangeable(child)][:3])
    pfilter = parent_filter(ctx, e, pa, crow)
    if pfilter is None or len(e.columns) != 1:
        return None
    crange = _child_range(ctx, child, ca, e, crow) if ctx.rng.random() < 0.4 else None
    what = shown(ctx, parent, pa, [], 2)
    inner = f"SELECT {ca}.{ctx.schema.ident(e.columns[0])} FROM {ctx.schema.ref(child)} {ca}" + \
        (f" WHERE {crange}" if crange else "")
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(parent)} {pa} WHERE {pfilter} AND "
            f"{_tuple(ctx, pa, e.parent_columns)} NOT IN ({inner}) {_keys(ctx, parent, pa, what)} LIMIT 100")


def correlated_in(ctx: Ctx) -> str | None:
    """Rows of a table (in a range) whose edge's columns another row of the same table shares in the same category
    (``c1.fk IN (SELECT c2.fk FROM t c2 WHERE c2.cat = c1.cat AND c2.key <> c1.key)``)."""
    e = pick_edge(ctx, lambda e: bool(ctx.schema.table(e.child).keys) and bool(categorical(ctx.schema.table(e.child))))
    if e is None:
        return None
    t = ctx.schema.table(e.child)
    if len(e.columns) != 1:
        return None
    taken: set[str] = set()
    a, b = alias(t, taken, ctx.schema), alias(t, taken, ctx.schema)
    cat = ctx.rng.choice(categorical(t))
    crange = _child_range(ctx, t, a, e)
    if crange is None:
        return None
    fk, c = ctx.schema.ident(e.columns[0]), ctx.schema.ident(cat.name)
    other = f"{_tuple(ctx, b, t.keys[0])} <> {_tuple(ctx, a, t.keys[0])}"  # another row: its key differs
    what = shown(ctx, t, a, [], 2)
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(t)} {a} WHERE {crange} AND {a}.{fk} IN "
            f"(SELECT {b}.{fk} FROM {ctx.schema.ref(t)} {b} WHERE {b}.{c} = {a}.{c} AND {other}) "
            f"{_keys(ctx, t, a, what)} LIMIT 100")


def _twin_edges(ctx: Ctx) -> tuple[Edge, Edge] | None:
    """Two single-column edges from one table to the same key of another (a sale's ship and bill customer)."""
    edges = [e for e in ctx.schema.edges if len(e.columns) == 1 and e.child != e.parent]
    pairs = [(x, y) for x in edges for y in edges if x.child == y.child and x.parent == y.parent
             and x.parent_columns == y.parent_columns and x.columns[0] < y.columns[0]]
    return ctx.rng.choice(pairs) if pairs else None


def or_join(ctx: Ctx) -> str | None:
    """A join on ``c.fk1 = p.key OR c.fk2 = p.key`` where a table has two edges to one key; elsewhere a filter OR
    an EXISTS over an edge."""
    rng = ctx.rng
    twins = _twin_edges(ctx)
    if twins is not None and rng.random() < 0.7:
        e1, e2 = twins
        child, parent = ctx.schema.table(e1.child), ctx.schema.table(e1.parent)
        taken: set[str] = set()
        ca, pa = alias(child, taken, ctx.schema), alias(parent, taken, ctx.schema)
        crow = ctx.row(child, [e1.columns[0], e2.columns[0]] + [c.name for c in rangeable(child)][:3])
        pfilter, crange = parent_filter(ctx, e1, pa, crow), _child_range(ctx, child, ca, e1, crow)
        if pfilter is None or crange is None:
            return None
        on = f"{on_clause(ctx, e1, ca, pa)} OR {on_clause(ctx, e2, ca, pa)}"
        what = shown(ctx, parent, pa, [], 1) + shown(ctx, child, ca, [], 2)
        keys = _keys(ctx, child, ca, what).removeprefix("ORDER BY ")
        first = [k for k in _keys(ctx, parent, pa, []).removeprefix("ORDER BY ").split(", ") if k]
        return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(child)} {ca} JOIN {ctx.schema.ref(parent)} {pa} "
                f"ON {on} WHERE {pfilter} AND {crange} ORDER BY {', '.join(first + [keys])} LIMIT 100")
    pair = _pair(ctx)
    if pair is None:
        return None
    e, child, parent, ca, pa = pair
    crow = ctx.row(child, list(e.columns) + [c.name for c in rangeable(child)][:3])
    cats = [c for c in categorical(parent) if c.name not in e.parent_columns]
    crange = _child_range(ctx, child, ca, e, crow)
    if not cats or crange is None:
        return None
    if len(cats) < 2:
        return None
    c1, c2 = rng.sample(cats, 2)
    f1 = equality(ctx, pa, c1, pick_value(c1, rng))
    f2 = equality(ctx, pa, c2, pick_value(c2, rng))
    if f1 is None or f2 is None:
        return None
    what = shown(ctx, parent, pa, [], 2)
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(parent)} {pa} WHERE {f1} AND ({f2} OR EXISTS "
            f"(SELECT 1 FROM {ctx.schema.ref(child)} {ca} WHERE {on_clause(ctx, e, ca, pa)} AND {crange})) "
            f"{_keys(ctx, parent, pa, what)} LIMIT 100")


FANOUT = 20  # rows of the large table per value of its edge's columns, at least, for join_aggregate


def _fanout(ctx: Ctx, e: Edge) -> float:
    """Rows of ``e``'s child per distinct value of its first edge column (statistics)."""
    child = ctx.schema.table(e.child)
    return child.rows / max(child.column(e.columns[0]).distinct(child.rows), 1.0)


def join_aggregate(ctx: Ctx) -> str | None:
    """A large table joined to a referenced table on its key, grouped by one of the referenced table's columns
    (with the large table's range in WHERE): count, sum, min and max of the large table's measures."""
    rng = ctx.rng
    def fits(e: Edge) -> bool:
        return bool(measures(ctx.schema, ctx.schema.table(e.child))) and bool(ctx.schema.table(e.parent).keys) \
            and bool(categorical(ctx.schema.table(e.parent)))

    # an edge whose large table has many rows per join value (where aggregating first pays), else any
    e = pick_edge(ctx, lambda e: fits(e) and _fanout(ctx, e) >= FANOUT, power=1.0) or pick_edge(ctx, fits, power=1.0)
    if e is None:
        return None
    child, parent = ctx.schema.table(e.child), ctx.schema.table(e.parent)
    if sorted(e.parent_columns) not in [sorted(k) for k in parent.keys]:
        return None
    taken: set[str] = set()
    ca, pa = alias(child, taken, ctx.schema), alias(parent, taken, ctx.schema)
    g = col(ctx, pa, rng.choice(categorical(parent)))
    m = col(ctx, ca, rng.choice(measures(ctx.schema, child)))
    ranges = [c for c in rangeable(child) if c.name not in e.columns]
    where = between(ctx, ca, rng.choice(ranges), rng.choice((0.3, 0.6, 0.9))) if ranges else None
    aggs = ["count(*) AS n", f"sum({m}) AS total", rng.choice((f"max({m}) AS top", f"min({m}) AS least"))]
    having = " HAVING count(*) > 1" if rng.random() < 0.3 else ""
    return (f"SELECT {g}, {', '.join(aggs)} FROM {ctx.schema.ref(child)} {ca} JOIN {ctx.schema.ref(parent)} {pa} "
            f"ON {on_clause(ctx, e, ca, pa)}" + (f" WHERE {where}" if where else "") +
            f" GROUP BY {g}{having} ORDER BY n DESC, {g} LIMIT 20")


def cte_reuse(ctx: Ctx) -> str | None:
    """``WITH g AS (SELECT fk, count, sum FROM child GROUP BY fk)``, read twice over one range of its grouping
    column: the groups of the range whose count is at least the range's average."""
    e = pick_edge(ctx, lambda e: len(e.columns) == 1 and bool(measures(ctx.schema, ctx.schema.table(e.child))),
                  power=1.0)
    if e is None:
        return None
    child, parent = ctx.schema.table(e.child), ctx.schema.table(e.parent)
    pk = parent.column(e.parent_columns[0]) if parent.columns else None
    if pk is None or pk.kind not in ("int", "num"):
        return None
    ca = alias(child, set(), ctx.schema)
    fk, m = ctx.schema.ident(e.columns[0]), col(ctx, ca, ctx.rng.choice(measures(ctx.schema, child)))
    where = between(ctx, "g1", pk, ctx.rng.choice((0.01, 0.05)))
    if where is None:
        return None
    where = where.replace(f"g1.{ctx.schema.ident(pk.name)}", "g1.k")
    again = where.replace("g1.k", "g2.k")
    return (f"WITH g AS (SELECT {ca}.{fk} AS k, count(*) AS n, sum({m}) AS total FROM {ctx.schema.ref(child)} {ca} "
            f"GROUP BY {ca}.{fk}) SELECT g1.k, g1.n, g1.total FROM g g1 WHERE {where} AND g1.n >= "
            f"(SELECT avg(g2.n) FROM g g2 WHERE {again}) ORDER BY g1.k LIMIT 100")


def window_joinback(ctx: Ctx) -> str | None:
    """``t a JOIN (SELECT b.cat, avg(b.m) ... FROM t b [WHERE <range>] GROUP BY b.cat) g ON a.cat = g.cat WHERE
    [<the same range on a> AND] a.m > g.avg_m``: a table's rows above (or at) their category's average (maximum),
    the grouped table sometimes a CTE."""
    rng = ctx.rng
    t = pick_table(ctx, lambda t: bool(t.keys) and bool(categorical(t)) and bool(measures(ctx.schema, t)), power=1.0)
    if t is None:
        return None
    taken: set[str] = set()
    a, b = alias(t, taken, ctx.schema), alias(t, taken, ctx.schema)
    cat, m = rng.choice(categorical(t)), rng.choice(measures(ctx.schema, t))
    ranges = [c for c in rangeable(t) if c.name not in (cat.name, m.name)]
    where = between(ctx, "@@", rng.choice(ranges), rng.choice((0.1, 0.3, 0.7))) \
        if ranges and rng.random() < 0.75 else None
    k, v = ctx.schema.ident(cat.name), ctx.schema.ident(m.name)
    agg, test = rng.choice((("avg", ">"), ("avg", ">"), ("max", "="), ("min", "=")))
    scale = "1.2 * " if agg == "avg" and rng.random() < 0.5 else ""
    grouped = (f"SELECT {b}.{k}, {agg}({b}.{v}) AS {agg}_m FROM {ctx.schema.ref(t)} {b}" +
               (f" WHERE {where.replace('@@', b)}" if where else "") + f" GROUP BY {b}.{k}")
    what = shown(ctx, t, a, [m], 2)
    outer = (f" WHERE {where.replace('@@', a)} AND" if where else " WHERE") + f" {a}.{v} {test} {scale}g.{agg}_m"
    tail = f"{outer} {_keys(ctx, t, a, what)} LIMIT 100"
    if rng.random() < 0.3:
        return f"WITH g AS ({grouped}) SELECT {', '.join(what)} FROM {ctx.schema.ref(t)} {a} JOIN g ON " \
               f"{a}.{k} = g.{k}{tail}"
    return f"SELECT {', '.join(what)} FROM {ctx.schema.ref(t)} {a} JOIN ({grouped}) g ON {a}.{k} = g.{k}{tail}"


def union_filter(ctx: Ctx) -> str | None:
    """``(SELECT c.fk AS k, c.m AS v FROM child c UNION ALL SELECT p.key, p.m FROM parent p) u WHERE <range on
    u.k>``, grouped by k: as a derived table, or a CTE read twice (the groups with at least 1% of the range's rows)."""
    rng = ctx.rng
    def fits(e: Edge) -> bool:
        child, parent = ctx.schema.table(e.child), ctx.schema.table(e.parent)
        return len(e.columns) == 1 and bool(measures(ctx.schema, child)) and \
            child.column(e.columns[0]).type == parent.column(e.parent_columns[0]).type
    e = pick_edge(ctx, fits, power=1.0)
    if e is None:
        return None
    child, parent = ctx.schema.table(e.child), ctx.schema.table(e.parent)
    pk = parent.column(e.parent_columns[0])
    if pk.kind not in ("int", "num"):
        return None
    taken: set[str] = set()
    ca, pa = alias(child, taken, ctx.schema), alias(parent, taken, ctx.schema)
    theirs = measures(ctx.schema, parent)
    v2 = col(ctx, pa, rng.choice(theirs)) if theirs else "0"
    union = (f"SELECT {ca}.{ctx.schema.ident(e.columns[0])} AS k, {col(ctx, ca, rng.choice(measures(ctx.schema, child)))}"
             f" AS v FROM {ctx.schema.ref(child)} {ca} UNION{' ALL' if rng.random() < 0.8 else ''} SELECT "
             f"{pa}.{ctx.schema.ident(pk.name)}, {v2} FROM {ctx.schema.ref(parent)} {pa}")
    where = between(ctx, "@@", pk, rng.choice((0.01, 0.05, 0.2)))
    if where is None:
        return None
    where = where.replace(f"@@.{ctx.schema.ident(pk.name)}", "@@.k")
    if rng.random() < 0.5:
        return (f"SELECT u.k, count(*) AS n, sum(u.v) AS total FROM ({union}) u WHERE {where.replace('@@', 'u')} "
                f"GROUP BY u.k ORDER BY u.k LIMIT 100")
    return (f"WITH u AS ({union}) SELECT u1.k, count(*) AS n, sum(u1.v) AS total FROM u u1 WHERE "
            f"{where.replace('@@', 'u1')} GROUP BY u1.k HAVING 100 * count(*) >= (SELECT count(*) FROM u u2 WHERE "
            f"{where.replace('@@', 'u2')}) ORDER BY u1.k LIMIT 100")


BUILDERS: dict[str, Builder] = {"not_in": not_in, "correlated_in": correlated_in, "or_join": or_join,
                                "join_aggregate": join_aggregate, "cte_reuse": cte_reuse,
                                "window_joinback": window_joinback, "union_filter": union_filter}
