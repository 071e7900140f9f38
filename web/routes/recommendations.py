from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from web import schemas, views
from web.deps import Limit, Offset, Operator, Service, Viewer

router = APIRouter(prefix="/api/recommendations", tags=["recommendations"], responses=schemas.ERRORS)


@router.get("", response_model=schemas.Page[schemas.RecommendationSummary])
async def list_recommendations(request: Request, service: Service, _: Viewer,
                               state: schemas.RecState | None = Query(None),
                               kind: schemas.RunKind | None = Query(None), target: str | None = None,
                               run_id: str | None = None, limit: Limit = 50, offset: Offset = 0):
    """Newest first; filter by state, kind, target (id or name) and run. Each row carries the predicted and
    the measured gain (with its 95% interval); GET /api/recommendations/{id} has the evidence and the SQL."""
    # pages of the list, serialized, by the store's version (bumped by every write that changes a list, read
    # first) and the query: the list is read far more often than recommendations change
    pages: dict[tuple, asyncio.Task] = request.app.state.list_pages
    key = (service.store.version, state, kind, target, run_id, limit, offset)
    task = pages.get(key)
    if task is None:  # one computation per key, in a task of its own: concurrent requests all await it
        if len(pages) > 256:
            pages.clear()
        task = pages[key] = asyncio.ensure_future(
            run_in_threadpool(_page, service, state, kind, target, run_id, limit, offset))
        task.add_done_callback(lambda t: t.cancelled() or t.exception() is None or pages.pop(key, None))
    return Response(await asyncio.shield(task), media_type="application/json")


def _page(service, state, kind, target, run_id, limit, offset) -> bytes:
    rows = service.recommendation_summaries(state, kind=kind, target=target, run_id=run_id, limit=limit,
                                            offset=offset)
    page = schemas.Page[schemas.RecommendationSummary](
        items=rows, total=service.count_recommendations(state, kind=kind, target=target, run_id=run_id),
        limit=limit, offset=offset)
    return page.model_dump_json().encode()


def _out(service, rec):
    return views.recommendation(rec, service.predicted_gain(rec))


@router.get("/{rec_id}", response_model=schemas.Recommendation)
def get_recommendation(rec_id: str, service: Service, _: Viewer):
    return _out(service, service.recommendation(rec_id))


@router.post("/{rec_id}/approve", response_model=schemas.Recommendation)
def approve(rec_id: str, service: Service, who: Operator, body: schemas.Note | None = None):
    """validated -> approved; rolled_back -> approved, to apply it again while its evidence is fresh."""
    return _out(service, service.approve(rec_id, who, body.note if body else ""))


@router.post("/{rec_id}/reject", response_model=schemas.Recommendation)
def reject(rec_id: str, service: Service, who: Operator, body: schemas.Note | None = None):
    return _out(service, service.reject(rec_id, who, body.note if body else ""))


@router.post("/{rec_id}/apply", response_model=schemas.Recommendation)
def apply(rec_id: str, service: Service, who: Operator):
    """approved -> applied: runs apply_sql on the production target and records how to revert. A rolled-back one
    is applied again in this one step (approved again, audited, watched) while its evidence is fresh (at most
    ADVISOR_REAPPLY_MAX_AGE_DAYS old, not rolled back by its watch); else 409, saying to tune again."""
    return _out(service, service.apply(rec_id, who))


@router.post("/{rec_id}/rollback", response_model=schemas.Recommendation)
def rollback(rec_id: str, service: Service, who: Operator, body: schemas.Note | None = None):
    """applied -> rolled_back: runs the revert SQL recorded at apply time."""
    return _out(service, service.rollback(rec_id, who, body.note if body else ""))
