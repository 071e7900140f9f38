"""Tuning runs: the list (operators start runs there), one run with its progress, log, trials and convergence
plot, refreshing itself while it is queued or running (static/app.js polls progress.json)."""

from __future__ import annotations

import typing

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from advisor.core.errors import AdvisorError
from advisor.service.runs import ACTIVE, RunPlan, all_options, default_optimizers, kinds
from advisor.service.summary import run_outcome
from web import schemas
from web.deps import PageSession, Service
from web.pages import plots
from web.pages.forms import Checked, Field, PlanFields, choice, integer, see_other
from web.pages.templating import render

router = APIRouter()
RUN_STATES = typing.get_args(schemas.RunState)
OPTIMIZERS = {k.name: k.optimizer_names() for k in kinds.kinds() if k.optimizers}


def _form_fields() -> list[dict]:
    """The plan options the run and schedule forms show (``Option.form``), each with the kinds that take it
    (``data-for-kind``; none listed: every kind) and, for a list of names, the values it may hold (``Kind.choices``:
    the field's placeholder)."""
    fields = []
    for o in (o for o in all_options().values() if o.form):
        name = o.name
        takers = [k.name for k in kinds.kinds() if name in k.options]
        low, high = o.bounds or (None, None)
        fields.append({"name": name, "id": name.replace("_", "-"), "label": o.label, "help": o.help, "type": o.type,
                       "default": "" if o.default is None else (",".join(o.default) if o.type == "names"
                                                                 else o.default),
                       "min": low, "max": high, "for_kinds": " ".join(takers),  # empty: every kind
                       "multiline": o.multiline,
                       "choices": ",".join(next((k.choices[name] for k in kinds.kinds() if name in k.choices), ()))})
    return fields


# what the run and schedule forms need besides the optimizers: the kinds, each kind's default optimizer (the
# form's script names it) and the plan options they show
FORM = {"kinds": [{"name": k.name, "summary": k.summary} for k in kinds.kinds()], "defaults": default_optimizers(),
        "fields": _form_fields()}
PAGE_SIZE = 25


def target_names(service) -> dict[str, str]:
    return {t["id"]: t["name"] for t in service.targets()}


def plan_from_form(fields: dict[str, str]) -> RunPlan:
    """A checked RunPlan from a form's fields (blank ones take their defaults; the options the kind does not take
    are left out by ``RunPlan.parse``); AdvisorError naming the first bad one."""
    return kinds.parse_plan(fields)


@router.get("/runs")
def runs_page(request: Request, service: Service, session: PageSession, target: str = "", state: str = "",
              limit: str = "", offset: str = ""):
    state = choice("state", state, RUN_STATES)
    target = target.strip() or None
    limit_n = integer("limit", limit, PAGE_SIZE, low=1, high=500)
    offset_n = integer("offset", offset, 0, low=0, high=10**9)
    runs = service.runs(target, state, limit_n, offset_n)
    targets = service.targets()
    return render(request, "runs.html", session, section="runs", runs=runs,
                  total=service.count_runs(target, state), limit=limit_n, offset=offset_n,
                  filters={"target": target or "", "state": state or ""}, states=RUN_STATES, targets=targets,
                  names={t["id"]: t["name"] for t in targets}, optimizers=OPTIMIZERS, form=FORM,
                  outcomes={r["id"]: run_outcome(r) for r in runs})


@router.get("/jobs/{job_id}")
def job_page(request: Request, service: Service, session: PageSession, job_id: str):
    """A fleet firing as one job: each target's run (``AdvisorService.fleet_job``)."""
    job = service.fleet_job(job_id)
    schedule = None
    if job["schedule_id"]:
        try:
            schedule = service.schedule(job["schedule_id"])
        except AdvisorError:  # removed since
            schedule = None
    return render(request, "job.html", session, section="runs", job=job, schedule=schedule,
                  outcomes={r["id"]: run_outcome(r) for r in job["runs"]})


@router.post("/runs")
def start_run(service: Service, checked: Checked, fields: PlanFields, target: Field = ""):
    # no target: a plan that needs no database (a learned index's keys from a synthetic set or a key file) goes
    # under its kind's target of its own; the service refuses one that needs a database, in one line
    plan = plan_from_form(fields)
    run = service.start_run(target.strip() or None, plan, checked[0])
    return see_other(f"/runs/{run['id']}")


def _convergence(run: dict, trials: list[dict]):
    measured = [(t["number"] + 1, t["objective"], t.get("source") or "") for t in trials
                if t["status"] == "measured" and t["objective"] is not None and t["number"] is not None]
    if len(measured) < 2:
        return None
    result = run.get("result") or {}
    baseline = result.get("baseline_objective")
    if baseline is None:
        baseline = next((t["objective"] for t in trials if t.get("source") == "default"
                         and t["status"] == "measured"), None)
    unit = objective_unit(run)
    return plots.convergence(measured, baseline, f"objective{', ' + unit if unit else ''} (lower is better)")


def objective_unit(run: dict) -> str | None:
    """What the run's trial objectives are measured in (the knob runner's, recorded with the run's result; None
    for a run recorded before it was)."""
    return (run.get("result") or {}).get("objective_unit")


@router.get("/runs/{run_id}")
def run_page(request: Request, run_id: str, service: Service, session: PageSession):
    run = service.run(run_id)
    trials = service.trials(run_id)
    schedule = None
    if run.get("schedule_id"):
        schedule = next((s for s in service.schedules() if s["id"] == run["schedule_id"]), None)
    return render(request, "run.html", session, section="runs", run=run, trials=trials, result=run.get("result") or {},
                  recs=service.recommendation_summaries(run_id=run_id), plan=(run.get("options") or {}).get("plan"),
                  progress=run.get("progress") or {}, active=run["state"] in ACTIVE,
                  target=target_names(service).get(run["target_id"], run["target_id"]), schedule=schedule,
                  plot=_convergence(run, trials), objective_unit=objective_unit(run), outcome=run_outcome(run))


@router.get("/runs/{run_id}/progress.json")
def progress(run_id: str, service: Service, session: PageSession):
    run = service.run(run_id)
    return JSONResponse({"state": run["state"], "message": (run.get("progress") or {}).get("message", ""),
                         "trials_done": len(service.trials(run_id))}, headers={"Cache-Control": "no-store"})


@router.post("/runs/{run_id}/cancel")
def cancel(run_id: str, service: Service, checked: Checked):
    service.cancel_run(run_id, checked[0])
    return see_other(f"/runs/{run_id}")


@router.get("/runs/{run_id}/cancel")
def cancel_by_get(run_id: str):
    return see_other(f"/runs/{run_id}")  # GET never acts (a browser back from the login page lands here)
