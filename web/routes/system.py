from __future__ import annotations

from fastapi import APIRouter

from web import schemas, views
from web.deps import Limit, Offset, Service, Viewer

router = APIRouter(prefix="/api", tags=["system"], responses=schemas.ERRORS)


@router.get("/health", response_model=schemas.Health)
def health(service: Service):
    """Liveness without a token: the store answers and the scheduler's state."""
    scheduler = service.scheduler
    return {"status": "ok", "store_schema": service.store.schema_version,
            "scheduler_running": bool(scheduler and scheduler.running), "scheduled_jobs": len(scheduler.jobs()) if scheduler else 0,
            "runs_active": service.count_runs(state="running") + service.count_runs(state="queued")}


@router.get("/audit", response_model=schemas.Page[schemas.AuditEntry])
def audit(service: Service, _: Viewer, subject: str | None = None, limit: Limit = 100, offset: Offset = 0):
    """Who did what and when: registrations, runs started, approvals, applies, rollbacks, token changes."""
    rows = service.audit_log(subject)
    return views.page(rows, limit, offset)
