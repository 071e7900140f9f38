"""What kind of workload was observed, in PGTune's terms (web | oltp | dw | desktop | mixed), from the share of
writes and the mean statement time. Knob rules and seeds size memory and WAL by it.

>>> from advisor.core.domain import Statement, Workload
>>> classify(Workload((Statement("1", "SELECT sum(x) FROM t", 10, 900.0),)))
'dw'
>>> classify(Workload(()))
'mixed'
"""

from __future__ import annotations

from advisor.core.domain import Workload


def classify(workload: Workload) -> str:
    """PGTune's workload kind of ``workload``: analytics (dw) when statements average 50 ms or more and under a
    fifth are writes; web or oltp (by the share of writes) when they average under 10 ms; else mixed."""
    calls = workload.total_calls
    if not calls:
        return "mixed"
    mean_ms = workload.total_ms / calls
    writes = workload.write_share()
    if mean_ms >= 50 and writes < 0.2:
        return "dw"
    if mean_ms < 10:
        return "oltp" if writes >= 0.2 else "web"
    return "mixed"
