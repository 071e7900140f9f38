"""Generated statements whose best server configuration needs several knobs at once, over any schema (drawn
like ``workloads.datasets.synthetic``'s families, from the schema's tables, edges and statistics; the knob bench's
``multi-<schema>.s<seed>`` workloads):

- ``chain``: one explicit ``JOIN`` chain of ``MIN_RELATIONS``..``MAX_RELATIONS`` relations grown along the schema's
  edges from a large table (mostly to parents, sometimes to another child of a joined table while the fan-out
  stays small), written in the order it was grown, with a range on the first table and selective equalities on
  the last relations joined. On PostgreSQL the written order is kept beyond ``join_collapse_limit`` (8) and a
  chain of ``geqo_threshold`` (12) relations or more goes to the genetic planner once that limit is raised: the
  planner finds the good order only with both knobs moved together; the large plan costs also start JIT
  compilation (``jit``, ``jit_above_cost``), which costs more than it saves at these sizes.
- ``groups``: a grouping of a large table by a pair of many-valued columns (``GROUP BY a, b ... ORDER BY ...
  LIMIT``, or ``count(*)`` over ``SELECT DISTINCT a, b``): hash tables larger than the default sort memory
  (PostgreSQL's ``work_mem`` x ``hash_mem_multiplier``; MariaDB's in-memory temporary table, the smaller of
  ``tmp_table_size`` and ``max_heap_table_size``, so only both raised together help, and ``sort_buffer_size``).

``draw`` runs each drawn statement once (rolled back, under a time limit) and keeps the ones that finish, as
``Generated`` (queryid ``knob.s<seed>.<family>.<i>``, weight 1). The same database and seed give the same statements.

>>> from workloads.datasets.synthetic.catalog import Column, Edge, Schema, Table
>>> key = lambda n: Column(n, "integer", n_distinct=-1, histogram=tuple(str(i) for i in range(0, 1000, 50)))
>>> cat = lambda n: Column(n, "text", n_distinct=5, histogram=("a", "b", "c", "d", "e"))
>>> tables = [Table("public", f"t{i}", 1000.0 / (i + 1), (key(f"t{i}_id"), key(f"t{i}_up"), cat(f"t{i}_c")),
...                 ((f"t{i}_id",),)) for i in range(12)]
>>> edges = tuple(Edge(f"t{i}", (f"t{i}_up",), f"t{i + 1}", (f"t{i + 1}_id",)) for i in range(11))
>>> sql = chain(Ctx(Schema(tuple(tables), edges), random.Random(1), stats_row))
>>> sql.count(" JOIN ") >= MIN_RELATIONS - 1, sql.startswith("SELECT count(*)")
(True, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from connectors.base import TAG, Connector
from workloads.datasets.sqlsource import to_dialect
from workloads.datasets.synthetic.catalog import SOURCE_DIALECT, Edge, Schema, Table, read_schema
from workloads.datasets.synthetic.draw import (Ctx, alias, categorical, measures, pick_table, pick_value, rangeable,
                                               stats_row, usable, value_range, literal)
from workloads.datasets.synthetic.generator import Generated
from workloads.statements.target import loader_connector

MIN_RELATIONS = 9  # more than PostgreSQL's default join_collapse_limit (8)
MAX_RELATIONS = 14  # more than its default geqo_threshold (12)
MAX_FANOUT = 30.0  # a step to another child of a joined table may multiply the rows by at most this, all together
MIN_GROUP_VALUES = 500  # a grouping column has at least this many values


def _on(ctx: Ctx, e: Edge, child: str, parent: str) -> str:
    return " AND ".join(f"{child}.{ctx.schema.ident(c)} = {parent}.{ctx.schema.ident(p)}"
                        for c, p in zip(e.columns, e.parent_columns))


def _grow(ctx: Ctx, root: Table, want: int) -> list[tuple[Table, str, str]]:
    """(table, alias, ON clause) of a join tree grown from ``root``: a step from a joined relation to its parent
    (weight 3) or to another table referencing it (weight 1, while the product of such fan-outs stays under
    ``MAX_FANOUT``); the first entry is the root (no ON clause)."""
    schema, rng = ctx.schema, ctx.rng
    rows = {t.qualified: max(t.rows, 1.0) for t in schema.tables}
    edges = [e for e in schema.edges if e.child != e.parent and e.child in rows and e.parent in rows]
    taken: set[str] = set()
    nodes = [(root, alias(root, taken, schema), "")]
    used: set[tuple[str, Edge]] = set()
    fan = 1.0
    while len(nodes) < want:
        steps: list[tuple[float, int, Edge, str]] = []
        for i, (t, a, _) in enumerate(nodes):
            for e in edges:
                if (a, e) in used:
                    continue
                if e.child == t.qualified:
                    steps.append((3.0, i, e, "up"))
                elif e.parent == t.qualified and i > 0 and fan * rows[e.child] / rows[e.parent] <= MAX_FANOUT:
                    steps.append((1.0, i, e, "down"))
        if not steps:
            break
        _, i, e, way = rng.choices(steps, weights=[s[0] for s in steps])[0]
        t, a, _ = nodes[i]
        used.add((a, e))
        new = schema.table(e.parent if way == "up" else e.child)
        b = alias(new, taken, schema)
        used.add((b, e))  # not back along the same edge
        if way == "down":
            fan *= rows[e.child] / rows[e.parent]
        nodes.append((new, b, _on(ctx, e, a, b) if way == "up" else _on(ctx, e, b, a)))
    return nodes


def chain(ctx: Ctx) -> str | None:
    rng, schema = ctx.rng, ctx.schema
    roots = {e.child for e in schema.edges if e.child != e.parent}
    root = pick_table(ctx, lambda t: t.qualified in roots and bool(rangeable(t)), power=1.0)
    if root is None:
        return None
    nodes = _grow(ctx, root, rng.randint(MIN_RELATIONS + 1, MAX_RELATIONS))
    if len(nodes) < MIN_RELATIONS:
        return None
    t0, a0, _ = nodes[0]
    r = rng.choice(rangeable(t0))
    bounds = value_range(r, rng, rng.choice((0.2, 0.4, 0.6)))
    preds = []
    if bounds is not None and None not in (lo := literal(r, bounds[0]), hi := literal(r, bounds[1])):
        preds.append(f"{a0}.{schema.ident(r.name)} BETWEEN {lo} AND {hi}")
    for t, a, _ in reversed(nodes[-4:]):  # selective filters late in the written order
        cats = categorical(t)
        if not cats or len(preds) >= 3:
            continue
        c = rng.choice(cats)
        lit = literal(c, pick_value(c, rng))
        if lit is not None:
            preds.append(f"{a}.{schema.ident(c.name)} = {lit}")
    if len(preds) < 2:
        return None
    m = measures(schema, t0)
    what = "count(*) AS n" + (f", sum({a0}.{schema.ident(m[0].name)}) AS total" if m else "")
    joins = " ".join(f"JOIN {schema.ref(t)} {a} ON {on}" for t, a, on in nodes[1:])
    return f"SELECT {what} FROM {schema.ref(t0)} {a0} {joins} WHERE {' AND '.join(preds)}"


def _many_valued(t: Table) -> list:
    single_keys = {k[0] for k in t.keys if len(k) == 1}
    return [c for c in t.columns if usable(c) and c.kind in ("int", "text", "date") and c.name not in single_keys
            and c.distinct(t.rows) >= MIN_GROUP_VALUES and c.avg_width <= 40]


def groups(ctx: Ctx) -> str | None:
    rng, schema = ctx.rng, ctx.schema
    t = pick_table(ctx, lambda t: len(_many_valued(t)) >= 2, power=1.0)
    if t is None:
        return None
    a = alias(t, set(), schema)
    c1, c2 = rng.sample(_many_valued(t), 2)
    g = f"{a}.{schema.ident(c1.name)}, {a}.{schema.ident(c2.name)}"
    where = ""
    ranges = [c for c in rangeable(t) if c not in (c1, c2)]
    if ranges and rng.random() < 0.7:
        r = rng.choice(ranges)
        bounds = value_range(r, rng, rng.choice((0.5, 0.8)))
        if bounds is not None and None not in (lo := literal(r, bounds[0]), hi := literal(r, bounds[1])):
            where = f" WHERE {a}.{schema.ident(r.name)} BETWEEN {lo} AND {hi}"
    m = measures(schema, t)
    if m and rng.random() < 0.6:
        mm = f"{a}.{schema.ident(m[0].name)}"
        return (f"SELECT {g}, count(*) AS n, sum({mm}) AS total FROM {schema.ref(t)} {a}{where} "
                f"GROUP BY {g} ORDER BY total DESC, {g} LIMIT 20")
    return f"SELECT count(*) AS pairs FROM (SELECT DISTINCT {g} FROM {schema.ref(t)} {a}{where}) d"


BUILDERS: dict[str, Callable[[Ctx], str | None]] = {"chain": chain, "groups": groups}
FAMILIES = tuple(BUILDERS)


def draw(target: Connector, n: int = 6, seed: int = 0, families: Iterable[str] = FAMILIES, *,
         timeout_ms: int = 20_000, attempts: int = 6, schema: Schema | None = None,
         say: Callable[[str], None] | None = None) -> list[Generated]:
    """``n`` statements over the database at ``target`` (analyzed), the families in turn, each run once (rolled
    back) and kept when it finishes within ``timeout_ms``; one no attempt makes valid is left out (said)."""
    chosen = tuple(families)
    if not chosen or any(f not in BUILDERS for f in chosen):
        raise ValueError(f"unknown families {chosen}: expected some of {', '.join(FAMILIES)}")
    connector = loader_connector(target)
    schema = schema or read_schema(connector)
    out: list[Generated] = []
    with connector.session(int(timeout_ms)) as session:
        for i in range(n):
            family = chosen[i % len(chosen)]
            for attempt in range(attempts):
                rng = random.Random(f"knob:{seed}:{i}:{attempt}")
                text = BUILDERS[family](Ctx(schema, rng, stats_row))
                if text is None:
                    continue
                text = to_dialect(text, SOURCE_DIALECT, connector.dialect)
                try:
                    rows = len(session.run(TAG + text, rollback=True) or ())
                except Exception:  # noqa: BLE001 - an error or a timeout: drawn again
                    continue
                out.append(Generated(f"knob.s{seed}.{family}.{i}", family, text, 1.0, rows))
                break
            else:
                if say:
                    say(f"no valid {family} statement for #{i} after {attempts} attempts")
    return out
