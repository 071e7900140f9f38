from __future__ import annotations

from fastapi import APIRouter, status

from web import schemas, views
from web.deps import Limit, Offset, Operator, Service, Viewer
from web.routes.runs import plan_of

router = APIRouter(prefix="/api/schedules", tags=["schedules"], responses=schemas.ERRORS)


@router.get("", response_model=schemas.Page[schemas.Schedule])
def list_schedules(service: Service, _: Viewer, target: str | None = None, limit: Limit = 50, offset: Offset = 0):
    rows = service.schedules(target)
    return views.page(rows, limit, offset)


@router.post("", response_model=schemas.Schedule, status_code=status.HTTP_201_CREATED)
def add_schedule(body: schemas.ScheduleIn, service: Service, who: Operator):
    return service.add_schedule(body.target, body.cron, [plan_of(r) for r in body.runs], who,
                                timezone=body.timezone, auto_apply=body.auto_apply,
                                auto_apply_knobs=body.auto_apply_knobs, max_regression=body.max_regression)


@router.post("/fleet", response_model=schemas.Schedule, status_code=status.HTTP_201_CREATED)
def add_fleet_schedule(body: schemas.FleetScheduleIn, service: Service, who: Operator):
    """A schedule over a fleet: the targets its selector names at each firing, one run per target per firing (on
    the server's Ray cluster when it has one); it applies nothing by itself."""
    return service.add_fleet_schedule(body.fleet, body.cron, [plan_of(r) for r in body.runs], who,
                                      timezone=body.timezone, ray=body.ray)


@router.get("/jobs/{job_id}", response_model=schemas.FleetJob)
def get_job(job_id: str, service: Service, _: Viewer):
    """A fleet firing as one job: its runs, one per target, and how many ended in each state."""
    return service.fleet_job(job_id)


@router.get("/{schedule_id}", response_model=schemas.Schedule)
def get_schedule(schedule_id: str, service: Service, _: Viewer):
    return service.schedule(schedule_id)


@router.delete("/{schedule_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_schedule(schedule_id: str, service: Service, who: Operator) -> None:
    service.remove_schedule(schedule_id, who)


@router.post("/{schedule_id}/fire", response_model=schemas.Schedule, status_code=status.HTTP_202_ACCEPTED)
def fire(schedule_id: str, service: Service, who: Operator):
    """Run the schedule's job now, in the background (its runs appear under /api/runs?target=...)."""
    service.fire_schedule(schedule_id, who)
    return service.schedule(schedule_id)
