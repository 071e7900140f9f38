"""Domain objects and store rows as the API's output models (shared by the REST routes and the pages)."""

from __future__ import annotations

from advisor.core.domain import Recommendation
from advisor.service.production import handed_over
from advisor.service.summary import document, run_outcome, summarize
from advisor.service.watch import watch_of
from advisor.storage import codec
from web import schemas


def recommendation(rec: Recommendation, predicted_gain: float | None) -> schemas.Recommendation:
    d = codec.recommendation_dict(rec)
    ev = rec.evidence
    return schemas.Recommendation(
        id=rec.id, target_id=rec.target_id, kind=rec.kind, optimizer=rec.optimizer, state=rec.state,
        changes=d["changes"], apply_sql=list(rec.apply_sql), revert_sql=list(rec.revert_sql),
        needs_restart=rec.needs_restart, created_at=rec.created_at, run_id=rec.run_id,
        gain=codec.plain(ev.gain) if ev else None, gain_ci=codec.plain(list(ev.gain_ci)) if ev else None,
        predicted_gain=predicted_gain, evidence=d["evidence"], details=d["details"], applied=rec.applied,
        watch=watch_of(rec), applicable=not handed_over(rec), summary=document(summarize(rec, predicted_gain)))


def page(rows: list, limit: int, offset: int) -> dict:
    """A page of a list the service returned whole (short lists: targets, schedules, trials, audit)."""
    return {"items": rows[offset:offset + limit], "total": len(rows), "limit": limit, "offset": offset}


def run(row: dict, trials_done: int = 0) -> schemas.Run:
    return schemas.Run(**{k: row.get(k) for k in schemas.Run.model_fields if k not in ("trials_done", "outcome")},
                       trials_done=trials_done, outcome=run_outcome(row))


def snapshot(row: dict) -> schemas.Snapshot:
    statements = row["workload"].get("statements", [])
    return schemas.Snapshot(id=row["id"], taken_at=row["taken_at"], summary=row["summary"],
                            statements=len(statements), total_calls=sum(s.get("calls", 0) for s in statements))
