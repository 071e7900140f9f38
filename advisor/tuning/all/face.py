"""What a whole run shows a person and a program (the kind's faces, as data): ``report`` (each step's
recommendation or why there is none, the bundle measured together on a fresh shadow with each part's contribution
and the share of its gain that held, what was dropped, then the last screen) and ``document`` (its JSON: the run
row's outcome, ``outcome``, with every recommendation). Faces draw these (``advisor.core.report``)."""

from __future__ import annotations

from advisor.core import report as r


def report(result) -> r.Report:
    """A whole run (``WholeResult``); the recommendations as they stand after the bundle."""
    blocks: list = []
    stands = {rec.id: rec for rec in result.recommendations}
    for step in result.steps:
        blocks.append(r.Text(step.message or "", label=step.kind, strong=True))
        if step.recommendation is not None:
            blocks.append(r.Recommendation(stands.get(step.recommendation.id, step.recommendation)))
    if result.bundle is not None:
        b, k = result.bundle.bundle, result.bundle.kept
        blocks.append(r.Text(f"on a freshly built shadow ({b.rounds} rounds): every part {b.gain:+.1%} (95% CI "
                             f"{b.gain_ci[0]:+.1%} .. {b.gain_ci[1]:+.1%})"
                             + (f"; the parts that pay {k.gain:+.1%} (95% CI {k.gain_ci[0]:+.1%} .. "
                                f"{k.gain_ci[1]:+.1%})" if k is not None else "; no part pays"),
                             label="together", strong=True))
        blocks.append(r.Table(("part", "alone", "on top of the parts before it", "its contribution",
                               "gain that held", "verdict"),
                              tuple((p.name, f"{p.alone.gain:+.1%}", f"{p.atop.gain:+.1%}",
                                     f"{p.contribution.gain:+.1%} ({p.contribution.gain_ci[0]:+.1%} .. "
                                     f"{p.contribution.gain_ci[1]:+.1%})",
                                     "-" if p.held is None else f"{p.held:.0%}", "pays" if p.kept else "dropped")
                                    for p in result.bundle.parts)))
    return r.Report((*blocks, *r.dropped(result.dropped), r.Closing()))


def outcome(result) -> dict:
    """What the run's row records (the kind's ``summarize``): the first validated recommendation, every one, the
    steps, what was dropped, the knob step's objective unit and the bundle."""
    recs = result.recommendations
    first = next((r for r in recs if r.state == "validated"), recs[0] if recs else None)
    doc = {"recommendation": first.id if first else None, "recommendations": [r.id for r in recs],
           "state": first.state if first else None, "message": result.message,
           "steps": [{"kind": s.kind, "recommendation": s.recommendation.id if s.recommendation else None,
                      "message": s.message, "failed": s.failed} for s in result.steps],
           "dropped": list(result.dropped)}
    # what the knob step's trials (stored under this run) are measured in
    units = [u for s in result.steps if (u := (getattr(s.result, "summary", None) or {}).get("objective_unit"))]
    if units:
        doc["objective_unit"] = units[0]
    if result.bundle is not None:
        b, k = result.bundle.bundle, result.bundle.kept
        doc["bundle"] = {"gain": b.gain, "gain_ci": list(b.gain_ci), "rounds": b.rounds,
                         "kept_gain": k.gain if k else None, "kept_ci": list(k.gain_ci) if k else None,
                         "parts": [{"kind": p.name, "alone_gain": p.alone.gain, "atop_gain": p.atop.gain,
                                    "contribution": p.contribution.gain,
                                    "contribution_ci": list(p.contribution.gain_ci), "held": p.held,
                                    "pays": p.kept} for p in result.bundle.parts]}
    return doc


def document(result) -> dict:
    """The JSON of a whole run: its row's outcome with every recommendation (a face expands each)."""
    return {**outcome(result), "recommendations": list(result.recommendations)}
