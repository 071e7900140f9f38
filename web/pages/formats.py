"""Number and time formats for people: gains as +12.3%, times in ms, sizes in MB, timestamps in UTC; statements by
their SQL on one line (``sql``: ``advisor.core.sqltext.shorten``)."""

from __future__ import annotations

import json
import math
from datetime import datetime

from advisor.core import wording
from advisor.core.errors import AdvisorError
from web.times import utc
from advisor.core.sqltext import one_line, shorten

DASH = "—"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def pct(x: float | None, signed: bool = True) -> str:
    """A fraction as a percentage: 0.123 -> +12.3%."""
    if _missing(x):
        return DASH
    return f"{x * 100:+.1f}%" if signed else f"{x * 100:.1f}%"


def interval(ci, fmt=pct) -> str:
    """A 95% interval as [low, high] in ``fmt``."""
    if not ci or len(ci) != 2 or all(_missing(v) for v in ci):
        return DASH
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def ms(x: float | None) -> str:
    if _missing(x):
        return DASH
    a = abs(x)
    if a < 1:
        return f"{x:.3f} ms"
    if a < 10:
        return f"{x:.2f} ms"
    if a < 1000:
        return f"{x:.1f} ms"
    return f"{x:,.0f} ms"


def mb(n: float | None) -> str:
    """Bytes as MB (MiB, as the budgets are given), as every face prints a size (``advisor.core.wording.size``)."""
    return DASH if _missing(n) else wording.size(n)


def ratio(x: float | None) -> str:
    """A latency ratio as every face prints it (``advisor.core.wording.ratio``: three significant digits, never
    0.00×)."""
    return wording.ratio(x, times="×", missing=DASH)


def ratio_interval(ci) -> str:
    return interval(ci, lambda v: wording.ratio(v, times="", missing=DASH))


def ts(t: float | datetime | None) -> str:
    """A time (unix seconds or a datetime) as UTC 'YYYY-MM-DD HH:MM'."""
    if _missing(t):
        return DASH
    return utc(t).strftime("%Y-%m-%d %H:%M")


def iso(t: float | datetime | None) -> str:
    return "" if _missing(t) else utc(t).isoformat(timespec="seconds")


def seconds(s: float | None) -> str:
    if _missing(s):
        return DASH
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def num(x, digits: int = 1) -> str:
    if _missing(x):
        return DASH
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{digits}f}"


# how a plan's headline options read in one line (the others show on the run's page)
_HEADLINE = {"budget_mb": lambda v: f"{num(v)} MB budget", "max_statements": lambda v: f"up to {num(v)} statements",
             "trials": lambda v: f"{v} trials", "kinds": lambda v: "+".join(v), "index": str,
             "keys": str, "workload": str, "budget": lambda v: f"{v} evaluations"}


def plan_text(p: dict | None) -> str:
    """A run plan in one line: 'indexes · ia2 · 100.0 MB budget · 5 rounds', 'knobs · hibo · 30 trials',
    'rewrites · aurora · up to 20 statements · 5 rounds', 'learned-index · hibo · alex · synthetic:books ·
    read-heavy · 20 evaluations · 5 rounds' (timing switched off: 'not timed'); each kind shows the
    headline options it takes (the kind registry says which)."""
    from advisor.service.runs import kinds

    if not p:
        return ""
    parts = [str(p.get("kind", ""))]
    try:
        kind = kinds.get(str(p.get("kind")))
    except AdvisorError:  # a stored plan of a kind this version no longer has: show what it says
        kind = None
    if kind is None or kind.optimizers:
        parts.append(p.get("optimizer") or "default")
    for name, show in _HEADLINE.items():
        if kind is not None and name in kind.options and p.get(name) not in (None, [], ()):
            parts.append(show(p[name]))
    if p.get("rounds"):
        parts.append(f"{p['rounds']} rounds")
    if p.get("validate") is False:
        parts.append("not timed")
    return " · ".join(parts)


def compact_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


FILTERS = {"pct": pct, "interval": interval, "ms": ms, "mb": mb, "ratio": ratio, "ratio_interval": ratio_interval,
           "ts": ts, "iso": iso, "seconds": seconds, "num": num, "json": compact_json, "plan_text": plan_text,
           "sql": shorten, "one_line": one_line}
