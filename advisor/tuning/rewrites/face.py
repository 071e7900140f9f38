"""What a rewrite run shows a person and a program (the kind's faces, as data): ``report`` (each statement: whether
it was rewritten, its speedup with its interval, the rules, why; what was discarded; each rewritten statement's
two forms; the verdict), ``document`` (its JSON) and ``page`` (what its web page, ``page.html``, draws of a stored
recommendation). Faces draw these (``advisor.core.report``)."""

from __future__ import annotations

from pathlib import Path

from advisor.core import report as r
from advisor.core.sqltext import shorten
from advisor.core.wording import ratio

PAGE = Path(__file__).with_name("page.html")  # its web page (``Kind.page``): the macros of its slots


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


# a rewritten statement's keys (``advisor.tuning.rewrites.pipeline.Outcome.details``), for one stored without some
STATEMENT = {"queryid": "", "original": "", "rewritten": None, "rules": [], "speedup": None, "ci": None,
             "equivalent": None, "reason": "", "rewrite_ms": None, "plan_cost": None, "checked_on": [], "rejected": []}


def page(rec) -> dict | None:
    """What its page draws of a recommendation: its statements (``details["statements"]``), the rewritten first
    (in the pipeline's order within each group), each with every key; None for details without statements.

    >>> from types import SimpleNamespace as R
    >>> rows = page(R(details={"statements": [{"queryid": "1"}, {"queryid": "2", "rewritten": "SELECT 2"}]}))
    >>> [(s["queryid"], s["rewritten"], s["rules"]) for s in rows["statements"]]
    [('2', 'SELECT 2', []), ('1', None, [])]
    """
    statements = (rec.details or {}).get("statements")
    if not isinstance(statements, list):
        return None
    rows = [s for s in statements if isinstance(s, dict)]
    rows.sort(key=lambda s: s.get("rewritten") is None)  # stable: the pipeline's order within each group
    return {"statements": [{**STATEMENT, **s} for s in rows]}
