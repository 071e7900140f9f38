"""What kind of workload was observed, in PGTune's terms (web | oltp | dw | desktop | mixed), from what its
statements do, weighted by their calls: the share of writes, and the share of analytic reads (an aggregate or a
GROUP BY). Calls and statement text are the same on every engine, so one workload gets one kind on PostgreSQL and
on MariaDB (a statement's time is not: a missing index makes a lookup slow on one engine and not the other, and a
kind read from the mean time called one shop workload "web" on PostgreSQL and "dw" on MariaDB). Knob rules and
seeds size memory and WAL by it.

>>> from advisor.core.domain import Statement, Workload
>>> classify(Workload((Statement("1", "SELECT sum(x) FROM t", 10, 900.0),)))
'dw'
>>> classify(Workload((Statement("1", "SELECT * FROM orders WHERE id = $1", 900, 0.5),
...                    Statement("2", "SELECT status, count(*) FROM orders GROUP BY status", 10, 80.0))))
'web'
>>> classify(Workload(()))
'mixed'
"""

from __future__ import annotations

import re

from advisor.core.domain import Workload

ANALYTIC = re.compile(r"\b(sum|count|avg|min|max|stddev\w*|variance|percentile_\w+)\s*\(|\bgroup\s+by\b", re.I)


def analytic_share(workload: Workload) -> float:
    """The share of ``workload``'s calls made by reads that aggregate (an aggregate function or GROUP BY)."""
    calls = workload.total_calls
    return sum(s.calls for s in workload.statements if not s.is_write and ANALYTIC.search(s.sql or "")) / calls \
        if calls else 0.0


def classify(workload: Workload) -> str:
    """PGTune's workload kind of ``workload``: analytics (dw) when most calls are analytic reads and under a fifth
    are writes; oltp when a fifth or more are writes; web when under a fifth are analytic; else mixed."""
    if not workload.total_calls:
        return "mixed"
    writes, analytic = workload.write_share(), analytic_share(workload)
    if writes >= 0.2:
        return "oltp"
    if analytic >= 0.5:
        return "dw"
    return "web" if analytic < 0.2 else "mixed"
