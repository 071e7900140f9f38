"""The last step of every pipeline, in one place: a Recommendation built from the changes and their verdict,
stored, and moved to validated or rejected (or left proposed when validation was switched off)."""

from __future__ import annotations

import dataclasses
import time

from advisor.core.domain import Applied, Change, Evidence, Recommendation
from advisor.storage.store import Store, new_id


def recommend(store: Store, *, target_id: str, kind: str, optimizer: str, plan: Applied | None,
              changes: tuple[Change, ...] = (), evidence: Evidence | None = None, accepted: bool | None = None,
              why: str = "", details: dict | None = None, run_id: str | None = None) -> Recommendation:
    """Store the recommendation of ``plan`` (its checked changes with the SQL to apply and to revert; None when
    there is nothing to apply, then ``changes`` are what was proposed). ``accepted`` True -> validated, False ->
    rejected with ``why``, None -> proposed (not validated)."""
    # the database the change is validated for: an apply must reach this one (advisor.core.identity)
    details = {**(details or {}), "target_identity": store.target_identity(target_id)}
    rec = Recommendation(new_id(), target_id, kind, optimizer, plan.changes if plan else tuple(changes),
                         plan.apply_sql if plan else (), plan.revert_sql if plan else (),
                         plan.needs_restart if plan else False, "proposed", time.time(), note=why, run_id=run_id,
                         details=details)
    if evidence is not None:
        rec = dataclasses.replace(rec, evidence=evidence)
    store.add_recommendation(rec)
    if accepted is None:
        return rec
    return store.transition(rec.id, "validated" if accepted else "rejected", "advisor", why)


def verdict_note(evidence: Evidence) -> str:
    """One line on what validation measured and why it accepts or rejects."""
    lo, hi = evidence.gain_ci
    head = f"measured gain {evidence.gain:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}, {evidence.rounds} rounds)"
    if evidence.regressions:
        return head + f"; {len(evidence.regressions)} statement(s) regressed by more than " \
                      f"{evidence.regression_threshold:.0%}"
    if not evidence.significant:
        return head + f"; the interval does not clear the minimum gain of {evidence.min_gain:.0%}"
    return head
