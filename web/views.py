"""Domain objects and store rows as the API's output models (shared by the REST routes and the pages)."""

from __future__ import annotations

from advisor import codec
from advisor.domain import Recommendation
from web import schemas


def predicted_gain(rec: Recommendation, run: dict | None) -> float | None:
    """What the optimizer expected before validation: the what-if cost reduction (indexes), or the best trial
    against the baseline trial of its search run (knobs)."""
    whatif = rec.details.get("whatif") if rec.details else None
    if whatif and whatif.get("relative_cost") is not None:
        return 1.0 - whatif["relative_cost"]
    result = (run or {}).get("result") or {}
    best, base = result.get("best_objective"), result.get("baseline_objective")
    if best is not None and base:
        return 1.0 - best / base
    return None


def recommendation(rec: Recommendation, run: dict | None = None) -> schemas.Recommendation:
    d = codec.recommendation_dict(rec)
    ev = rec.evidence
    return schemas.Recommendation(
        id=rec.id, target_id=rec.target_id, kind=rec.kind, optimizer=rec.optimizer, state=rec.state,
        changes=d["changes"], apply_sql=list(rec.apply_sql), revert_sql=list(rec.revert_sql),
        needs_restart=rec.needs_restart, created_at=rec.created_at, run_id=rec.run_id,
        gain=codec.plain(ev.gain) if ev else None, gain_ci=codec.plain(list(ev.gain_ci)) if ev else None,
        predicted_gain=predicted_gain(rec, run), evidence=d["evidence"], details=d["details"], applied=rec.applied)


def run(row: dict, trials_done: int = 0) -> schemas.Run:
    return schemas.Run(**{k: row.get(k) for k in schemas.Run.model_fields if k != "trials_done"},
                       trials_done=trials_done)


def snapshot(row: dict) -> schemas.Snapshot:
    statements = row["workload"].get("statements", [])
    return schemas.Snapshot(id=row["id"], taken_at=row["taken_at"], summary=row["summary"],
                            statements=len(statements), total_calls=sum(s.get("calls", 0) for s in statements))
