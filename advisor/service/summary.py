"""A recommendation's headline numbers, computed here once; the CLI, the REST API and the web pages only show them.

- verdict: ``rejected`` (its state), else from its evidence: ``validated`` (the gain's interval clears the
  minimum gain and nothing that matters regressed), ``not validated``, or ``unmeasured`` (no evidence).
- measured workload time, in ms: W = sum over statements of calls x the statement's median latency over the
  interleaved rounds, for the baseline and the candidate (``Evidence.baseline_ms`` / ``candidate_ms``); the gain
  is 1 - W(candidate) / W(baseline) of those same two numbers, with its 95% bootstrap interval.
- predicted gain: what the optimizer expected before any measurement (each kind says from what:
  ``Kind.predicted_basis``), always labelled an estimate and never shown as a success.
- statements helped (``StatementEvidence.faster``: the whole interval of their latency ratio below 1), regressed
  (blocking) and rare-slower (slower, too rare to block). A statement that got slower is never among the helped.
- tone: how a face colours the measured gain: ``good`` only for a positive gain of a recommendation that stands
  (validated, approved, applied), ``bad`` for a measured slowdown, ``neutral`` otherwise (a rejected one never
  reads as a success).

- baseline: what the baseline measured includes where it is not the database as it is (``baseline_with``: a
  whole run's later step is validated on a shadow that has the earlier steps' validated changes).
- observed (``observed``): which snapshot a workload's calls come from (the run's: its id, when it was taken, its
  calls and total time), said the same way wherever calls are shown (``observed``: `observe`, a recommendation, a
  target's last snapshot).
- index sizes (``sizes``): per index one estimate (the what-if size the selection counted against the budget) and
  the size built on the shadow, each in MB (``size``), labelled (``SIZE_LABELS``).

``figures`` formats the numbers once, so that every face prints the same text for them; ``document`` is the
JSON of the headline (the CLI's ``--json`` and the REST API), with those texts under ``figures``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from advisor.core import wording
from advisor.core.domain import Evidence, Recommendation, StatementEvidence
from advisor.core.measured import WORKLOAD_TIME
from advisor.core.errors import AdvisorError
from advisor.storage import codec
from advisor.tuning import kinds
from advisor.tuning.indexes.face import IndexSize, index_sizes

STANDING = frozenset({"validated", "approved", "applied"})  # states in which a measured gain reads as a success


def run_outcome(run: dict) -> str:
    """The word a run's badge shows: its state (queued, running, failed, ...) until it is done; then its
    recommendation's state when it made one (``rejected`` for a run whose recommendation was rejected, never
    ``done``), else ``done``.

    >>> run_outcome({"state": "done", "result": {"state": "rejected"}}), run_outcome({"state": "running"})
    ('rejected', 'running')
    """
    result = run.get("result") or {}
    return result.get("state") or run["state"] if run["state"] == "done" else run["state"]


def predicted_gain(relative_cost: float | None, best_objective: float | None,
                   baseline_objective: float | None) -> float | None:
    """What the optimizer expected before validation: the what-if cost reduction (indexes), else the best trial
    of its search run against the run's baseline trial (knobs); None when neither is known."""
    if relative_cost is not None:
        return 1.0 - relative_cost
    if best_objective is not None and baseline_objective:
        return 1.0 - best_objective / baseline_objective
    return None


def predicted_basis(kind: str) -> str:
    """What a predicted gain of a ``kind`` recommendation is an estimate from (``Kind.predicted_basis``)."""
    try:
        return kinds.get(kind).predicted_basis
    except AdvisorError:  # a stored recommendation of a kind this version no longer has
        return "an estimate made before measuring"


def tone(state: str, gain: float | None, accepted: bool | None = None) -> str:
    """``good`` | ``bad`` | ``neutral``: how the measured ``gain`` reads for a recommendation in ``state``.

    >>> tone("validated", 0.2), tone("rejected", 0.2), tone("rejected", -0.1), tone("approved", None)
    ('good', 'neutral', 'bad', 'neutral')
    """
    if gain is None or not math.isfinite(gain):
        return "neutral"
    if gain < 0:
        return "bad"
    return "good" if gain > 0 and state in STANDING and accepted is not False else "neutral"


@dataclass(frozen=True)
class Moved:
    """A statement in the headline: its id, SQL and latency ratio candidate / baseline (medians)."""

    queryid: str
    sql: str
    ratio: float | None


@dataclass(frozen=True)
class Summary:
    state: str
    verdict: str  # validated | not validated | rejected | unmeasured
    tone: str  # of the measured gain: good | bad | neutral
    rounds: int | None
    baseline_ms: float | None  # W of the baseline (see the module docstring)
    candidate_ms: float | None
    gain: float | None  # 1 - candidate_ms / baseline_ms
    gain_ci: tuple[float, float] | None
    predicted_gain: float | None  # an estimate, before any measurement
    predicted_basis: str
    helped: tuple[Moved, ...]
    regressed: tuple[Moved, ...]
    rare_slower: tuple[Moved, ...]
    unit: str = WORKLOAD_TIME
    symbol: str = "ms"  # the unit of baseline_ms / candidate_ms (a learned index's evidence: ns per operation)
    why_rejected: str = ""  # a rejected one: why (the run's bundle verdict where it rejected a validated change)
    author: str = ""  # whose changes it holds (``author``): "by ia2", or "dexter's set, in place of ia2's"
    fallback: str = ""  # where a baseline's set replaced the optimizer's, the sentence that says so (``fallback``)
    baseline_with: str = ""  # what the baseline includes besides the database as it is (``baseline_with``)
    sizes: tuple[IndexSize, ...] = ()  # an index recommendation's sizes (``index_sizes``)
    observed: str = ""  # the snapshot its statements' calls come from (``observed``); "" when not recorded

    @property
    def figures(self) -> dict[str, str]:
        """The numbers as every face prints them: ``baseline``, ``candidate``, ``gain``, ``gain_ci``,
        ``predicted`` (with "estimate"), ``verdict``, ``baseline_label`` (what the baseline is) and one ``line``
        that says them all."""
        measured = self.gain is not None
        amount = ms if self.symbol == "ms" else (lambda x: "-" if x is None else f"{x:,.1f} {self.symbol}")
        out = {"baseline": amount(self.baseline_ms), "candidate": amount(self.candidate_ms), "gain": pct(self.gain),
               "gain_ci": (f"{pct(self.gain_ci[0])} .. {pct(self.gain_ci[1])}" if self.gain_ci else "-"),
               "predicted": (f"{pct(self.predicted_gain)} estimate" if self.predicted_gain is not None else "-"),
               "verdict": self.verdict,
               "baseline_label": (f"baseline, {self.baseline_with}" if self.baseline_with
                                  else "baseline (current configuration)"),
               "observed": self.observed or "-"}
        if measured:
            change = "faster" if self.gain > 0 else "slower" if self.gain < 0 else "no change"
            what = "workload time (calls x median)" if self.unit == WORKLOAD_TIME else self.unit
            out["line"] = (f"{self.verdict}: measured {out['baseline']} -> {out['candidate']} of {what}"
                           + (f" (baseline {self.baseline_with})" if self.baseline_with else "")
                           + f", gain {out['gain']} (95% CI {out['gain_ci']}, {change}) over "
                           f"{self.rounds} interleaved rounds")
        else:
            out["line"] = ("rejected, " if self.verdict == "rejected" else "") + "not measured on a shadow" + (
                f"; predicted {out['predicted']} ({self.predicted_basis})" if self.predicted_gain is not None else "")
        return out


def summarize(rec: Recommendation, predicted: float | None = None) -> Summary:
    """The headline numbers of ``rec``; ``predicted``: the optimizer's predicted gain, when the caller has it
    (``AdvisorService.predicted_gain``)."""
    ev = rec.evidence
    verdict = ("rejected" if rec.state == "rejected" else "unmeasured" if ev is None
               else "validated" if ev.accepted else "not validated")
    base, cand = workload_ms(ev) if ev is not None else (None, None)
    gain = _finite(ev.gain) if ev is not None else None
    return Summary(
        state=rec.state, verdict=verdict, tone=tone(rec.state, gain, ev.accepted if ev is not None else None),
        rounds=ev.rounds if ev is not None else None, baseline_ms=base, candidate_ms=cand, gain=gain,
        gain_ci=(ev.gain_ci[0], ev.gain_ci[1]) if ev is not None and gain is not None else None,
        # a prediction only beside a recommendation that stands: a rejected one never reads as a success
        predicted_gain=_finite(predicted) if verdict in ("validated", "unmeasured") else None,
        predicted_basis=predicted_basis(rec.kind),
        helped=tuple(_moved(s) for s in (ev.statements if ev else ()) if s.faster),
        regressed=tuple(map(_moved, ev.regressions if ev else ())),
        rare_slower=tuple(map(_moved, ev.rare_slower if ev else ())),
        why_rejected=rejected_because(rec) if rec.state == "rejected" else "",
        author=author(rec), fallback=fallback(rec), baseline_with=baseline_with(rec), sizes=index_sizes(rec),
        observed=_observed_of(rec), **_unit_of(rec))


def observed(snapshot_id: str | None, taken_at: float, calls: float | None = None,
             total_ms: float | None = None) -> str:
    """Which snapshot a workload's figures come from, as every face says it beside them.

    >>> observed("5d1c0a9e", 1796040060.0, 95, 2510.0), observed(None, 1796040060.0, 390)
    ('snapshot 5d1c0a9e, observed 2026-11-30 12:01 UTC: 95 calls, 2.51 s in all', 'a snapshot not stored, observed 2026-11-30 12:01 UTC: 390 calls')
    """
    text = (f"snapshot {snapshot_id}" if snapshot_id else "a snapshot not stored") + \
        f", observed {time.strftime('%Y-%m-%d %H:%M', time.gmtime(taken_at))} UTC"
    if calls is not None:
        text += f": {calls:,.0f} calls" + (f", {total_ms / 1000:,.2f} s in all" if total_ms is not None else "")
    return text


def _observed_of(rec: Recommendation) -> str:
    o = (rec.details or {}).get("observed")
    if not isinstance(o, dict) or not isinstance(o.get("taken_at"), (int, float)):
        return ""
    return observed(o.get("snapshot"), o["taken_at"], o.get("calls"), o.get("total_ms"))


def document(head: Summary) -> dict:
    """The headline as JSON, as the CLI's ``--json`` and the REST API give it: its fields, and under ``figures``
    the texts every face prints (``Summary.figures``)."""
    return {**codec.plain(head), "figures": head.figures}


def baseline_with(rec: Recommendation) -> str:
    """What ``rec``'s measured baseline includes besides the database as it is (``details["baseline_with"]``, a
    whole run's: the earlier steps' validated changes its shadow started from); "" when nothing.

    >>> from types import SimpleNamespace as R
    >>> baseline_with(R(details={"baseline_with": [{"kind": "indexes", "recommendation": "9f2c41d0e5", "changes": 1}]}))
    "with the indexes step's 1 change applied (recommendation 9f2c41d0e5)"
    """
    return wording.baseline_with((rec.details or {}).get("baseline_with"))


def _fallback_of(rec: Recommendation) -> dict | None:
    fb = (rec.details or {}).get("fallback")
    return fb if isinstance(fb, dict) and fb.get("from") and fb.get("to") else None


def author(rec: Recommendation) -> str:
    """Whose changes ``rec`` holds, as its label says it: ``by ia2``; where the index pipeline's fallback replaced
    the optimizer's set by a baseline's (lower what-if cost), the set it holds, in whichever state it is.

    >>> from types import SimpleNamespace as R
    >>> author(R(optimizer="ia2", details={})), author(R(optimizer="ia2", details={"fallback": {"from": "ia2",
    ...                                                                                          "to": "dexter"}}))
    ('by ia2', "dexter's set, in place of ia2's")
    """
    fb = _fallback_of(rec)
    return f"{fb['to']}'s set, in place of {fb['from']}'s" if fb else f"by {rec.optimizer}"


def fallback(rec: Recommendation) -> str:
    """The sentence saying that a baseline's set replaced the optimizer's, with the what-if costs; it says which
    set the recommendation holds, never that it is recommended (it may be rejected); "" without a fallback.

    >>> from types import SimpleNamespace as R
    >>> fallback(R(details={"fallback": {"from": "ia2", "to": "dexter", "costs": {"ia2": 154441.4,
    ...                                                                         "dexter": 152136.3}}}))
    "ia2's set had a higher what-if cost than dexter's for the same budget (ia2 154,441.4, dexter 152,136.3), so this recommendation holds dexter's set"
    """
    fb = _fallback_of(rec)
    if not fb:
        return ""
    costs = ", ".join(f"{k} {v:,.1f}" for k, v in (fb.get("costs") or {}).items() if isinstance(v, (int, float)))
    return (f"{fb['from']}'s set had a higher what-if cost than {fb['to']}'s for the same budget"
            + (f" ({costs})" if costs else "") + f", so this recommendation holds {fb['to']}'s set")


def held_back(rec: Recommendation) -> str:
    """Why ``rec`` does not stand, in one short sentence for a list: the bundle's verdict that left it out, else
    the statements it slowed past the threshold, else the first sentence of its note.

    >>> from types import SimpleNamespace as R
    >>> held_back(R(details={"bundle_verdict": "in the bundle it does not pay; more"}, evidence=None, note=""))
    'in the bundle it does not pay'
    """
    bundle = (rec.details or {}).get("bundle_verdict")
    if bundle:
        return wording.headline(str(bundle))
    ev = rec.evidence
    slowed = ev.regressions if ev is not None else ()
    if slowed:
        return f"{len(slowed)} statement(s) slower by more than {ev.regression_threshold:.0%}"
    return wording.headline(rec.note or "")


def rejected_because(rec: Recommendation) -> str:
    """Why ``rec`` was rejected, as every face says it: the whole run's bundle verdict where the bundle rejected a
    change its own validation accepted (its note then still reads "validated"), else its note.

    >>> from types import SimpleNamespace as R
    >>> rejected_because(R(note="measured gain +14.7%; validated", evidence=R(accepted=True),
    ...                    details={"bundle_verdict": "in the bundle with knobs it does not pay"}))
    'in the bundle with knobs it does not pay (on its own: measured gain +14.7%; validated)'
    >>> rejected_because(R(note="2 statement(s) regressed", evidence=None, details={}))
    '2 statement(s) regressed'
    """
    bundle = (rec.details or {}).get("bundle_verdict")
    if not bundle:
        return rec.note or ""
    return f"{bundle} (on its own: {rec.note})" if rec.note else str(bundle)


def _unit_of(rec: Recommendation) -> dict:
    """The unit of the recommendation's evidence (``Evidence.unit``, ``symbol``: a learned index's ns per operation,
    a database's workload time in ms); evidence stored before it carried one: the recommendation's
    ``details["unit"]``/``["unit_symbol"]`` where it named one, else the workload time in ms."""
    ev, details = rec.evidence, rec.details or {}
    if ev is not None and ev.symbol and ev.unit != WORKLOAD_TIME:
        return {"unit": ev.unit, "symbol": ev.symbol}
    if details.get("unit") and details.get("unit_symbol"):
        return {"unit": str(details["unit"]), "symbol": str(details["unit_symbol"])}
    return {}


def workload_ms(ev: Evidence) -> tuple[float | None, float | None]:
    """W of the baseline and of the candidate, in ms. Evidence stored before they were recorded: the baseline's
    W from the per-statement medians, and the candidate's as the one the stored gain implies."""
    base, cand = _finite(ev.baseline_ms), _finite(ev.candidate_ms)
    if base is not None and cand is not None:
        return base, cand
    parts = [s.weight * s.baseline_ms for s in ev.statements if math.isfinite(s.weight * s.baseline_ms)]
    base = sum(parts) if parts else None
    gain = _finite(ev.gain)
    return base, (base * (1.0 - gain) if base is not None and gain is not None else None)


MIN_SLOWER_MS = 1.0  # ``advisor.tuning.evidence.compare``'s floor: a statement slower by less never regresses


def slowdown(ev: Evidence, s: StatementEvidence, symbol: str = "ms") -> str:
    """Whether ``s`` regressed, naming the rule that decided it, as every face prints it in its "regressed"
    column: ``regressed``; ``slower, too rare to block: ...`` (the guard's shares); for a statement whose median
    ratio is over the regression threshold and still did not regress, which rule let it pass (its interval is in
    the faces' 95% CI column); ``same plan`` for one the change left on the same plan (timed once, for both arms);
    else ``no``. ``symbol``: the unit of its times (``Summary.symbol``; the floor is known in ms only).

    >>> from advisor.core.domain import StatementEvidence as S
    >>> ev = Evidence(3, (), (), 0.1, (0.05, 0.15), (), 0.02, 0.1, min_time_share=0.01, min_call_share=0.01)
    >>> st = lambda ratio, ci, regressed=False, share=0.5, **kw: S("q", "select", 1, 1.87, 1.87 * ratio, ratio, ci,
    ...                                                         regressed, 0, share, share, **kw)
    >>> slowdown(ev, st(1.54, (0.92, 2.71)))
    'no: within noise (its 95% CI reaches 1x)'
    >>> slowdown(ev, st(1.54, (1.2, 1.9), True, 0.002))
    'slower, too rare to block (0.2% of the time, 0.2% of the calls)'
    >>> slowdown(ev, st(1.54, (1.2, 1.9), True)), slowdown(ev, st(0.98, (0.9, 1.05))), slowdown(ev, st(1.3, (1.2, 1.4)))
    ('regressed', 'no', 'no: slower by 0.56 ms, under the 1 ms floor')
    >>> slowdown(ev, st(2.0, (1.02, 2.9)))  # its own interval clears 1x, not with every statement judged at once
    'no: not past doubt with 1 statement(s) judged at once'
    >>> slowdown(ev, st(1.0, (1.0, 1.0), same_plan="Seq Scan on t"))
    'no: same plan, timed once'
    """
    if ev.blocks(s):
        return "regressed"
    if s.regressed:
        return (f"slower, too rare to block ({s.time_share or 0.0:.1%} of the time, {s.call_share or 0.0:.1%} of "
                "the calls)")
    if s.same_plan:
        return "no: same plan, timed once"
    if not (s.ratio == s.ratio and s.ratio >= 1.0 + ev.regression_threshold):
        return "no"
    if s.ratio_ci[0] <= 1.0:
        return "no: within noise (its 95% CI reaches 1x)"
    if symbol == "ms" and s.candidate_ms - s.baseline_ms < MIN_SLOWER_MS:
        return f"no: slower by {s.candidate_ms - s.baseline_ms:.2f} ms, under the {MIN_SLOWER_MS:g} ms floor"
    return f"no: not past doubt with {len(ev.statements) or 1} statement(s) judged at once"


def _moved(s: StatementEvidence) -> Moved:
    return Moved(s.queryid, s.sql, _finite(s.ratio))


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def ms(x: float | None) -> str:
    """A workload time: ``927.3 ms``, ``12,345 ms``; ``-`` when unknown."""
    if x is None:
        return "-"
    return f"{x:,.0f} ms" if abs(x) >= 1000 else f"{x:.1f} ms" if abs(x) >= 10 else f"{x:.2f} ms"


def pct(x: float | None) -> str:
    """A signed fraction: 0.123 -> ``+12.3%``; ``-`` when unknown."""
    return "-" if x is None or not math.isfinite(x) else f"{x * 100:+.1f}%"
