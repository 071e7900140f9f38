from __future__ import annotations

from fastapi import APIRouter, status

from advisor.core.hardware import given
from web import schemas, views
from web.deps import Limit, Offset, Operator, Service, Viewer

router = APIRouter(prefix="/api/targets", tags=["targets"], responses=schemas.ERRORS)


@router.get("", response_model=schemas.Page[schemas.Target])
def list_targets(service: Service, _: Viewer, limit: Limit = 50, offset: Offset = 0):
    rows = service.targets()
    return views.page(rows, limit, offset)


@router.post("", response_model=schemas.Target, status_code=status.HTTP_201_CREATED)
def add_target(body: schemas.TargetIn, service: Service, who: Operator):
    """Register a database (PostgreSQL with pg_stat_statements, or MariaDB/MySQL with performance_schema on):
    it must be reachable and observable; the DSN is stored encrypted and a first snapshot is taken. With
    ``replica``, its warm replica is built in the background (its state and lag in the target's ``replica``)."""
    return service.add_target(body.name, body.dsn.get_secret_value(), who,
                              hardware=given(body.memory_gb, body.cpus) or None, replica=body.replica)


@router.get("/{ref}", response_model=schemas.Target)
def get_target(ref: str, service: Service, _: Viewer):
    return service.target(ref)


@router.patch("/{ref}", response_model=schemas.Target)
def update_target(ref: str, body: schemas.TargetUpdate, service: Service, who: Operator):
    """Change a registered target's DSN, audited. A name is never re-registered (POST answers 409); the new DSN
    must reach the same database unless ``other_database`` says otherwise."""
    return service.update_target(ref, body.dsn.get_secret_value(), who, other_database=body.other_database)


@router.delete("/{ref}", status_code=status.HTTP_204_NO_CONTENT)
def remove_target(ref: str, service: Service, who: Operator) -> None:
    service.remove_target(ref, who)


@router.put("/{ref}/tags", response_model=schemas.Target)
def set_tags(ref: str, body: schemas.TagsIn, service: Service, who: Operator):
    """Replace a target's tags (a fleet schedule's tag:NAME selects by them)."""
    return service.tag_target(ref, body.tags, who)


@router.post("/{ref}/replica", response_model=schemas.Target, status_code=status.HTTP_202_ACCEPTED)
def build_replica(ref: str, service: Service, who: Operator):
    """Build the target's warm replica in the background (or start it, when it has one); 400 with the reason
    when the database cannot feed one."""
    service.build_replica(ref, who)
    return service.target(ref)


@router.get("/{ref}/check", response_model=schemas.ReplicaCheck)
def check(ref: str, service: Service, _: Operator):
    """What a replica needs from the database and it lacks, each with the line that fixes it, and the notes
    ``advisor targets check`` prints (what the replica would be built without: a slower seed, say)."""
    return service.replica_readiness(ref)


@router.post("/{ref}/observe", response_model=schemas.Snapshot, status_code=status.HTTP_201_CREATED)
def observe(ref: str, service: Service, who: Operator):
    obs = service.observe_target(ref, who)
    return next(views.snapshot(s) for s in service.snapshots(ref, limit=1) if s["id"] == obs.snapshot_id)


@router.get("/{ref}/snapshots", response_model=schemas.Page[schemas.Snapshot])
def snapshots(ref: str, service: Service, _: Viewer, limit: Limit = 50, offset: Offset = 0):
    rows = service.snapshots(ref, limit, offset)
    return {"items": [views.snapshot(s) for s in rows], "total": service.count_snapshots(ref), "limit": limit,
            "offset": offset}
