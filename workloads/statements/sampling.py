"""Joint parameter draws for a normalized statement: what each ``$n`` means, and values that keep that meaning.

``analyze(text, dialect)`` finds, per parameter, the column it is compared with (through casts like ``$1::date`` or
``CAST($1 AS date)`` and arithmetic like ``$2::date + 6`` or ``$1::date + interval '7 days'``), the operator and
the side of a range it bounds, reading the statement in the engine's SQL dialect (the connector's ``dialect``).
``draw(uses, stats, i)`` gives the i-th sample of raw values from the columns' statistics (the engine's histogram
bounds and most common values, as its connector's ``BindingSource`` gives them), with the statement's selectivity
in mind:

- equality and IN: a histogram value at quantile 0.5, 0.25, 0.75 ... (the most common values without a histogram);
- a one-sided range (``col >= $1``): a bound that keeps a plausible fraction of the rows (10%, 2%, 30% ...),
  not the median (half the table);
- two parameters bounding one column (``col BETWEEN $1 AND $2``, ``col >= $1 AND col < $2``) are drawn together:
  a low value and a high value a few histogram buckets above it (5%, 2%, 10% of the rows ...);
- when one of the pair is an expression of its parameter (``BETWEEN $1::date AND $2::date + 6``), the statement
  fixes the span itself: both parameters get the same value, so the range stays a week; an amount that is itself
  a parameter (a normalized ``$2::date + $4``) is a week too.

Pure: the statistics are passed in (``Stats``: histogram bounds and most common values, as text, per column).

>>> text = "SELECT 1 FROM t WHERE d BETWEEN $1::date AND $2::date + 6 AND x = $3 LIMIT $4"
>>> uses = analyze(re.sub(r"\\$(\\d)", lambda m: mark(int(m.group(1))), text), dialect="postgres")
>>> sorted((k, u.column, u.side, u.offset) for k, u in uses.items())
[(1, 'd', 'lo', False), (2, 'd', 'hi', True), (3, 'x', 'eq', False), (4, '', 'limit', False)]
>>> hist = tuple(f"2000-01-{d:02d}" for d in range(1, 32))
>>> v = draw(uses, {("t", "d"): (hist, ()), ("t", "x"): ((), ("7", "8"))}, 0)
>>> v[1] == v[2], v[3], v[4]
(True, '7', '100')
>>> analyze("SELECT 1 FROM t WHERE d BETWEEN '__p1__'::date AND '__p2__'::date + '__p3__'", dialect="postgres")[3]
ParamUse(table='', column='', op='Add', side='amount', offset=False, cast='date')
>>> sorted(analyze("SELECT 1 FROM t WHERE d < DATE_ADD(CAST('__p1__' AS DATE), INTERVAL '__p2__' DAY)", "mysql").items())
[(1, ParamUse(table='t', column='d', op='LT', side='hi', offset=True, cast='date')), \
(2, ParamUse(table='', column='', op='DateAdd', side='amount', offset=False, cast='date'))]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

_MARK = re.compile(r"__p(\d+)__")
EQ_QUANTILES = (0.5, 0.25, 0.75, 0.1, 0.9)
ONE_SIDED_SELECTIVITY = (0.1, 0.02, 0.3, 0.05, 0.5)
PAIR_SPAN = (0.05, 0.02, 0.1, 0.01, 0.2)  # fraction of the histogram between a pair's low and high bound
# an unknown amount added to a date or timestamp parameter (normalized ``$2::date + $4``): a week
DATE_AMOUNTS = {"date": "7", "timestamp": "7 days", "timestamptz": "7 days"}
Stats = dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]]  # (table, column) -> (histogram, mcv)
_WRAPPERS = (exp.Cast, exp.TryCast, exp.Interval, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Paren, exp.Neg,
             exp.DateAdd, exp.DateSub)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.DateAdd, exp.DateSub)
_PLUS = (exp.Add, exp.Sub, exp.DateAdd, exp.DateSub)  # an amount added to a value (MySQL: DATE_ADD(d, INTERVAL n DAY))


@dataclass(frozen=True)
class ParamUse:
    """How one parameter is used: compared with ``table.column`` (table '' when unqualified and unknown) as
    ``side`` eq (=, <>, IN, LIKE), lo (a lower bound of the column), hi (an upper bound), limit (LIMIT/OFFSET) or
    amount (added to or subtracted from another value, ``cast`` then the type of that value: ``$2::date + $4``);
    ``offset`` when the compared side is an expression of the parameter (``$2::date + 6``), not just it."""

    table: str
    column: str
    op: str
    side: str
    offset: bool = False
    cast: str = ""  # the type the parameter is cast to in the text, if any (for an amount: the type it is added to)


def mark(k: int) -> str:
    """What ``analyze`` expects in place of ``$k`` (a string literal sqlglot parses anywhere a value can be)."""
    return f"'__p{k}__'"


def analyze(marked: str, dialect: str) -> dict[int, ParamUse]:
    """Per parameter number, its use, in a statement whose ``$k`` are replaced by ``mark(k)`` (outside quotes and
    comments: ``workloads.statements.binding.substitute``), read in sqlglot's ``dialect`` (the connector's); parameters of no
    recognized comparison are left out; casts are named as the dialect writes them."""
    try:
        tree = sqlglot.parse_one(marked, read=dialect)
    except sqlglot.errors.SqlglotError:
        return {}
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    tables = {t.name for t in tree.find_all(exp.Table)}
    out: dict[int, ParamUse] = {}
    for lit in tree.find_all(exp.Literal):
        m = _MARK.fullmatch(str(lit.this))
        if not m:
            continue
        k = int(m.group(1))
        child, node, offset, cast = lit, lit.parent, False, ""
        while isinstance(node, _WRAPPERS):
            if isinstance(node, _PLUS) and child is node.expression:
                break  # the added amount (``$2::date + $4``), not a bound of the column
            if isinstance(node, _ARITHMETIC) and not (isinstance(node, exp.Neg)):
                offset = True
            if isinstance(node, (exp.Cast, exp.TryCast)) and not cast:
                cast = node.to.sql(dialect).lower()
            child, node = node, node.parent
        if isinstance(node, _PLUS) and child is node.expression:
            base = node.this.to.sql(dialect).lower() if isinstance(node.this, (exp.Cast, exp.TryCast)) else ""
            out.setdefault(k, ParamUse("", "", type(node).__name__, "amount", cast=base))
            continue
        if isinstance(node, (exp.Limit, exp.Offset)):
            out.setdefault(k, ParamUse("", "", type(node).__name__, "limit"))
            continue
        col, side = None, ""
        if isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
            col, side = node.this, ("lo" if child is node.args.get("low") else "hi")
        elif isinstance(node, (exp.In, exp.Like, exp.ILike)) and isinstance(node.this, exp.Column):
            col, side = node.this, "eq"
        elif isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            left = isinstance(node.this, exp.Column) and child is node.expression
            right = isinstance(node.expression, exp.Column) and child is node.this
            col = node.this if left else node.expression if right else None
            if isinstance(node, (exp.EQ, exp.NEQ)):
                side = "eq"
            elif isinstance(node, (exp.GT, exp.GTE)):
                side = "lo" if left else "hi"  # col > $1: $1 bounds col from below; $1 > col from above
            else:
                side = "hi" if left else "lo"
        if col is None:
            continue
        table = aliases.get(col.table, col.table) if col.table else (next(iter(tables)) if len(tables) == 1 else "")
        # a parameter used twice keeps its first comparison with a column
        out.setdefault(k, ParamUse(table, col.name, type(node).__name__, side, offset, cast))
    return out


def _at(values: tuple[str, ...], q: float) -> str:
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def draw(uses: dict[int, ParamUse], stats: Stats, i: int) -> dict[int, str]:
    """The i-th sample of raw values (unrendered text) for the parameters in ``uses`` that the statistics can
    answer, drawn jointly per column; LIMIT parameters get 100, OFFSET 0. Others are left to the caller (type
    defaults)."""
    out: dict[int, str] = {}
    by_column: dict[tuple[str, str], list[int]] = {}
    for k, use in sorted(uses.items()):
        if use.side == "limit":
            out[k] = "0" if use.op == "Offset" else "100"
        elif use.side == "amount" and use.cast in DATE_AMOUNTS:
            out[k] = DATE_AMOUNTS[use.cast]
        elif use.side in ("eq", "lo", "hi"):
            by_column.setdefault((use.table, use.column), []).append(k)
    for key, ks in by_column.items():
        hist, mcv = _stats_for(stats, key)
        if not hist and not mcv:
            continue
        lows = [k for k in ks if uses[k].side == "lo"]
        highs = [k for k in ks if uses[k].side == "hi"]
        for j, k in enumerate(k for k in ks if uses[k].side == "eq"):
            if hist:
                out[k] = _at(hist, EQ_QUANTILES[(i + j) % len(EQ_QUANTILES)])
            else:
                out[k] = mcv[(i + j) % len(mcv)]
        if not hist:  # ranges over a column without a histogram: its most common values
            for j, k in enumerate(lows + highs):
                out[k] = mcv[(i + j) % len(mcv)]
            continue
        if lows and highs:
            if any(uses[k].offset for k in lows + highs):  # the statement fixes the span: same value for both
                value = _at(hist, EQ_QUANTILES[i % len(EQ_QUANTILES)])
                out.update({k: value for k in lows + highs})
            else:
                span = PAIR_SPAN[i % len(PAIR_SPAN)]
                q = min(EQ_QUANTILES[i % len(EQ_QUANTILES)], 1.0 - span)
                out.update({k: _at(hist, q) for k in lows})
                out.update({k: _at(hist, q + span) for k in highs})
        else:
            s = ONE_SIDED_SELECTIVITY[i % len(ONE_SIDED_SELECTIVITY)]
            out.update({k: _at(hist, 1.0 - s) for k in lows})
            out.update({k: _at(hist, s) for k in highs})
    return out


def same_span(uses: dict[int, ParamUse]) -> dict[int, list[int]]:
    """Per parameter, the others that must get its value: the bounds of one column when one of them is an
    expression of its parameter (``BETWEEN $1::date AND $2::date + 6``: $2 is $1)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for k, use in uses.items():
        if use.side in ("lo", "hi"):
            groups.setdefault((use.table, use.column), []).append(k)
    out: dict[int, list[int]] = {}
    for ks in groups.values():
        sides = {uses[k].side for k in ks}
        if sides == {"lo", "hi"} and any(uses[k].offset for k in ks):
            out.update({k: [j for j in ks if j != k] for k in ks})
    return out


def _stats_for(stats: Stats, key: tuple[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    found = stats.get(key)
    if found is None and not key[0]:  # an unqualified column: any table's statistics for it
        found = next((v for (_, c), v in stats.items() if c == key[1]), None)
    return found or ((), ())


def pair_real_values(uses: dict[int, ParamUse], real: dict[int, list[str]], i: int) -> dict[int, str]:
    """The i-th choice among real constants (``real``: per parameter, values that real calls used, as SQL). The
    constants of different parameters come from different calls, so a column's low and high bounds are paired:
    the high bound is the smallest real one not below the chosen low one (compared as text when not numbers)."""
    out = {k: vals[i % len(vals)] for k, vals in real.items() if vals}
    by_column: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for k in out:
        use = uses.get(k)
        if use is not None and use.side in ("lo", "hi") and not use.offset:
            lows, highs = by_column.setdefault((use.table, use.column), ([], []))
            (lows if use.side == "lo" else highs).append(k)
    for lows, highs in by_column.values():
        for h in highs:
            for lo in lows:
                above = sorted((v for v in real[h] if _key(v) >= _key(out[lo])), key=_key)
                if above:
                    out[h] = above[0]
    return out


def _key(value: str) -> tuple:
    text = re.sub(r"::[\w ]+$", "", value.strip()).strip("'")
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)
