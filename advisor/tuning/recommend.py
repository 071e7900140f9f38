"""The last step of every pipeline, in one place: a Recommendation built from the changes and their verdict,
stored, and moved to validated or rejected (or left proposed when validation was switched off); the one line
that says what validation measured (``verdict_note``); and what was tried and not recommended (``Dropped``).

Every kind records its non-recommendations the same way: a list of ``{"change", "kind", "why"}`` under the
recommendation's ``details["dropped"]`` (``recommend(dropped=...)``), and on the pipeline's result when nothing is
recommended (``dropped_rows``), so that the CLI, the JSON output and the web pages show one "not recommended"
table for indexes, rewrites and knobs alike.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.core.domain import Applied, Change, Evidence, Recommendation, StatementEvidence
from advisor.core.sqltext import shorten
from advisor.core.wording import ratio
from advisor.storage.store import Store, new_id


@dataclass(frozen=True)
class Dropped:
    """A candidate change that was tried and is not recommended, and why.

    ``change``: what a DBA reads (``orders(o_custkey)``, ``work_mem = 64MB``, a statement's rewrite); ``kind``: the
    change's kind (``index``, ``drop_index``, ``knob``, ``query_rewrite``); ``why``: the reason, with its figures
    (not faster, regressed which statement by how much, over budget, not equivalent, within noise, paid less than
    its restart).

    >>> Dropped("t(a)", "index", "no measurable benefit").to_dict()
    {'change': 't(a)', 'kind': 'index', 'why': 'no measurable benefit'}
    """

    change: str
    kind: str
    why: str

    def to_dict(self) -> dict:
        return {"change": self.change, "kind": self.kind, "why": self.why}


def dropped_rows(items: Iterable[Dropped | dict]) -> list[dict]:
    """``items`` as the stored rows, duplicates (same change, kind and reason) once, in order. A dict keeps any
    keys it has besides the three (a knob's measured share of the gain, say); those three are text."""
    out, seen = [], set()
    for d in items:
        row = d.to_dict() if isinstance(d, Dropped) else {**d, "change": str(d["change"]), "kind": str(d["kind"]),
                                                           "why": str(d["why"])}
        key = (row["change"], row["kind"], row["why"])
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def recommend(store: Store, *, target_id: str | None = None, kind: str, optimizer: str, plan: Applied | None,
              changes: tuple[Change, ...] = (), evidence: Evidence | None = None, accepted: bool | None = None,
              why: str = "", details: dict | None = None, run_id: str | None = None,
              dropped: Sequence[Dropped | dict] = (), observed=None) -> Recommendation:
    """Store the recommendation of ``plan`` (its checked changes with the SQL to apply and to revert; None when
    there is nothing to apply, then ``changes`` are what was proposed). ``accepted`` True -> validated, False ->
    rejected with ``why``, None -> proposed (not validated). ``dropped``: the candidates tried and left out, with
    why (``details["dropped"]``). ``observed``: the run's ``Observation`` (its target is the recommendation's):
    the snapshot its workload's calls come from (``details["observed"]``: id, when, calls, total ms), so every
    face says which snapshot the calls it shows are from."""
    if observed is not None:
        target_id = target_id or observed.target_id
        w = observed.workload
        details = {**(details or {}), "observed": {"snapshot": observed.snapshot_id,
                                                   "taken_at": observed.snapshot.taken_at,
                                                   "calls": w.total_calls, "total_ms": w.total_ms}}
    # the database the change is validated for: an apply must reach this one (advisor.core.identity)
    details = {**(details or {}), "target_identity": store.target_identity(target_id)}
    if dropped:
        details["dropped"] = dropped_rows([*details.get("dropped", ()), *dropped])
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


def verdict_note(evidence: Evidence, noise: Iterable[str] = ()) -> str:
    """One line on what validation measured and why it accepts or rejects: the gain and its interval, then the
    regressions that block (which statement, by how much, its share of the time), or the interval that does not
    clear the minimum gain, or "validated"; then the rare statements that got slower without blocking (shown, not
    hidden). ``noise``: queryids whose slowdowns the caller proved unrelated to the change (reported by it).

    >>> from advisor.core.domain import StatementEvidence as S
    >>> big = S("q1", "SELECT * FROM orders WHERE id = $1", 5000, 2.0, 0.1, 0.05, (0.04, 0.06), False, 0, 0.99, 0.99)
    >>> adhoc = S("q2", "select count(*) from orders", 1, 10.0, 13.8, 1.38, (1.3, 1.45), True, 0, 0.002, 0.0002)
    >>> ev = Evidence(5, (), (), 0.936, (0.93, 0.94), (big, adhoc), 0.02, 0.1, 0.01, 0.01)
    >>> verdict_note(ev)
    'measured gain +93.6% (95% CI +93.0% .. +94.0%, 5 rounds); validated; 1 rare statement slower (select count(*) from orders: 1.38x, 0.2% of the time)'
    """
    noise = set(noise)
    lo, hi = evidence.gain_ci
    parts = [f"measured gain {evidence.gain:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}, {evidence.rounds} rounds)"]
    blocking = [s for s in evidence.regressions if s.queryid not in noise]
    if blocking:
        parts.append(f"{len(blocking)} statement(s) regressed by more than {evidence.regression_threshold:.0%}: "
                     + "; ".join(slower(s) for s in blocking[:3]) + (" ..." if len(blocking) > 3 else ""))
    elif not evidence.significant:
        parts.append(f"the interval does not clear the minimum gain of {evidence.min_gain:.0%}")
    else:
        parts.append("validated")
    return "; ".join(parts + ([rare_note(evidence)] if evidence.rare_slower else []))


def rare_note(evidence: Evidence) -> str:
    """``1 rare statement slower (<statement>: 1.38x, 0.2% of the time)``: the slowdowns too rare to block; empty
    when there are none."""
    rare = evidence.rare_slower
    if not rare:
        return ""
    return (f"{len(rare)} rare statement{'s' if len(rare) > 1 else ''} slower ("
            + "; ".join(slower(s) for s in rare[:3]) + (" ..." if len(rare) > 3 else "") + ")")


def slower(s: StatementEvidence) -> str:
    """``<statement>: 1.38x, 0.2% of the time`` (or ``failed N times``) for a statement that got slower.

    >>> slower(StatementEvidence("q", "SELECT 1", 1, 1.0, 2.0, 2.0, (1.9, 2.1), True, 0, 0.0004, 0.01))
    'SELECT 1: 2.00x, <0.1% of the time'
    """
    return f"{shorten(s.sql) or s.queryid}: {how_much(s)}"


def how_much(s: StatementEvidence) -> str:
    """``1.38x, 0.2% of the time``: by how much ``s`` got slower and its share of the workload's time."""
    how = f"failed {s.errors} time(s)" if s.errors and not s.ratio == s.ratio else ratio(s.ratio)
    return how + (f", {share(s.time_share)} of the time" if s.time_share is not None else "")


def share(x: float) -> str:
    """A share of the workload as a DBA reads it: ``0.2%``, ``<0.1%``, ``12%``."""
    if x <= 0:
        return "0%"
    if x < 0.001:
        return "<0.1%"
    return f"{x:.1%}" if x < 0.1 else f"{x:.0%}"

