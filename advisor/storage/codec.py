"""JSON-ready dicts to and from the domain types, for the store and for ``--json`` output."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from advisor.core.domain import (Change, DropIndexChange, Evidence, IndexChange, KnobChange, LearnedIndexParam,
                                 QueryRewrite, Recommendation, StatementEvidence)
from advisor.core.params import as_value


def plain(obj: Any) -> Any:
    """Dataclasses, tuples and floats made JSON-safe (NaN and infinities become null)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def change_from(d: dict) -> Change:
    if d.get("kind") == "knob":
        return KnobChange(d["name"], d["value"], acts_through_plans=bool(d.get("acts_through_plans", False)))
    if d.get("kind") == "index":
        return IndexChange(d["schema"], d["table"], tuple(d["columns"]), d.get("method", "btree"), d.get("name"),
                           include=tuple(d.get("include") or ()), where=d.get("where"))
    if d.get("kind") == "drop_index":
        return DropIndexChange(d["schema"], d["table"], d["name"], d["definition"], d.get("why", ""))
    if d.get("kind") == "query_rewrite":
        return QueryRewrite(d["queryid"], d["original"], d["rewritten"], tuple(d.get("rules") or ()),
                            float(d.get("estimated", 1.0)))
    if d.get("kind") == "learned_index_param":
        return LearnedIndexParam(d["name"], as_value(d["value"]))  # text in rows stored before: the number
    raise ValueError(f"unknown change kind {d.get('kind')!r}")


def _f(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _share(x: Any) -> float | None:
    return None if x is None else float(x)


def evidence_from(d: dict | None) -> Evidence | None:
    """Evidence as stored; evidence stored before the guard weighed statements (no shares, no thresholds) reads
    with every regression blocking, as it was judged then."""
    if d is None:
        return None
    statements = tuple(
        StatementEvidence(s["queryid"], s["sql"], _f(s["weight"]), _f(s["baseline_ms"]), _f(s["candidate_ms"]),
                          _f(s["ratio"]), (_f(s["ratio_ci"][0]), _f(s["ratio_ci"][1])), bool(s["regressed"]),
                          int(s.get("errors", 0)), _share(s.get("time_share")), _share(s.get("call_share")),
                          str(s.get("same_plan") or ""))
        for s in d["statements"])
    return Evidence(int(d["rounds"]), tuple(map(_f, d["baseline_totals_ms"])), tuple(map(_f, d["candidate_totals_ms"])),
                    _f(d["gain"]), (_f(d["gain_ci"][0]), _f(d["gain_ci"][1])), statements, _f(d["min_gain"]),
                    _f(d["regression_threshold"]), float(d.get("min_time_share") or 0.0),
                    float(d.get("min_call_share") or 0.0), _share(d.get("baseline_ms")),
                    _share(d.get("candidate_ms")), str(d.get("measured") or ""),
                    **({"unit": str(d["unit"]), "symbol": str(d.get("symbol") or "")} if d.get("unit") else {}))


def recommendation_dict(rec: Recommendation) -> dict:
    """The recommendation as JSON; its evidence says whether it is accepted and, per statement, whether its
    regression blocks (``blocking``) or is a rare one's, shown but not blocking (``rare``)."""
    out = plain(rec)
    ev = rec.evidence
    if ev is not None:
        out["evidence"]["accepted"] = ev.accepted
        for s, row in zip(ev.statements, out["evidence"]["statements"]):
            row["blocking"] = ev.blocks(s)
            row["rare"] = s.regressed and not ev.blocks(s)
    return out


def recommendation_from(d: dict) -> Recommendation:
    """A recommendation from ``plain(rec)`` (the inverse, as the store reads its rows)."""
    return Recommendation(
        id=d["id"], target_id=d["target_id"], kind=d["kind"], optimizer=d["optimizer"],
        changes=tuple(change_from(c) for c in d["changes"]), apply_sql=tuple(d["apply_sql"]),
        revert_sql=tuple(d["revert_sql"]), needs_restart=bool(d["needs_restart"]), state=d["state"],
        created_at=d["created_at"], evidence=evidence_from(d.get("evidence")), note=d.get("note") or "",
        details=d.get("details") or {}, run_id=d.get("run_id"), applied=d.get("applied"))
