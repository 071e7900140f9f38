"""Schedules: every schedule with its next and last fire and the outcome of its recent runs; operators add,
remove and fire them."""

from __future__ import annotations

from fastapi import APIRouter, Request

from advisor.core.errors import AdvisorError
from advisor.service.scheduling import AUTO_APPLY
from web.deps import PageSession, Service
from web.pages.forms import Checked, Field, PlanFields, choice, see_other
from web.pages.runs import FORM, OPTIMIZERS, plan_from_form
from web.pages.templating import render

router = APIRouter()
RECENT = 5


@router.get("/schedules")
def schedules_page(request: Request, service: Service, session: PageSession):
    targets = service.targets()
    names = {t["id"]: t["name"] for t in targets}
    rows = []
    for s in service.schedules():
        runs = [r for r in service.runs(target_id=s["target_id"]) if r.get("schedule_id") == s["id"]][:RECENT]
        rows.append({"schedule": s, "target": names.get(s["target_id"], s["target_id"]), "runs": runs})
    return render(request, "schedules.html", session, section="schedules", rows=rows, targets=targets,
                  optimizers=OPTIMIZERS, form=FORM, auto_apply=AUTO_APPLY)


@router.post("/schedules")
def add_schedule(service: Service, checked: Checked, fields: PlanFields, target: Field = "", cron: Field = "",
                 timezone: Field = "", auto_apply: Field = ""):
    if not cron.strip():
        raise AdvisorError("a schedule needs a cron expression, e.g. '0 2 * * *' (02:00 every day)")
    plan = plan_from_form(fields)
    # no target: runs that need no database (a learned index's synthetic keys), under their target of its own
    service.add_schedule(target.strip() or None, " ".join(cron.split()), [plan], checked[0],
                         timezone=timezone.strip() or "UTC",
                         auto_apply=choice("auto_apply", auto_apply, AUTO_APPLY, "none"))
    return see_other("/schedules")


@router.post("/schedules/{schedule_id}/remove")
def remove_schedule(schedule_id: str, service: Service, checked: Checked):
    service.remove_schedule(schedule_id, checked[0])
    return see_other("/schedules")


@router.post("/schedules/{schedule_id}/fire")
def fire(schedule_id: str, service: Service, checked: Checked):
    service.fire_schedule(schedule_id, checked[0])
    return see_other("/schedules")


@router.get("/schedules/{schedule_id}/{action}")
def act_by_get(schedule_id: str, action: str):
    return see_other("/schedules")  # GET never acts (a browser back from the login page lands here)
