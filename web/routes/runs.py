from __future__ import annotations

from fastapi import APIRouter, Query, status

from advisor.service.runs import RunPlan
from advisor.service.runs import kinds
from web import schemas, views
from web.deps import Limit, Offset, Operator, Service, Viewer

router = APIRouter(prefix="/api/runs", tags=["tuning runs"], responses=schemas.ERRORS)


def plan_of(body) -> RunPlan:
    """The plan of a validated body, through the one parser every adapter uses."""
    return kinds.parse_plan(body.model_dump(by_alias=True, exclude={"target"}))


@router.post("", response_model=schemas.Run, status_code=status.HTTP_202_ACCEPTED)
def start_run(body: schemas.RunIn, service: Service, who: Operator):
    """Start a tuning run in the background; poll GET /api/runs/{id} for its state and progress. 409 when the
    target already has a run going on."""
    run = service.start_run(body.target, plan_of(body), who)
    return views.run(run)


@router.get("", response_model=schemas.Page[schemas.Run])
def list_runs(service: Service, _: Viewer, target: str | None = None,
              state: schemas.RunState | None = Query(None), limit: Limit = 50, offset: Offset = 0):
    rows = service.runs(target, state, limit, offset)
    return {"items": [views.run(r) for r in rows], "total": service.count_runs(target, state), "limit": limit,
            "offset": offset}


@router.get("/{run_id}", response_model=schemas.Run)
def get_run(run_id: str, service: Service, _: Viewer):
    run = service.run(run_id)
    return views.run(run, len(service.trials(run_id)))


@router.post("/{run_id}/cancel", response_model=schemas.Run, status_code=status.HTTP_202_ACCEPTED)
def cancel_run(run_id: str, service: Service, who: Operator):
    """Ask a queued or running run to stop; it ends as 'cancelled' at its next step, its shadow stopped."""
    return views.run(service.cancel_run(run_id, who))


@router.get("/{run_id}/trials", response_model=schemas.Page[schemas.Trial])
def trials(run_id: str, service: Service, _: Viewer, limit: Limit = 500, offset: Offset = 0):
    rows = service.trials(run_id)
    return views.page(rows, limit, offset)
