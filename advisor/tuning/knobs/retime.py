"""Re-timing, on the shadow, each read that a knob change's validation rounds measured slower by the regression
threshold: blocks of runs with the change applied and without it, alternating, through the measurement engine,
as the index validation re-times its flagged reads (``advisor.tuning.indexes.timing.confirm_regressions``: the
same budget per arm, cut at 2x the other arm's slowest, two blocks when they agree on the threshold's side).

Why: a knob set's validation rounds time the whole workload a few times, and beside a busy CPU each statement's
interval is wide. The demo's knob sets slowed one TPC-H statement by 1.15x-1.20x: quietly the rounds found it and
the set was rejected; beside two CPU hogs the same set was validated, and only the whole run's bundle caught it.
The longer measurement of the statement decides in both. Only for a change applied without a restart (a restart
per block would cost more than the question) and only for reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from advisor.core.domain import Applied, Change, Evidence, StatementEvidence
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say
from advisor.core.sqltext import named
from advisor.core.wording import ratio
from advisor.tuning.indexes.timing import retime, screened, slower_by_threshold
from advisor.tuning.validation import ValidationOptions
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay


def confirm_knob_regressions(shadow: Shadow, statements: Sequence[BoundStatement], changes: Sequence[Change],
                             evidence: Evidence, options: ValidationOptions, say: Say) -> Evidence:
    """``evidence`` with each read the rounds measured slower by the threshold (``screened``) re-timed with
    ``changes`` applied and reverted in turn; its ratio and interval become the longer measurement's, and it is a
    regression when that median ratio is still over the threshold. ``evidence`` as it is when the change needs a
    restart or nothing is flagged; the shadow is left without the change."""
    reads = {st.queryid: st for st in statements if not st.is_write}
    todo = [s for s in evidence.statements if s.queryid in set(screened(evidence, options)) and s.queryid in reads]
    if not todo:
        return evidence
    if shadow.connector.plan_changes(list(changes)).needs_restart:
        say(f"{len(todo)} statement(s) slower in the rounds are not re-timed: the change needs a restart")
        return evidence
    state: dict[str, Applied | None] = {"applied": None}
    out: dict[str, StatementEvidence] = {}
    try:
        for s in todo:
            again = _retime(shadow, reads[s.queryid], s, changes, options, state)
            if again is None:
                say(f"{named(s.sql, s.queryid)}: not re-timed (it failed in a block); the rounds' verdict stands")
                continue
            (blocks, n), fresh = again
            out[s.queryid] = replace(s, baseline_ms=fresh.baseline_ms, candidate_ms=fresh.candidate_ms,
                                     ratio=fresh.ratio, ratio_ci=fresh.ratio_ci,
                                     regressed=slower_by_threshold(fresh, options))
            say(f"{named(s.sql, s.queryid)}: {ratio(s.ratio)} in the rounds, {ratio(fresh.ratio)} re-timed ({n} runs "
                f"per arm in {blocks} blocks, the setting applied and reverted in turn): "
                + ("a regression" if out[s.queryid].regressed else "not a regression"))
    finally:
        if state["applied"] is not None:
            shadow.connector.revert(state["applied"])
    return replace(evidence, statements=tuple(out.get(s.queryid, s) for s in evidence.statements))


def _retime(shadow: Shadow, st: BoundStatement, s: StatementEvidence, changes: Sequence[Change],
            options: ValidationOptions,
            state: dict[str, Applied | None]) -> tuple[tuple[int, int], StatementEvidence] | None:
    """((blocks, runs per arm), the re-timed statement's evidence), or None when a run failed
    (``indexes.timing.retime``, the setting applied for "with" and reverted for "without")."""
    def timed(arm: str, repeats: int, limit: int, warmup: int) -> list[float]:
        if arm == "with" and state["applied"] is None:
            state["applied"] = shadow.connector.apply(list(changes))
        elif arm == "without" and state["applied"] is not None:
            shadow.connector.revert(state["applied"])
            state["applied"] = None
        result = replay(shadow.connector, [st], ReplayOptions(1, repeats, warmup, limit))
        if result.errors:
            raise AdvisorError("a run failed")
        return result.samples.get(st.queryid, [])

    try:
        return retime(s, timed, options)
    except AdvisorError:
        return None
