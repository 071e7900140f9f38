"""What a rewrite run shows a person and a program (the kind's faces, as data): ``report`` (each statement: whether
it was rewritten, its speedup with its interval, the rules, why; what was discarded; each rewritten statement's
two forms; the verdict) and ``document`` (its JSON). Faces draw these (``advisor.core.report``)."""

from __future__ import annotations

from advisor.core import report as r
from advisor.core.sqltext import shorten
from advisor.core.wording import ratio


def report(result) -> r.Report:
    """A rewrite run (``RewriteTuneResult``)."""
    rows = tuple((shorten(o.original, 60), "yes" if o.rewritten else "no",
                  f"{ratio(o.speedup)} ({ratio(o.ci[0], times='')}..{ratio(o.ci[1], times='')})"
                  if o.speedup and o.ci else "-", ", ".join(o.rules) or "-", o.reason or "-")
                 for o in result.statements)
    blocks: list = [r.Table(("statement", "rewritten", "speedup (95% CI)", "rules", "reason"), rows),
                    *r.dropped(result.dropped)]  # each candidate form discarded, and why
    for i, o in enumerate(result.statements):
        if o.rewritten:
            blocks += [r.Text(f"\n  {o.original}", label=f"statement {i + 1} original"),
                       r.Text(f"\n  {o.rewritten}", label=f"statement {i + 1} rewritten")]
    return r.Report((*blocks, r.Text(result.message)))


def document(result) -> dict:
    """A rewrite run's JSON (the CLI's ``--json``): each statement's documented keys (``Outcome.public``)."""
    return {"statements": [o.public() for o in result.statements]}
