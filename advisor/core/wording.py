"""How measured figures read in sentences, the same on every face: a latency ratio (``ratio``: enough digits that
a large speed-up never prints as ``0.00x``), a relative change with its sign folded into a word (``slower_faster``:
``25.2% slower``, never ``took -20.1%``), what a change did to the workload from a leave-one-out measurement
(``with_it``), the headline of a sentence that never cuts inside a bracket (``headline``), and what a measured
baseline includes besides the database as it is (``baseline_with``)."""

from __future__ import annotations

import math


def ratio(x: float | None, times: str = "x", missing: str = "-") -> str:
    """A ratio (candidate / baseline) with three significant digits, at most four decimals: never ``0.00x`` for a
    50x speed-up; ``missing`` when unknown.

    >>> [ratio(v) for v in (1.0, 1.5432, 0.0523, 0.00049, 12.34, 150.2, 2500.0, None, float("nan"))]
    ['1.00x', '1.54x', '0.0523x', '<0.001x', '12.3x', '150x', '2,500x', '-', '-']
    >>> ratio(0.5, times="×")
    '0.500×'
    """
    if x is None or not math.isfinite(x):
        return missing
    if x < 0.001:
        return f"<0.001{times}"
    decimals = min(4, max(0, 2 - math.floor(math.log10(x))))
    return f"{x:,.{decimals}f}{times}"


def slower_faster(change: float, digits: int = 1) -> str:
    """A relative change of a time (after / before - 1) as a word: ``+0.252`` -> ``25.2% slower``, ``-0.2`` ->
    ``20.0% faster``; ``no slower or faster`` at zero (as printed).

    >>> slower_faster(0.252), slower_faster(-0.2), slower_faster(0.0001), slower_faster(float("inf"))
    ('25.2% slower', '20.0% faster', 'no slower or faster', 'could not run')
    """
    if not math.isfinite(change):
        return "could not run"
    shown = f"{abs(change) * 100:.{digits}f}"
    if float(shown) == 0:
        return "no slower or faster"
    return f"{shown}% {'slower' if change > 0 else 'faster'}"


def with_it(loss: float, what: str = "the workload") -> str:
    """What one change did, from its leave-one-out ``loss``: how much slower the set that holds it got without it,
    a fraction of that set's time (without / with - 1). Read the other way round, as a DBA asks it: with it,
    ``what`` was (with / without - 1) slower or faster than without it.

    >>> with_it(-0.201)  # without it 20.1% less time: with it 1 / 0.799 - 1 = 25.2% more
    'with it the workload was 25.2% slower'
    >>> with_it(0.25), with_it(float("inf"))
    ('with it the workload was 20.0% faster', 'without it the workload could not run')
    """
    if not math.isfinite(loss):
        return f"without it {what} could not run"
    return f"with it {what} was {slower_faster(1.0 / (1.0 + loss) - 1.0)}"


def headline(text: str) -> str:
    """The first sentence of ``text``: up to its first ``". "`` or ``"; "`` outside brackets, so that a
    headline never ends inside a bracket (the rest of ``text`` is its details).

    >>> headline("keep your current settings: none pays (a: does not pay; b: within noise); more")
    'keep your current settings: none pays (a: does not pay; b: within noise)'
    >>> headline("no trial of 8 beat them (current 5.2 ms, best 6.0 ms). The rest")
    'no trial of 8 beat them (current 5.2 ms, best 6.0 ms)'
    """
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and ch in ".;" and text[i + 1:i + 2] == " ":
            return text[:i]
    return text


def baseline_with(rows) -> str:
    """What a measured baseline includes besides the database as it is: ``rows`` of ``{"kind", "recommendation",
    "changes"}``, the earlier steps of a whole run whose validated changes the shadow started from; "" for none.

    >>> baseline_with([{"kind": "indexes", "recommendation": "9f2c41d0e5", "changes": 1}])
    "with the indexes step's 1 change applied (recommendation 9f2c41d0e5)"
    >>> baseline_with([])
    ''
    """
    rows = [r for r in rows or () if isinstance(r, dict) and r.get("kind")]
    return ("with " + " and ".join(
        f"the {r['kind']} step's {r.get('changes', 0)} change{'s' if r.get('changes', 0) != 1 else ''} applied"
        + (f" (recommendation {r['recommendation']})" if r.get("recommendation") else "") for r in rows)
        if rows else "")


def size(n: float | None) -> str:
    """Bytes as MB (MiB, as the budgets are given): ``1.81 MB``, ``12.3 MB``, ``1,024.0 MB``; ``-`` when unknown.

    >>> size(1897000), size(12.3 * 1024**2), size(None)
    ('1.81 MB', '12.3 MB', '-')
    """
    if n is None or not isinstance(n, (int, float)) or not math.isfinite(n):
        return "-"
    v = n / 1024**2
    return f"{v:.2f} MB" if abs(v) < 10 else f"{v:,.1f} MB"
