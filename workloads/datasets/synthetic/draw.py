"""Pure pieces the statement families share: constants drawn from a column's statistics or from a real row, SQL
literals, ranges, LIKE prefixes, and the choice of tables, columns and edges by their role.

A ``Ctx`` carries the schema, the statement's own random generator and ``row``: a real row's values for some
columns of a table (optionally matching given values), which the generator answers with a query and a pure caller
with ``stats_row`` (independent draws from the statistics).

>>> c = Column("d", "date", histogram=("1998-01-01", "1998-02-01", "1998-03-01", "1998-04-01"))
>>> literal(c, "1998-02-01"), literal(Column("n", "character(10)"), "O'Brien   "), literal(c, "infinity")
("DATE '1998-02-01'", "'O''Brien'", None)
>>> value_range(c, random.Random(1), 0.3, anchor="1998-02-10")
('1998-02-01', '1998-03-01')
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from workloads.datasets.synthetic.catalog import DATE_KINDS, RANGE_KINDS, Column, Edge, Schema, Table
from workloads.datasets.sqlsource import string_literal

Row = dict[str, str | None]
RowSource = Callable[[Table, Sequence[str], random.Random, "dict[str, str] | None"], "Row | None"]
MIN_ROWS = 1.0  # tables with fewer estimated rows are not drawn


@dataclass
class Ctx:
    schema: Schema
    rng: random.Random
    rows: RowSource

    def row(self, table: Table, columns: Sequence[str], match: dict[str, str] | None = None) -> Row:
        """Values of ``columns`` from one real row of ``table`` (matching ``match``); a column it gives no value
        for (NULL, or no row found) gets an independent draw from the statistics, or None."""
        got = self.rows(table, columns, self.rng, match) or {}
        out: Row = {}
        for name in columns:
            value = got.get(name)
            out[name] = value if value is not None else pick_value(table.column(name), self.rng)
        return out


def stats_row(table: Table, columns: Sequence[str], rng: random.Random, match: dict[str, str] | None = None) -> Row:
    """A pure ``RowSource``: each column drawn on its own from its statistics (``match`` kept as given)."""
    return {c: (match or {}).get(c) or pick_value(table.column(c), rng) for c in columns}


# --- constants -----------------------------------------------------------------------------------------------

def _typed(col: Column, value: str):
    """A comparable form of a value, or None when it does not parse."""
    try:
        kind = col.kind
        if kind in ("int", "num"):
            return float(value)
        if kind == "date":
            return date.fromisoformat(value[:10])
        if kind in ("ts", "tstz"):
            return datetime.fromisoformat(value[:19])
        return value
    except ValueError:
        return None


def literal(col: Column, value: str | None) -> str | None:
    """``value`` (text, as the statistics or a row give it) as a SQL constant of the column's kind, or None."""
    if value is None or value.strip().lower() in ("infinity", "-infinity", "nan") or _typed(col, value) is None:
        return None
    kind = col.kind
    if kind in ("int", "num"):
        return value.strip()
    if kind == "date":
        return f"DATE '{value[:10]}'"
    if kind == "ts":
        return f"TIMESTAMP '{value}'"
    if kind == "tstz":
        return f"TIMESTAMPTZ '{value}'"
    if kind == "bool":
        return "TRUE" if value in ("t", "true") else "FALSE"
    if kind == "text":
        return string_literal(value.rstrip(" ") if col.is_char else value)
    return None


def pick_value(col: Column, rng: random.Random) -> str | None:
    """A value as the data holds them: a most common value by its frequency, or a histogram bound (each bucket
    holds as many rows) for the rest of the rows."""
    hist = tuple(v for v in col.histogram if literal(col, v) is not None)
    mcv = [(v, f) for v, f in zip(col.mcv, col.mcf or (1.0,) * len(col.mcv)) if literal(col, v) is not None]
    if mcv and (not hist or rng.random() < sum(f for _, f in mcv)):
        return rng.choices([v for v, _ in mcv], weights=[f for _, f in mcv])[0]
    return rng.choice(hist) if hist else None


def _ordered(col: Column) -> list[str]:
    values = {v: _typed(col, v) for v in col.values() if literal(col, v) is not None}
    return sorted((v for v, t in values.items() if t is not None), key=lambda v: values[v])


def value_range(col: Column, rng: random.Random, fraction: float, anchor: str | None = None) -> tuple[str, str] | None:
    """Low and high bounds (real values) holding about ``fraction`` of the histogram between them, around
    ``anchor`` when given (then low <= anchor <= high)."""
    values = [v for v in (col.histogram or tuple(_ordered(col))) if _typed(col, v) is not None]
    if len(values) < 2:
        return None
    keys = [_typed(col, v) for v in values]
    span = min(max(1, round(fraction * (len(values) - 1))), len(values) - 1)
    a = _typed(col, anchor) if anchor is not None else None
    if a is None:
        lo = rng.randint(0, len(values) - 1 - span)
        return values[lo], values[lo + span]
    at = bisect.bisect_right(keys, a) - 1
    lo = max(0, min(at - rng.randint(0, span), len(values) - 1 - span))
    hi = lo + span
    return (values[lo] if keys[lo] <= a else anchor), (values[hi] if keys[hi] >= a else anchor)


def like_prefix(col: Column, value: str, target: float = 0.05) -> str:
    """The shortest prefix of ``value`` that at most ``target`` of the histogram's values start with (all of it
    when none is that rare), with LIKE's wildcards escaped.

    >>> like_prefix(Column("n", "text", histogram=("Ann", "Anna", "Bob", "Bea", "Carl")), "Anna", 0.25)
    'Anna'
    >>> like_prefix(Column("n", "text", histogram=tuple(f"x{i}" for i in range(100))), "x5_0%", 0.05)
    'x5\\\\_'
    """
    value = value.rstrip(" ") if col.is_char else value
    pool = [v.rstrip(" ") if col.is_char else v for v in col.values()] or [value]
    cut = len(value)
    for n in range(1, len(value) + 1):
        if sum(v.startswith(value[:n]) for v in pool) <= max(1.0, target * len(pool)):
            cut = n
            break
    return value[:cut].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def snap_days(days: float) -> int:
    """A window length people write: 1, 7, 14, 30, 90 or 365 days, the nearest to ``days``.

    >>> snap_days(0), snap_days(9), snap_days(300)
    (1, 7, 365)
    """
    return min((1, 7, 14, 30, 90, 365), key=lambda d: abs(d - days))


def days_between(col: Column, lo: str, hi: str) -> float:
    a, b = _typed(col, lo), _typed(col, hi)
    return (b - a).total_seconds() / 86400 if isinstance(a, datetime) else (b - a).days


# --- roles ---------------------------------------------------------------------------------------------------

def usable(col: Column) -> bool:
    return col.kind != "other" and bool(col.values())


def prose(col: Column) -> bool:
    """Free text (comments, descriptions: most values hold a blank and are long), which applications do not
    look up by value.

    >>> prose(Column("c", "text", histogram=("a quick brown fox", "slyly ironic deposits"), avg_width=30))
    True
    """
    values = col.values()
    return col.kind == "text" and col.avg_width >= 16 and bool(values) and \
        sum(" " in v.strip() for v in values) > 0.5 * len(values)


def selective(t: Table) -> list[Column]:
    """Columns an equality finds few rows with (at most 500 a value, at least 20 values): integers, dates, text
    that is not prose."""
    return [c for c in t.columns if usable(c) and c.kind in ("int", "text", "date", "ts", "tstz") and not prose(c)
            and (d := c.distinct(t.rows)) >= 20 and t.rows / max(d, 1) <= 500]


def categorical(t: Table) -> list[Column]:
    """Columns of 2 to 200 values that repeat (an equality keeps a share of the rows)."""
    return [c for c in t.columns if usable(c) and 2 <= (d := c.distinct(t.rows)) <= 200 and d <= 0.5 * t.rows
            and not prose(c)]


def rangeable(t: Table) -> list[Column]:
    return [c for c in t.columns if usable(c) and c.kind in RANGE_KINDS and c.distinct(t.rows) >= 10]


def dates(t: Table) -> list[Column]:
    return [c for c in t.columns if usable(c) and c.kind in DATE_KINDS and len(c.histogram) >= 3]


def texts(t: Table) -> list[Column]:
    """Text a LIKE prefix searches: names, codes, places (prose only where the table has nothing else)."""
    found = [c for c in t.columns if usable(c) and c.kind == "text" and c.distinct(t.rows) >= 10 and c.avg_width >= 3]
    return [c for c in found if not prose(c)] or found


def measures(schema: Schema, t: Table) -> list[Column]:
    """Numbers that are no key: what sums and averages are taken of."""
    keyish = {c for k in t.keys for c in k} | {c for e in schema.edges if e.child == t.qualified for c in e.columns}
    return [c for c in t.columns if c.kind in ("int", "num") and c.name not in keyish and usable(c)
            and not c.name.endswith(("_sk", "key", "_id"))]


def pick_table(ctx: Ctx, need: Callable[[Table], bool] = lambda t: True, power: float = 0.5) -> Table | None:
    """A table with rows that meets ``need``, larger tables more often (weight rows ** power)."""
    pool = [t for t in ctx.schema.tables if t.rows >= MIN_ROWS and need(t)]
    return ctx.rng.choices(pool, weights=[max(t.rows, 1.0) ** power for t in pool])[0] if pool else None


def pick_edge(ctx: Ctx, need: Callable[[Edge], bool] = lambda e: True, power: float = 0.5) -> Edge | None:
    """An edge between two tables with rows, edges from larger children more often."""
    rows = {t.qualified: t.rows for t in ctx.schema.tables}
    pool = [e for e in ctx.schema.edges if e.child != e.parent and rows.get(e.child, 0) >= MIN_ROWS
            and rows.get(e.parent, 0) >= MIN_ROWS and need(e)]
    return ctx.rng.choices(pool, weights=[max(rows[e.child], 1.0) ** power for e in pool])[0] if pool else None


def order_key(t: Table, alias: str, schema: Schema) -> list[str]:
    """The narrowest unique key's columns as ``alias.col``: a tie-breaker that makes ORDER BY ... LIMIT exact."""
    return [f"{alias}.{schema.ident(c)}" for c in t.keys[0]] if t.keys else []


def alias(t: Table, taken: set[str], schema: Schema) -> str:
    """Initials of the table's words (``store_sales`` -> ``ss``), numbered when taken or a key word."""
    base = "".join(w[0] for w in t.name.lower().split("_") if w and w[0].isalpha()) or "t"
    name, i = base, 1
    while name in taken or name in schema.reserved or name in ("as", "on", "in", "is", "or", "to", "do", "by", "sub"):
        i += 1
        name = f"{base}{i}"
    taken.add(name)
    return name
