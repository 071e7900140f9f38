"""Changing production: apply an approved, validated recommendation; roll it back; watch it afterwards.

Apply re-plans the recommendation's changes against the target as it is now. The SQL must be the SQL that was
approved (else the target changed and the recommendation is refused with ``Conflict``); the revert SQL is taken
now, so that it restores the values the target has at apply time. What was run, the revert, who and when, and the
target's statement counters at that moment are recorded on the recommendation; the state change is audited.
"""

from __future__ import annotations

import time

from advisor.service.auth import Principal
from advisor.core.domain import Applied, Recommendation
from advisor.core.errors import AdvisorError, Conflict, InvalidTransition
from connectors.base import Connector


def _counters(connector: Connector) -> dict[str, list[float]]:
    """queryid -> [calls, total_ms] of the target's statements, cumulative (the engine's statement statistics)."""
    return {s.queryid: [s.calls, s.total_ms] for s in connector.observe().statements}


def apply_recommendation(store, connector: Connector, rec: Recommendation, who: Principal) -> Recommendation:
    if rec.state != "approved":
        raise InvalidTransition(f"recommendation {rec.id} is {rec.state}; only an approved recommendation can be "
                                "applied" + (" (approve it first)" if rec.state == "validated" else ""))
    if rec.evidence is None or not rec.evidence.accepted:
        raise Conflict(f"recommendation {rec.id} has no accepted validation evidence; it cannot be applied")
    plan = connector.plan_changes(rec.changes)
    if tuple(plan.apply_sql) != tuple(rec.apply_sql):
        raise Conflict(f"the target changed since recommendation {rec.id} was made: applying it now would run "
                       f"{list(plan.apply_sql)}, not the approved {list(rec.apply_sql)}; tune again")
    before = _counters(connector)
    try:
        done = connector.apply(rec.changes)
    except AdvisorError as e:
        store.audit(who.actor, "apply_failed", rec.id, {"error": str(e)})
        raise
    applied = {"at": time.time(), "by": who.actor, "apply_sql": list(done.apply_sql),
               "revert_sql": list(done.revert_sql), "needs_restart": done.needs_restart,
               "restarted": done.restarted, "statements_before": before}
    store.set_applied(rec.id, applied)
    note = "applied" + ("; the server must be restarted for it to take full effect"
                        if done.needs_restart and not done.restarted else "")
    return store.transition(rec.id, "applied", who.actor, note, expect="approved")


def rollback_recommendation(store, connector: Connector, rec: Recommendation, who: Principal,
                            why: str = "") -> Recommendation:
    if rec.state != "applied" or not rec.applied:
        raise InvalidTransition(f"recommendation {rec.id} is {rec.state}; only an applied recommendation can be "
                                "rolled back")
    a = rec.applied
    try:
        connector.revert(Applied(rec.changes, tuple(a["apply_sql"]), tuple(a["revert_sql"]), a["needs_restart"]))
    except AdvisorError as e:
        store.audit(who.actor, "rollback_failed", rec.id, {"error": str(e)})
        raise
    note = why or "rolled back"
    if a["needs_restart"]:
        note += "; the server must be restarted for it to take full effect"
    return store.transition(rec.id, "rolled_back", who.actor, note, expect="applied")


def regression_since_apply(connector: Connector, rec: Recommendation, min_calls: int = 20) -> dict:
    """How the statements that ran since the apply compare with their mean before it: ``ratio`` is the
    call-weighted mean latency after / before (None when too few calls ran to judge)."""
    before = rec.applied.get("statements_before", {}) if rec.applied else {}
    now = _counters(connector)
    after_ms = before_ms = 0.0
    judged = 0
    for qid, (calls, total) in now.items():
        if qid not in before or before[qid][0] <= 0:
            continue
        d_calls, d_total = calls - before[qid][0], total - before[qid][1]
        if d_calls < min_calls or d_total < 0:  # too few calls, or the counters were reset
            continue
        judged += 1
        after_ms += d_total
        before_ms += d_calls * before[qid][1] / before[qid][0]
    ratio = after_ms / before_ms if before_ms > 0 else None
    return {"ratio": ratio, "statements": judged}
