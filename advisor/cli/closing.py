"""The last screen of a whole run (``advisor tune``, ``advisor demo``), after the details have scrolled by: it fits
one terminal (80 x 24). What to apply, with its commands one per line; what was left out and why, one line per step;
where the details are; and when nothing validated, why (each measurement's own account: its rounds, why it stopped,
the machine's load) and what to try."""

from __future__ import annotations

from collections import Counter

from rich.console import Console

from advisor.cli.pasting import commands
from advisor.core.wording import headline
from advisor.core.domain import state_word
from advisor.service.summary import held_back, summarize

TRY = ("to try: run it again when the machine is quieter, or give it more rounds (--rounds 10); "
       "`advisor recommendations show ID` has each step's measurement")


def _line(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False)


def _why_left(step, rec) -> str:
    """Why a step's recommendation is not among those to apply, in a line (``summary.held_back``: the bundle's
    verdict, else the statements it slowed, else its note; the step's first sentence where it made none), with
    its measured gain and the measurement's own account."""
    if rec is None:
        return headline(step.message or "nothing recommended")
    f = summarize(rec).figures
    why = held_back(rec) or headline(step.message or "not validated")
    if rec.evidence is not None:
        why = f"measured gain {f['gain']} (95% CI {f['gain_ci']}), but {why}" if rec.evidence.regressions and \
            not (rec.details or {}).get("bundle_verdict") else why
        if rec.evidence.measured:
            why += f" (measured: {rec.evidence.measured})"
    return why


def closing(console: Console, result, *, demo: bool = False) -> None:
    """The last screen of ``result`` (a ``WholeResult``). ``demo``: the demo's servers are stopped by now, so
    nothing can be applied: its validated recommendations are shown to read, and the way to one's own database."""
    recs = {r.id: r for r in result.recommendations}
    ready = [r for r in result.recommendations if r.state == "validated"]
    left = []
    for step in result.steps:
        rec = step.recommendation and recs.get(step.recommendation.id, step.recommendation)
        if rec is None or rec.state != "validated":
            left.append((step, rec))
    console.rule("what to do", style="bold")
    if ready:
        _line(console, "validated on a shadow, to read" + (" (the demo's servers are stopped now):" if demo else
                                                            ", approve and apply:"))
        for rec in ready:
            f = summarize(rec).figures
            _line(console, f"  {rec.kind}: {len(rec.changes)} change(s), measured gain {f['gain']} "
                           f"(95% CI {f['gain_ci']})")
            commands(console, [f"advisor recommendations show {rec.id}"] + ([] if demo else (
                [f"advisor recommendations approve {rec.id}"]
                + ([f"advisor recommendations apply {rec.id}"] if rec.apply_sql else []))), indent="    ")
    else:
        _line(console, "nothing validated: no change proved itself on the shadow")
    if result.bundle is not None and result.bundle.kept is not None:
        k = result.bundle.kept
        _line(console, f"  together: measured gain {k.gain:+.1%} (95% CI {k.gain_ci[0]:+.1%} .. "
                       f"{k.gain_ci[1]:+.1%}), on a freshly built shadow")
    if left:
        _line(console, "left out:")
        for step, rec in left:
            why = _why_left(step, rec)
            _line(console, f"  {step.kind}: " + (f"{state_word(rec.state)}: " if rec is not None and
                                                  state_word(rec.state) not in why else "") + why)
    tried = Counter(str(d.get("kind", "")) for d in result.dropped)
    if tried:
        _line(console, f"  {sum(tried.values())} change(s) tried and not recommended ("
                       + ", ".join(f"{n} {kind}" for kind, n in tried.most_common())
                       + "): the 'not recommended' table above says why, one row each")
    if not ready:
        _line(console, TRY)
    if demo:
        _line(console, "on your own database (its DSN in ADVISOR_TARGET_DSN):")
        commands(console, ["advisor targets add --name NAME --replica", "advisor tune --target NAME"])
    _line(console, "details: the tables above, and:")
    commands(console, ["advisor recommendations list", "advisor serve   # the web UI"])
