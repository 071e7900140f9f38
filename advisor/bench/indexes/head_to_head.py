"""IA2's set against the best peer's, measured head to head: the ratio the generated workloads' target holds IA2 to,
measured in the same rounds rather than as two runs apart.

The bench measures each advisor's set against no new index in a run of its own; the target's ratio divides two
such runs. On a busy machine the same set measured twice in one bench differed by up to 30%, so a ratio of two
separate runs between 0.8 and 1.2 says little. Here both sets are built at once on the workload's server and every
read is timed under each set in turn: the indexes of the other set only are hidden from the planner inside a
rolled-back transaction (``Connector.timings_without``; nothing is rebuilt between arms), the arms alternating ABBA
over rounds, each round's weighted total (calls x median ms) compared. A write is left out (it would maintain the
hidden indexes). The result: the ratio of the two arms' totals (medians over rounds), each round's ratio, and the
reads timed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from advisor.core.domain import IndexChange
from advisor.core.progress import Say
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement


def measure(shadow: Shadow, statements: Sequence[BoundStatement], mine: Sequence[IndexChange],
            theirs: Sequence[IndexChange], *, rounds: int = 3, repeats: int = 3, timeout_ms: int = 120_000,
            say: Say) -> dict | None:
    """``mine``'s runtime over ``theirs``' on ``statements``' reads (see the module); None when the sets are the
    same, either is empty, or no read is left."""
    reads = [s for s in statements if not s.is_write]
    if not reads or not mine or not theirs or set(mine) == set(theirs):
        return None
    union = list(dict.fromkeys([*mine, *theirs]))
    hide = {arm: [ix for ix in union if ix not in shown] for arm, shown in (("mine", set(mine)), ("theirs", set(theirs)))}
    connector = shadow.connector
    say(f"head to head: building both sets ({len(union)} indexes) and timing {len(reads)} reads under each, "
        f"{rounds} rounds")
    applied = connector.apply(union)
    totals: dict[str, list[float]] = {"mine": [], "theirs": []}
    try:
        for r in range(rounds):
            order = ("mine", "theirs") if r % 2 == 0 else ("theirs", "mine")
            for arm in order:
                total = 0.0
                for st in reads:
                    ms = connector.timings_without(st.sql, hide[arm], repeats=repeats, timeout_ms=timeout_ms,
                                                   warmup=1)
                    total += st.weight * statistics.median(ms)
                totals[arm].append(total)
            say(f"head to head round {r + 1}/{rounds}: IA2's set {totals['mine'][-1] / totals['theirs'][-1]:.3f} of "
                "the peer's")
    finally:
        connector.revert(applied)
    a, b = statistics.median(totals["mine"]), statistics.median(totals["theirs"])
    return {"ratio": round(a / b, 4) if b > 0 else None, "reads": len(reads),
            "rounds": [round(x / y, 4) if y > 0 else None for x, y in zip(totals["mine"], totals["theirs"])]}
