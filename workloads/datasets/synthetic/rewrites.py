"""Statement families for a query rewriter: the shapes application code writes that planners handle badly or that
rewriters get wrong, over any schema's edges. Like ``families``, each is a function from a ``Ctx`` to SQL or None.

- ``scalar_subquery``: a correlated scalar aggregate in the select list (or compared in WHERE: the COUNT bug's
  shape), or over the outer table's own rows (TPC-H Q17's shape) where that table is small enough to finish;
- ``exists``: EXISTS / NOT EXISTS from either end of an edge, with filters inside;
- ``in_subquery``: IN / NOT IN over an edge (NOT IN over a nullable column included: an anti-join changes it);
- ``derived_distinct``: a derived table with DISTINCT, grouped or joined outside, or DISTINCT over a key;
- ``set_operation``: UNION, UNION ALL, INTERSECT or EXCEPT over one table's two filters or an edge's two ends;
- ``outer_join``: LEFT JOIN with a filter in ON, with a null-rejecting filter in WHERE (inner in effect), or with
  ``IS NULL`` on the nullable side (an anti-join).

Every ``LIMIT`` follows an ``ORDER BY`` that ends in a unique key (or every selected column), so a rewrite can be
checked by comparing results.
"""

from __future__ import annotations

from workloads.datasets.synthetic.catalog import Edge, Table
from workloads.datasets.synthetic.draw import (Ctx, alias, categorical, measures, pick_edge, pick_table, pick_value, rangeable,
                                      selective)
from workloads.datasets.synthetic.families import (Builder, between, col, equality, key_cols, on_clause, order_by, parent_filter,
                                          shown)

CORRELATED_BUDGET = 2_000_000  # rows an outer row count times the inner table's rows may reach


def _pair(ctx: Ctx, need_keys: bool = True) -> tuple[Edge, Table, Table, str, str] | None:
    e = pick_edge(ctx, lambda e: bool(ctx.schema.table(e.parent).keys) or not need_keys)
    if e is None:
        return None
    child, parent = ctx.schema.table(e.child), ctx.schema.table(e.parent)
    taken: set[str] = set()
    pa, ca = alias(parent, taken, ctx.schema), alias(child, taken, ctx.schema)
    return e, child, parent, ca, pa


def _keys(ctx: Ctx, t: Table, a: str, shown_cols: list[str]) -> str:
    """ORDER BY the table's unique key, else every shown column."""
    return order_by(ctx, t, a, [], shown_cols)


def _child_range(ctx: Ctx, child: Table, a: str, e: Edge, anchor: dict | None = None) -> str | None:
    ranges = [c for c in rangeable(child) if c.name not in e.columns]
    if not ranges:
        return None
    r = ctx.rng.choice(ranges)
    return between(ctx, a, r, ctx.rng.choice((0.05, 0.2, 0.5)), (anchor or {}).get(r.name))


def _per_value(t: Table, c) -> float:
    """Rows of ``t`` an equality on ``c`` keeps."""
    return t.rows / max(c.distinct(t.rows), 1.0)


def scalar_subquery(ctx: Ctx) -> str | None:
    rng = ctx.rng
    pair = _pair(ctx)
    if pair is None:
        return None
    e, child, parent, ca, pa = pair
    ms = measures(ctx.schema, child)
    own = [c for c in selective(child) if _per_value(child, c) * child.rows <= 10 * CORRELATED_BUDGET]
    if own and ms and rng.random() < 0.3:  # over its own rows (TPC-H Q17's shape)
        return _self_correlated(ctx, child, e, rng.choice(own), rng.choice(ms))
    crow = ctx.row(child, list(e.columns))
    agg = rng.choice(["count(*)"] + [f"{f}({col(ctx, ca, m)})" for m in ms[:4] for f in ("max", "sum", "avg")])
    extra = _child_range(ctx, child, ca, e) if rng.random() < 0.3 else None
    inner = f"(SELECT {agg} FROM {ctx.schema.ref(child)} {ca} WHERE {on_clause(ctx, e, ca, pa)}" + \
        (f" AND {extra})" if extra else ")")
    what = shown(ctx, parent, pa, [], 1)
    # compared in WHERE, it runs for every row the outer filter keeps: only where that is few enough
    few = [c for c in categorical(parent) + selective(parent)
           if _per_value(parent, c) * child.rows <= 10 * CORRELATED_BUDGET]
    if few and rng.random() < 0.3:
        pfilter = parent_filter(ctx, e, pa, crow, few)
        cmp = rng.choice((f"{inner} > {rng.randint(0, 2)}", f"{rng.randint(1, 3)} > {inner}"))
        return None if pfilter is None else (
            f"SELECT {', '.join(what)} FROM {ctx.schema.ref(parent)} {pa} WHERE {pfilter} AND {cmp} "
            f"{_keys(ctx, parent, pa, what)} LIMIT 50")
    pfilter = parent_filter(ctx, e, pa, crow)
    limit = max(3, min(50, int(CORRELATED_BUDGET / max(child.rows, 1))))  # the subquery runs once a row shown
    return None if pfilter is None else (
        f"SELECT {', '.join(what)}, {inner} AS agg FROM {ctx.schema.ref(parent)} {pa} WHERE {pfilter} "
        f"{_keys(ctx, parent, pa, what)} LIMIT {limit}")


def _self_correlated(ctx: Ctx, t: Table, e: Edge, c, m) -> str | None:
    """Rows of ``t`` with an equality on ``c`` whose measure ``m`` exceeds (a factor of) the average over the
    rows sharing their edge's columns."""
    taken: set[str] = set()
    a, b = alias(t, taken, ctx.schema), alias(t, taken, ctx.schema)
    where = equality(ctx, a, c, pick_value(c, ctx.rng))
    if where is None:
        return None
    same = " AND ".join(f"{b}.{ctx.schema.ident(x)} = {a}.{ctx.schema.ident(x)}" for x in e.columns)
    factor = ctx.rng.choice(("0.5 * ", "", "1.2 * "))
    what = shown(ctx, t, a, [m], 2)
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(t)} {a} WHERE {where} AND {col(ctx, a, m)} > "
            f"(SELECT {factor}avg({col(ctx, b, m)}) FROM {ctx.schema.ref(t)} {b} WHERE {same}) "
            f"{_keys(ctx, t, a, what)} LIMIT 50")


def exists(ctx: Ctx) -> str | None:
    rng = ctx.rng
    pair = _pair(ctx, need_keys=False)
    if pair is None:
        return None
    e, child, parent, ca, pa = pair
    neg = "NOT " if rng.random() < 0.4 else ""
    crow = ctx.row(child, list(e.columns) + [c.name for c in rangeable(child)][:3])
    if rng.random() < 0.5:  # the parent outside
        pfilter = parent_filter(ctx, e, pa, crow)
        inner = _child_range(ctx, child, ca, e, crow)
        if pfilter is None:
            return None
        sub = f"SELECT 1 FROM {ctx.schema.ref(child)} {ca} WHERE {on_clause(ctx, e, ca, pa)}" + \
            (f" AND {inner}" if inner else "")
        what = shown(ctx, parent, pa, [], 2)
        return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(parent)} {pa} WHERE {pfilter} AND {neg}EXISTS ({sub}) "
                f"{_keys(ctx, parent, pa, what)} LIMIT 100")
    outer = _child_range(ctx, child, ca, e, crow)
    pfilter = parent_filter(ctx, e, pa, crow)
    if outer is None or pfilter is None:
        return None
    what = shown(ctx, child, ca, [], 3)
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(child)} {ca} WHERE {outer} AND {neg}EXISTS "
            f"(SELECT 1 FROM {ctx.schema.ref(parent)} {pa} WHERE {on_clause(ctx, e, ca, pa)} AND {pfilter}) "
            f"{_keys(ctx, child, ca, what)} LIMIT 100")


def _tuple(ctx: Ctx, a: str, cols: tuple[str, ...]) -> str:
    refs = [f"{a}.{ctx.schema.ident(c)}" for c in cols]
    return refs[0] if len(refs) == 1 else f"({', '.join(refs)})"


def in_subquery(ctx: Ctx) -> str | None:
    rng = ctx.rng
    pair = _pair(ctx, need_keys=False)
    if pair is None:
        return None
    e, child, parent, ca, pa = pair
    neg = "NOT " if rng.random() < 0.35 else ""
    crow = ctx.row(child, list(e.columns) + [c.name for c in rangeable(child)][:3])
    pfilter = parent_filter(ctx, e, pa, crow)
    crange = _child_range(ctx, child, ca, e, crow)
    if pfilter is None or crange is None:
        return None
    if rng.random() < 0.5:  # the child outside, the parent's keys inside
        what = shown(ctx, child, ca, [], 3)
        return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(child)} {ca} WHERE {_tuple(ctx, ca, e.columns)} "
                f"{neg}IN (SELECT {', '.join(f'{pa}.{ctx.schema.ident(c)}' for c in e.parent_columns)} "
                f"FROM {ctx.schema.ref(parent)} {pa} WHERE {pfilter}) AND {crange} {_keys(ctx, child, ca, what)} "
                "LIMIT 100")
    what = shown(ctx, parent, pa, [], 2)
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(parent)} {pa} WHERE {_tuple(ctx, pa, e.parent_columns)} "
            f"{neg}IN (SELECT {', '.join(f'{ca}.{ctx.schema.ident(c)}' for c in e.columns)} "
            f"FROM {ctx.schema.ref(child)} {ca} WHERE {crange}) AND {pfilter} {_keys(ctx, parent, pa, what)} LIMIT 100")


def derived_distinct(ctx: Ctx) -> str | None:
    rng = ctx.rng
    pair = _pair(ctx, need_keys=False) if rng.random() < 0.5 else None
    if pair is not None and (cats := categorical(pair[2])):
        e, child, parent, ca, pa = pair
        crange = _child_range(ctx, child, ca, e)
        if crange is None:
            return None
        x = col(ctx, pa, rng.choice(cats))
        inner = ", ".join(f"{ca}.{ctx.schema.ident(c)}" for c in e.columns)
        on = " AND ".join(f"sub.{ctx.schema.ident(c)} = {pa}.{ctx.schema.ident(p)}"
                          for c, p in zip(e.columns, e.parent_columns))
        return (f"SELECT {x}, count(*) AS n FROM (SELECT DISTINCT {inner} FROM {ctx.schema.ref(child)} {ca} "
                f"WHERE {crange}) sub JOIN {ctx.schema.ref(parent)} {pa} ON {on} GROUP BY {x} ORDER BY n DESC, {x} "
                f"LIMIT 20")
    t = pick_table(ctx, lambda t: bool(rangeable(t) and categorical(t)))
    if t is None:
        return None
    a = alias(t, set(), ctx.schema)
    where = between(ctx, a, rng.choice(rangeable(t)), rng.choice((0.05, 0.2)))
    if where is None:
        return None
    if t.keys and rng.random() < 0.4:  # DISTINCT over a key: the rows are distinct already
        cols = [t.column(c) for c in t.keys[0]]
        what = shown(ctx, t, a, cols, 2)
        names = ", ".join(f"sub.{ctx.schema.ident(c.name)}" for c in cols)
        return (f"SELECT sub.* FROM (SELECT DISTINCT {', '.join(what)} FROM {ctx.schema.ref(t)} {a} WHERE {where}) sub "
                f"ORDER BY {names} LIMIT 50")
    g = rng.choice(categorical(t))
    others = [c for c in categorical(t) + rangeable(t) if c is not g]
    if not others:
        return None
    h = rng.choice(others)
    gs = f"sub.{ctx.schema.ident(g.name)}"
    return (f"SELECT {gs}, count(*) AS n FROM (SELECT DISTINCT {col(ctx, a, g)}, {col(ctx, a, h)} "
            f"FROM {ctx.schema.ref(t)} {a} WHERE {where}) sub GROUP BY {gs} ORDER BY n DESC, {gs} LIMIT 20")


def set_operation(ctx: Ctx) -> str | None:
    rng = ctx.rng
    op = rng.choice(("UNION", "UNION ALL", "INTERSECT", "EXCEPT"))
    pair = _pair(ctx, need_keys=False) if rng.random() < 0.5 else None
    if pair is not None:
        e, child, parent, ca, pa = pair
        crow = ctx.row(child, list(e.columns) + [c.name for c in rangeable(child)][:3])
        crange, pfilter = _child_range(ctx, child, ca, e, crow), parent_filter(ctx, e, pa, crow)
        if crange is None or pfilter is None:
            return None
        left = ", ".join(f"{ca}.{ctx.schema.ident(c)}" for c in e.columns)
        right = ", ".join(f"{pa}.{ctx.schema.ident(c)}" for c in e.parent_columns)
        order = ", ".join(str(i + 1) for i in range(len(e.columns)))
        return (f"SELECT {left} FROM {ctx.schema.ref(child)} {ca} WHERE {crange} {op} SELECT {right} FROM "
                f"{ctx.schema.ref(parent)} {pa} WHERE {pfilter} ORDER BY {order} LIMIT 100")
    t = pick_table(ctx, lambda t: bool(categorical(t) and rangeable(t)))
    if t is None:
        return None
    taken: set[str] = set()
    a, b = alias(t, taken, ctx.schema), alias(t, taken, ctx.schema)
    cols = rng.sample(categorical(t), min(2, len(categorical(t))))
    r = rng.choice(rangeable(t))
    f1, f2 = between(ctx, a, r, 0.2), between(ctx, b, r, 0.2)
    if f1 is None or f2 is None:
        return None
    order = ", ".join(str(i + 1) for i in range(len(cols)))
    return (f"SELECT {', '.join(col(ctx, a, c) for c in cols)} FROM {ctx.schema.ref(t)} {a} WHERE {f1} {op} "
            f"SELECT {', '.join(col(ctx, b, c) for c in cols)} FROM {ctx.schema.ref(t)} {b} WHERE {f2} "
            f"ORDER BY {order} LIMIT 100")


def outer_join(ctx: Ctx) -> str | None:
    rng = ctx.rng
    pair = _pair(ctx, need_keys=False)
    if pair is None:
        return None
    e, child, parent, ca, pa = pair
    crow = ctx.row(child, list(e.columns) + [c.name for c in rangeable(child)][:3])
    pfilter = parent_filter(ctx, e, pa, crow)
    on = on_clause(ctx, e, ca, pa)
    if pfilter is None:
        return None
    pwhat, cwhat = shown(ctx, parent, pa, [], 1), shown(ctx, child, ca, [], 2)
    what = pwhat + cwhat
    order = "ORDER BY " + ", ".join(key_cols(ctx, parent, pa, pwhat) + key_cols(ctx, child, ca, cwhat))
    variant = rng.choice(("on_filter", "null_rejecting", "anti"))
    if variant == "on_filter":
        extra = _child_range(ctx, child, ca, e, crow)
        on = f"{on} AND {extra}" if extra else on
        where = pfilter
    elif variant == "null_rejecting":
        ms = [c for c in rangeable(child) if c.name not in e.columns]
        m = rng.choice(ms) if ms else None
        extra = between(ctx, ca, m, 0.5, crow.get(m.name), one_sided=True) if m else None
        where = f"{pfilter} AND {extra}" if extra else pfilter
    else:
        where = f"{pfilter} AND {ca}.{ctx.schema.ident(e.columns[0])} IS NULL"
    return (f"SELECT {', '.join(what)} FROM {ctx.schema.ref(parent)} {pa} LEFT JOIN {ctx.schema.ref(child)} {ca} "
            f"ON {on} WHERE {where} {order} LIMIT 100")


BUILDERS: dict[str, Builder] = {"scalar_subquery": scalar_subquery, "exists": exists, "in_subquery": in_subquery,
                                "derived_distinct": derived_distinct, "set_operation": set_operation,
                                "outer_join": outer_join}
