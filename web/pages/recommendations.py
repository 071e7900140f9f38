"""Recommendations: the filtered, paged list, and one recommendation with its evidence, SQL, history and the
operator's actions (approve, apply, roll back, reject). What differs between kinds is the kind's page (its folder's
``page.html``, ``Kind.page``, with what it draws of the details, ``Kind.page_of``): a query rewrite's statements
as written and rewritten side by side, a learned index's parameters, an index run's table of indexes. One handed
over (a rewrite, a learned index's parameters) is never applied (no apply or roll back). A rejected
recommendation shows what was tried, never SQL to apply; every one lists what was not recommended and why
(``details["dropped"]``, ``recommendation_dropped.html``), and its evidence tells a blocking regression from a rare
statement's slowdown that is shown but does not block."""

from __future__ import annotations

from fastapi import APIRouter, Request

from advisor.core.domain import TRANSITIONS
from advisor.core.errors import NotFound
from advisor.service.runs import kinds
from advisor.service.summary import slowdown, summarize
from web import views
from web.deps import PageSession, Service
from web.pages import plots
from web.pages.forms import Checked, Field, choice, integer, see_other
from web.pages.formats import ms
from web.pages.templating import render

router = APIRouter()
STATES = ("proposed", "validated", "approved", "applied", "rolled_back", "rejected")
KINDS = tuple(k.name for k in kinds.kinds() if k.optimizers)  # the kinds whose runs make recommendations
PAGE_SIZE = 25


@router.get("/recommendations")
def list_page(request: Request, service: Service, session: PageSession, state: str = "", kind: str = "",
              target: str = "", limit: str = "", offset: str = ""):
    state = choice("state", state, STATES)
    kind = choice("kind", kind, KINDS)
    target = target.strip() or None
    limit_n = integer("limit", limit, PAGE_SIZE, low=1, high=500)
    offset_n = integer("offset", offset, 0, low=0, high=10**9)
    rows = service.recommendation_summaries(state, kind=kind, target=target, limit=limit_n, offset=offset_n)
    total = service.count_recommendations(state, kind=kind, target=target)
    filters = {"state": state or "", "kind": kind or "", "target": target or ""}
    return render(request, "recommendations.html", session, section="recommendations", rows=rows, total=total,
                  limit=limit_n, offset=offset_n, filters=filters, states=STATES, kinds=KINDS,
                  targets=service.targets())


def _evidence(rec) -> dict | None:
    """The evidence table and plots: statements labelled S1, S2, ... in the order of their weight."""
    ev = rec.evidence
    if ev is None:
        return None
    statements = sorted(ev.statements, key=lambda s: -s.weight)
    labels = [f"S{i + 1}" for i in range(len(statements))]
    symbol = summarize(rec).symbol
    return {"ev": ev, "statements": list(zip(labels, statements)),
            # whether each regressed, with the rule that decided it (the CLI's "regressed" column says the same)
            "slowdown": {s.queryid: slowdown(ev, s, symbol) for s in statements},
            "labels": dict(zip((s.queryid for s in statements), labels)),
            "sql": {s.queryid: s.sql for s in statements},
            "bars": plots.paired_bars(labels, [s.baseline_ms for s in statements],
                                      [s.candidate_ms for s in statements], fmt=ms),
            "rounds": plots.round_totals(ev.baseline_totals_ms, ev.candidate_totals_ms)}


@router.get("/recommendations/{rec_id}")
def detail_page(request: Request, rec_id: str, service: Service, session: PageSession):
    rec = service.recommendation(rec_id)
    run = service.run_of(rec)
    try:
        target = service.target(target_id=rec.target_id)
    except NotFound:
        target = None
    head = service.headline(rec, run)  # the headline numbers, the same as the REST API's and the CLI's
    out = views.recommendation(rec, head.predicted_gain)
    nexts = TRANSITIONS.get(rec.state, frozenset())
    # a rewrite is never applied (out.applicable False): its lifecycle ends at approved, so no apply or roll back
    # a rolled-back one is applied again in one step (the service approves it again while its evidence is fresh,
    # else says in one line to tune again)
    actions = {"approve": rec.state == "validated",
               "apply": out.applicable and rec.state in ("approved", "rolled_back"),
               "rollback": out.applicable and rec.state == "applied", "reject": "rejected" in nexts}
    evidence = _evidence(rec)
    return render(request, "recommendation.html", session, section="recommendations", rec=rec, out=out, run=run,
                  target=target, evidence=evidence, history=service.audit_log(rec.id), actions=actions,
                  details=rec.details or {}, page=_page(rec), kind_title=_title(rec.kind), head=head,
                  figures=head.figures)


def _title(kind: str) -> str:
    """What the registry calls a recommendation of ``kind`` (a kind it no longer lists: its name)."""
    return kinds.get(kind).title if kind in kinds.names() else kind.capitalize()


def _page(rec) -> dict | None:
    """What its kind's page draws of ``rec`` (``Kind.page_of``); None: the generic page (a kind the registry no
    longer lists, one without a page, details its page does not draw)."""
    return kinds.get(rec.kind).page_of(rec) if rec.kind in kinds.names() else None


ACTIONS = ("approve", "apply", "rollback", "reject")


@router.post("/recommendations/{rec_id}/{action}")
def act(rec_id: str, action: str, service: Service, checked: Checked, note: Field = ""):
    who = checked[0]
    note = note.strip()[:2000]
    if action == "approve":
        service.approve(rec_id, who, note)
    elif action == "apply":
        service.apply(rec_id, who)
    elif action == "rollback":
        service.rollback(rec_id, who, note)
    elif action == "reject":
        service.reject(rec_id, who, note)
    else:
        raise NotFound(f"no action {action!r}; expected one of {', '.join(ACTIONS)}")
    return see_other(f"/recommendations/{rec_id}")



@router.get("/recommendations/{rec_id}/{action}")
def act_by_get(rec_id: str, action: str):
    """A browser that was sent to the login page from one of the action forms lands here afterwards: show the
    recommendation (GET never acts)."""
    return see_other(f"/recommendations/{rec_id}")
