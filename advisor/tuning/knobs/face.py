"""What a knob run shows a person and a program (the kind's faces, as data): ``report`` (its trials with the best
so far, its findings, its recommendation with each knob's reason, the verdict, the statements not replayed) and
``document`` (its JSON); its web page is ``page.html`` (``PAGE``). Faces draw these (``advisor.core.report``)."""

from __future__ import annotations

from pathlib import Path

from advisor.core import report as r
from advisor.core.sqltext import shorten

PAGE = Path(__file__).with_name("page.html")  # its web page (``Kind.page``): the macros of its slots


def _trials(result) -> tuple:
    if not result.trials:
        return ()
    unit = result.summary.get("objective_unit")  # the runner's (latency: calls x median ms, summed)
    rows, best = [], float("inf")
    for t in result.trials:
        obj = t.result.objective
        if obj is not None and t.result.status == "measured":
            best = min(best, obj)
        rows.append((str(t.number + 1), t.source, f"{obj:,.1f}" if obj is not None else "-",
                     f"{best:,.1f}" if best < float("inf") else "-",
                     t.result.status if t.result.status == "measured"
                     else f"{t.result.status}: {shorten(t.result.reason, 50)}"))
    table = r.Table(("#", "source", f"objective, {unit}" if unit else "objective", "best so far", "status"),
                    tuple(rows), f"tuning run {result.run_id} (objective: lower is better)")
    return (table, *(r.Text(f, label="finding") for f in result.findings))


def report(result) -> r.Report:
    """A knob run (``TuneResult``): its trials, then its recommendation or why there is none."""
    blocks = list(_trials(result))
    if result.recommendation is None:
        return r.Report((*blocks, r.Text(result.message or "nothing to recommend"), *r.dropped(result.dropped)))
    blocks.append(r.Recommendation(result.recommendation, dict(result.reasons or {})))
    if result.message:
        blocks.append(r.Text(f"verdict: {result.message}"))
    blocks += [r.Text(f"{shorten(sql)} ({why})", label="not replayed", warn=True) for sql, why in result.skipped]
    return r.Report(tuple(blocks))


def document(result) -> dict:
    """A knob run's JSON (the CLI's ``--json``): its recommendation (a face expands it with its headline numbers),
    why each knob, the message, the workload's kind, what was not replayed, the findings, what was dropped, the
    unit of each trial's objective and every trial."""
    return {"recommendation": result.recommendation, "reasons": result.reasons, "message": result.message,
            "workload_kind": result.observation.workload_kind,
            "not_replayed": [{"statement": s, "reason": why} for s, why in result.skipped],
            "run_id": result.run_id, "findings": list(result.findings), "dropped": list(result.dropped),
            "objective_unit": result.summary.get("objective_unit"),  # what each trial's objective is measured in
            "trials": [{"number": t.number, "source": t.source, "config": t.config, "status": t.result.status,
                        "objective": t.result.objective, "reason": t.result.reason,
                        "duration_s": round(t.duration_s, 3)} for t in result.trials]}
