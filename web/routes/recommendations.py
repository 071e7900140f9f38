from __future__ import annotations

from fastapi import APIRouter, Query

from web import schemas, views
from web.deps import Limit, Offset, Operator, Service, Viewer

router = APIRouter(prefix="/api/recommendations", tags=["recommendations"], responses=schemas.ERRORS)


@router.get("", response_model=schemas.Page[schemas.Recommendation])
def list_recommendations(service: Service, _: Viewer, state: schemas.RecState | None = Query(None),
                         kind: schemas.RunKind | None = Query(None), target: str | None = None,
                         run_id: str | None = None, limit: Limit = 50, offset: Offset = 0):
    """Newest first; filter by state, kind, target (id or name) and run."""
    recs = service.recommendations(state, kind=kind, target=target, run_id=run_id, limit=limit, offset=offset)
    runs = {r["id"]: r for r in service.runs()} if any(r.run_id for r in recs) else {}
    return {"items": [views.recommendation(r, runs.get(r.run_id)) for r in recs],
            "total": service.count_recommendations(state, kind=kind, target=target, run_id=run_id),
            "limit": limit, "offset": offset}


def _out(service, rec):
    return views.recommendation(rec, service.run(rec.run_id) if rec.run_id and service.store.runs(run_id=rec.run_id)
                                else None)


@router.get("/{rec_id}", response_model=schemas.Recommendation)
def get_recommendation(rec_id: str, service: Service, _: Viewer):
    return _out(service, service.recommendation(rec_id))


@router.post("/{rec_id}/approve", response_model=schemas.Recommendation)
def approve(rec_id: str, service: Service, who: Operator, body: schemas.Note | None = None):
    """validated -> approved."""
    return _out(service, service.approve(rec_id, who, body.note if body else ""))


@router.post("/{rec_id}/reject", response_model=schemas.Recommendation)
def reject(rec_id: str, service: Service, who: Operator, body: schemas.Note | None = None):
    return _out(service, service.reject(rec_id, who, body.note if body else ""))


@router.post("/{rec_id}/apply", response_model=schemas.Recommendation)
def apply(rec_id: str, service: Service, who: Operator):
    """approved -> applied: runs apply_sql on the production target and records how to revert."""
    return _out(service, service.apply(rec_id, who))


@router.post("/{rec_id}/rollback", response_model=schemas.Recommendation)
def rollback(rec_id: str, service: Service, who: Operator, body: schemas.Note | None = None):
    """applied -> rolled_back: runs the revert SQL recorded at apply time."""
    return _out(service, service.rollback(rec_id, who, body.note if body else ""))
