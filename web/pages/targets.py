"""The home page: every target with its last observation and its warm replica's lag; operators register targets
(with a replica or not), build a target's replica and observe them."""

from __future__ import annotations

from fastapi import APIRouter, Request

from advisor.core.errors import AdvisorError
from advisor.service import summary
from web import views
from web.deps import PageSession, Service
from web.pages.forms import Checked, Field, see_other
from web.pages.templating import render

router = APIRouter()


@router.get("/")
def targets_page(request: Request, service: Service, session: PageSession):
    rows = []
    for t in service.targets():
        snaps = service.snapshots(target_id=t["id"], limit=1)
        last = views.snapshot(snaps[0]) if snaps else None
        active = [r for st in ("running", "queued") for r in service.runs(target_id=t["id"], state=st, limit=1)]
        rows.append({"target": t, "summary": t["last_summary"] or {}, "statements": last.statements if last else None,
                     "calls": last.total_calls if last else None, "active_run": active[0] if active else None,
                     # which snapshot those calls are from, as every face says it (advisor.service.summary.observed)
                     "observed": (summary.observed(snaps[0]["id"], snaps[0]["taken_at"], last.total_calls)
                                  if last else None),
                     "waiting": service.count_recommendations("validated", target_id=t["id"])})
    return render(request, "targets.html", session, section="targets", rows=rows)


@router.post("/targets")
def register(service: Service, checked: Checked, name: Field = "", dsn: Field = "", replica: Field = ""):
    if not name.strip() or not dsn.strip():
        raise AdvisorError("a target needs a name and a DSN")
    service.add_target(name.strip(), dsn.strip(), checked[0], replica=bool(replica))
    return see_other("/")


@router.post("/targets/{ref}/replica")
def build_replica(ref: str, service: Service, checked: Checked):
    """Build the target's warm replica in the background; the card shows its progress, then its lag."""
    service.build_replica(ref, checked[0])
    return see_other("/")


@router.post("/targets/{ref}/observe")
def observe(ref: str, service: Service, checked: Checked):
    service.observe_target(ref, checked[0])
    return see_other("/")


@router.get("/targets")
@router.get("/targets/{ref}/observe")
@router.get("/targets/{ref}/replica")
def targets_by_get(ref: str = ""):
    return see_other("/")  # GET never acts (a browser back from the login page lands here)
