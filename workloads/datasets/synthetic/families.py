"""Statement families an index advisor should serve, each a function from a ``Ctx`` to SQL (or None when this
schema or this draw gives no such statement). Constants come from one real row (``Ctx.row``) or the statistics, so
equalities find rows and ranges keep a planned share of them; every ``LIMIT`` follows an ``ORDER BY`` that ends in
a unique key where the table has one, so results do not depend on the plan.

- ``lookup``: equality on a selective column (at most about 500 rows a value), a unique key now and then;
- ``composite``: equalities on one or two columns, a range on another, ``ORDER BY ... LIMIT``;
- ``date_range``: date windows as applications write them: ``d >= DATE 'x' AND d < DATE 'x' + INTERVAL '7 days'``,
  ``d::date = DATE 'x'``, ``d BETWEEN DATE 'x' AND DATE 'x' + 30``, ``CAST(d AS date) ...``, ``d >= DATE 'x' -
  INTERVAL ...``;
- ``prefix``: ``LIKE 'abc%'`` (or over ``lower(col)``, or ``ILIKE``) with a prefix as rare as planned;
- ``join``: along one or two edges (a star or a chain), filters on both sides, explicit or comma joins;
- ``aggregate``: a filtered large table grouped by its own low-cardinality column or a joined table's.

>>> from workloads.datasets.synthetic.catalog import Schema, Table
>>> ids = Column("o_id", "integer", n_distinct=-1, histogram=tuple(map(str, range(0, 1001, 10))))
>>> day = Column("o_day", "date", n_distinct=100, histogram=tuple(f"2000-01-{i:02d}" for i in range(1, 29)))
>>> orders = Table("public", "orders", 1000, (ids, day), (("o_id",),))
>>> lookup(Ctx(Schema((orders,)), random.Random(0), stats_row))
"SELECT o.* FROM orders o WHERE o.o_day = DATE '2000-01-14'"
"""

from __future__ import annotations

import random
from collections.abc import Callable

from workloads.datasets.synthetic.catalog import Column, Edge, Table
from workloads.datasets.synthetic.draw import (Ctx, alias, categorical, dates, days_between, like_prefix, literal, measures,
                                      order_key, pick_edge, pick_table, pick_value, rangeable, selective, snap_days,
                                      stats_row, texts, usable, value_range)  # stats_row: the doctest

Builder = Callable[[Ctx], "str | None"]


def col(ctx: Ctx, a: str, c: Column) -> str:
    return f"{a}.{ctx.schema.ident(c.name)}"


def shown(ctx: Ctx, t: Table, a: str, must: list[Column], k: int) -> list[str]:
    """``must`` and up to ``k`` more narrow columns of ``t``, in the table's order."""
    extra = [c for c in t.columns if c not in must and usable(c) and c.avg_width <= 40]
    pick = set(ctx.rng.sample(extra, min(k, len(extra)))) | set(must)
    return [col(ctx, a, c) for c in t.columns if c in pick]


def equality(ctx: Ctx, a: str, c: Column, value: str | None) -> str | None:
    lit = literal(c, value)
    return None if lit is None else f"{col(ctx, a, c)} = {lit}"


def between(ctx: Ctx, a: str, c: Column, fraction: float, anchor: str | None = None,
            one_sided: bool = False) -> str | None:
    """A range on ``c`` holding about ``fraction`` of its values (around ``anchor``), written one of three ways."""
    bounds = value_range(c, ctx.rng, fraction, anchor)
    if bounds is None:
        return None
    lo, hi = literal(c, bounds[0]), literal(c, bounds[1])
    if lo is None or hi is None:
        return None
    ref = col(ctx, a, c)
    if one_sided:
        return f"{ref} >= {lo}" if ctx.rng.random() < 0.5 else f"{ref} <= {hi}"
    return f"{ref} BETWEEN {lo} AND {hi}" if ctx.rng.random() < 0.5 else f"{ref} >= {lo} AND {ref} <= {hi}"


def key_cols(ctx: Ctx, t: Table, a: str, fallback: list[str]) -> list[str]:
    """``t``'s narrowest unique key as ``a.col``, or ``fallback`` (the selected columns) when it has none."""
    return order_key(t, a, ctx.schema) or fallback


def order_by(ctx: Ctx, t: Table, a: str, first: list[str], fallback: list[str] = ()) -> str:
    """ORDER BY ``first``, then ``t``'s unique key (or ``fallback``): an order without ties."""
    plain = {f.removesuffix(" DESC") for f in first}
    keys = [k for k in key_cols(ctx, t, a, list(fallback)) if k not in plain]
    return "ORDER BY " + ", ".join(first + keys)


def lookup(ctx: Ctx) -> str | None:
    t = pick_table(ctx, lambda t: bool(selective(t)))
    if t is None:
        return None
    cols = selective(t)
    c = ctx.rng.choices(cols, weights=[1 if t.is_key(c.name) else 4 for c in cols])[0]
    a = alias(t, set(), ctx.schema)
    where = equality(ctx, a, c, pick_value(c, ctx.rng))
    if where is None:
        return None
    what = f"{a}.*" if ctx.rng.random() < 0.2 else ", ".join(shown(ctx, t, a, [c], ctx.rng.randint(1, 4)))
    return f"SELECT {what} FROM {ctx.schema.ref(t)} {a} WHERE {where}"


def composite(ctx: Ctx) -> str | None:
    t = pick_table(ctx, lambda t: bool(categorical(t) or selective(t)) and len(rangeable(t)) >= 1, power=1.0)
    if t is None:
        return None
    rng = ctx.rng
    eqs = [rng.choice(categorical(t) or selective(t))]
    more = [c for c in categorical(t) + selective(t) if c not in eqs and not t.is_key(c.name)]
    if more and rng.random() < 0.5:
        eqs.append(rng.choice(more))
    ranges = [c for c in rangeable(t) if c not in eqs]
    if not ranges:
        return None
    r, o = rng.choice(ranges), rng.choice(ranges)
    row = ctx.row(t, [c.name for c in eqs] + [r.name])
    a = alias(t, set(), ctx.schema)
    preds = [equality(ctx, a, c, row[c.name]) for c in eqs]
    preds.append(between(ctx, a, r, rng.choice((0.05, 0.1, 0.3)), row[r.name], one_sided=rng.random() < 0.4))
    if None in preds:
        return None
    first = [col(ctx, a, o) + rng.choice(("", " DESC"))]
    return (f"SELECT {', '.join(shown(ctx, t, a, eqs + [o], rng.randint(1, 3)))} FROM {ctx.schema.ref(t)} {a} "
            f"WHERE {' AND '.join(preds)} {order_by(ctx, t, a, first)} LIMIT {rng.choice((10, 20, 50, 100))}")


def date_window(ctx: Ctx, a: str, d: Column, start: str, days: int, form: str) -> str:
    """``d`` within ``days`` from ``start`` (a date), in one of the ways applications write it."""
    ref, x = col(ctx, a, d), f"DATE '{start[:10]}'"
    return {
        "interval": f"{ref} >= {x} AND {ref} < {x} + INTERVAL '{days} days'",
        "cast_eq": f"{ref}::date = {x}",
        "date_plus": f"{ref} BETWEEN {x} AND {x} + {days}" if d.kind == "date"
        else f"{ref} BETWEEN {x} AND {x} + INTERVAL '{days} days'",
        "cast_range": f"CAST({ref} AS date) >= {x} AND CAST({ref} AS date) < {x} + {days}",
        "since": f"{ref} >= {x} - INTERVAL '{days} days'",
    }[form]


def date_range(ctx: Ctx) -> str | None:
    """A date window on a table's own date column, or (half the time, where a larger table references the one with
    the date, as a fact references a date dimension) on the referenced table's date, joined."""
    t = pick_table(ctx, lambda t: bool(dates(t)), power=1.0)
    if t is None:
        return None
    rng = ctx.rng
    d = rng.choice(dates(t))
    hist = d.histogram
    form = rng.choice(("interval", "cast_eq", "date_plus", "cast_range", "since"))
    span = max(1, round(rng.choice((0.01, 0.03, 0.1)) * (len(hist) - 1)))
    i = len(hist) - 1 - span if form == "since" else rng.randint(0, len(hist) - 1 - span)
    days = 1 if form == "cast_eq" else snap_days(days_between(d, hist[i], hist[i + span]))
    start = hist[-1] if form == "since" else hist[i]
    taken: set[str] = set()
    a = alias(t, taken, ctx.schema)
    children = [e for e in ctx.schema.edges if e.parent == t.qualified and e.child != e.parent
                and ctx.schema.table(e.child).rows > t.rows]
    if children and rng.random() < 0.5:
        return _date_join(ctx, t, a, d, form, rng.choice(children), taken)
    preds = [date_window(ctx, a, d, start, days, form)]
    cats = [c for c in categorical(t) if c is not d]
    if cats and rng.random() < 0.5:
        c = rng.choice(cats)
        preds.append(equality(ctx, a, c, ctx.row(t, [c.name], {d.name: hist[i]})[c.name]))
    if None in preds:
        return None
    where = " AND ".join(preds)
    ms = measures(ctx.schema, t)
    if ms and rng.random() < 0.4:
        m = col(ctx, a, rng.choice(ms))
        return f"SELECT count(*) AS n, sum({m}) AS total FROM {ctx.schema.ref(t)} {a} WHERE {where}"
    return (f"SELECT {', '.join(shown(ctx, t, a, [d], rng.randint(1, 3)))} FROM {ctx.schema.ref(t)} {a} "
            f"WHERE {where} {order_by(ctx, t, a, [col(ctx, a, d)])} LIMIT 100")


def _date_join(ctx: Ctx, t: Table, a: str, d: Column, form: str, e: Edge, taken: set[str]) -> str | None:
    """The window (a week to a quarter) starts at the date of the row a real row of the referencing table points
    to."""
    child = ctx.schema.table(e.child)
    ca = alias(child, taken, ctx.schema)
    crow = ctx.row(child, list(e.columns))
    match = {pc: crow[cc] for cc, pc in zip(e.columns, e.parent_columns) if crow.get(cc) is not None}
    start = ctx.row(t, [d.name], match or None)[d.name]
    if start is None or literal(d, start) is None:
        return None
    form = "interval" if form == "since" else form
    where = date_window(ctx, a, d, start, 1 if form == "cast_eq" else ctx.rng.choice((7, 14, 30, 90)), form)
    head = f"FROM {ctx.schema.ref(child)} {ca} JOIN {ctx.schema.ref(t)} {a} ON {on_clause(ctx, e, ca, a)} WHERE {where}"
    ms = measures(ctx.schema, child)
    if ms and ctx.rng.random() < 0.5:
        m = col(ctx, ca, ctx.rng.choice(ms))
        return f"SELECT {col(ctx, a, d)}, count(*) AS n, sum({m}) AS total {head} GROUP BY 1 ORDER BY 1"
    what = [col(ctx, a, d)] + shown(ctx, child, ca, [], ctx.rng.randint(1, 3))
    return f"SELECT {', '.join(what)} {head} {order_by(ctx, child, ca, [col(ctx, a, d)], what)} LIMIT 100"


def prefix(ctx: Ctx) -> str | None:
    t = pick_table(ctx, lambda t: bool(texts(t)))
    if t is None:
        return None
    rng = ctx.rng
    c = rng.choice(texts(t))
    value = pick_value(c, rng)
    if value is None:
        return None
    limited = rng.random() < 0.5
    p = like_prefix(c, value, 0.05 if limited else min(0.05, 2000 / max(t.rows, 1)))
    a = alias(t, set(), ctx.schema)
    ref = col(ctx, a, c)
    form = rng.choices(("like", "lower", "ilike"), weights=(6, 2, 2))[0]
    where = {"like": f"{ref} LIKE {literal(c, p + '%')}", "lower": f"lower({ref}) LIKE {literal(c, p.lower() + '%')}",
             "ilike": f"{ref} ILIKE {literal(c, p + '%')}"}[form]
    text = f"SELECT {', '.join(shown(ctx, t, a, [c], rng.randint(1, 3)))} FROM {ctx.schema.ref(t)} {a} WHERE {where}"
    return f"{text} {order_by(ctx, t, a, [ref])} LIMIT 50" if limited else text


def on_clause(ctx: Ctx, e: Edge, ca: str, pa: str) -> str:
    return " AND ".join(f"{ca}.{ctx.schema.ident(c)} = {pa}.{ctx.schema.ident(p)}"
                        for c, p in zip(e.columns, e.parent_columns))


def parent_filter(ctx: Ctx, e: Edge, pa: str, child_row: dict, cols: list[Column] | None = None) -> str | None:
    """An equality on a categorical (or selective) column of ``e``'s parent (one of ``cols`` when given), with the
    value of the parent row that ``child_row`` references."""
    p = ctx.schema.table(e.parent)
    if cols is None:
        cols = [c for c in categorical(p) + selective(p) if c.name not in e.parent_columns] or selective(p)
    if not cols:
        return None
    c = ctx.rng.choice(cols)
    match = {pc: child_row[cc] for cc, pc in zip(e.columns, e.parent_columns) if child_row.get(cc) is not None}
    return equality(ctx, pa, c, ctx.row(p, [c.name], match or None)[c.name])


def join(ctx: Ctx) -> str | None:
    rng = ctx.rng
    e = pick_edge(ctx)
    if e is None:
        return None
    child, parent = ctx.schema.table(e.child), ctx.schema.table(e.parent)
    taken: set[str] = set()
    ca, pa = alias(child, taken, ctx.schema), alias(parent, taken, ctx.schema)
    star = [x for x in ctx.schema.edges if x.child == e.child and x.parent not in (e.parent, e.child)]
    chain = [x for x in ctx.schema.edges if x.child == e.parent and x.parent not in (e.parent, e.child)]
    second = rng.choice(star + chain) if (star or chain) and rng.random() < 0.5 else None
    ranges = [c for c in rangeable(child) if c.name not in e.columns]
    r = rng.choice(ranges) if ranges else None
    need = list(e.columns) + (list(second.columns) if second and second.child == e.child else [])
    crow = ctx.row(child, need + ([r.name] if r else []))
    preds = [parent_filter(ctx, e, pa, crow)]
    if r is not None:
        preds.append(between(ctx, ca, r, rng.choice((0.1, 0.3, 0.5)), crow[r.name]))
    tables = [(parent, pa, on_clause(ctx, e, ca, pa))]
    if second is not None:
        third = ctx.schema.table(second.parent)
        ta = alias(third, taken, ctx.schema)
        src = ca if second.child == e.child else pa
        src_row = crow if second.child == e.child else ctx.row(parent, list(second.columns), {
            pc: crow[cc] for cc, pc in zip(e.columns, e.parent_columns) if crow.get(cc) is not None})
        tables.append((third, ta, on_clause(ctx, second, src, ta)))
        preds.append(parent_filter(ctx, second, ta, src_row))
    if None in preds:
        return None
    what = shown(ctx, parent, pa, [], 1) + shown(ctx, child, ca, [r] if r else [], rng.randint(1, 3))
    first = [col(ctx, ca, r) + " DESC"] if r else []
    tail = f"{order_by(ctx, child, ca, first)} LIMIT {rng.choice((20, 100))}" if first or child.keys else ""
    if rng.random() < 0.7:
        joins = " ".join(f"JOIN {ctx.schema.ref(t)} {a} ON {on}" for t, a, on in tables)
        return f"SELECT {', '.join(what)} FROM {ctx.schema.ref(child)} {ca} {joins} WHERE {' AND '.join(preds)} {tail}"
    froms = ", ".join([f"{ctx.schema.ref(child)} {ca}"] + [f"{ctx.schema.ref(t)} {a}" for t, a, _ in tables])
    where = " AND ".join([on for _, _, on in tables] + preds)
    return f"SELECT {', '.join(what)} FROM {froms} WHERE {where} {tail}"


def aggregate(ctx: Ctx) -> str | None:
    rng = ctx.rng
    t = pick_table(ctx, lambda t: bool(measures(ctx.schema, t)) and bool(rangeable(t) or categorical(t)), power=1.0)
    if t is None:
        return None
    taken: set[str] = set()
    a = alias(t, taken, ctx.schema)
    m = rng.choice(measures(ctx.schema, t))
    edges = [e for e in ctx.schema.edges if e.child == t.qualified and e.parent != e.child
             and categorical(ctx.schema.table(e.parent))]
    join_sql, group = "", None
    if edges and rng.random() < 0.5:
        e = rng.choice(edges)
        p = ctx.schema.table(e.parent)
        pa = alias(p, taken, ctx.schema)
        join_sql = f" JOIN {ctx.schema.ref(p)} {pa} ON {on_clause(ctx, e, a, pa)}"
        group = col(ctx, pa, rng.choice(categorical(p)))
    elif cats := [c for c in categorical(t) if c is not m]:
        group = col(ctx, a, rng.choice(cats))
    if group is None:
        return None
    filters = [c for c in rangeable(t) if c is not m]
    if filters and rng.random() < 0.7:
        where = between(ctx, a, rng.choice(filters), rng.choice((0.05, 0.2, 0.5)))
    elif cats := [c for c in categorical(t) if col(ctx, a, c) != group]:
        c = rng.choice(cats)
        where = equality(ctx, a, c, pick_value(c, rng))
    else:
        return None
    if where is None:
        return None
    mm = col(ctx, a, m)
    having = " HAVING count(*) > 1" if rng.random() < 0.3 else ""
    return (f"SELECT {group}, count(*) AS n, sum({mm}) AS total, avg({mm}) AS mean FROM {ctx.schema.ref(t)} {a}"
            f"{join_sql} WHERE {where} GROUP BY {group}{having} ORDER BY total DESC NULLS LAST, {group} LIMIT 20")


BUILDERS: dict[str, Builder] = {"lookup": lookup, "composite": composite, "date_range": date_range,
                                "prefix": prefix, "join": join, "aggregate": aggregate}
