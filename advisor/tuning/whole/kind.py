"""The whole-advisor kind's registry entry ("all"): indexes, then rewrites, then knobs, then the bundle
(``pipeline.tune_all``). It takes every option of the kinds it runs, and ``kinds`` to run fewer."""

from __future__ import annotations

from advisor.core.errors import AdvisorError
from advisor.core.names import did_you_mean
from advisor.tuning.kind import Kind
from advisor.tuning.whole.plan import ORDER
from advisor.tuning.whole.plan import AllPlan


def run(ctx, plan):
    from advisor.tuning.whole.pipeline import tune_all  # on use: the CLI lists kinds

    return tune_all(ctx, plan)


def _summary(result) -> dict:
    recs = result.recommendations
    first = next((r for r in recs if r.state == "validated"), recs[0] if recs else None)
    doc = {"recommendation": first.id if first else None, "recommendations": [r.id for r in recs],
           "state": first.state if first else None, "message": result.message,
           "steps": [{"kind": s.kind, "recommendation": s.recommendation.id if s.recommendation else None,
                      "message": s.message, "failed": s.failed} for s in result.steps],
           "dropped": list(result.dropped)}
    # what the knob step's trials (stored under this run) are measured in
    units = [u for s in result.steps if (u := (getattr(s.result, "summary", None) or {}).get("objective_unit"))]
    if units:
        doc["objective_unit"] = units[0]
    if result.bundle is not None:
        b, k = result.bundle.bundle, result.bundle.kept
        doc["bundle"] = {"gain": b.gain, "gain_ci": list(b.gain_ci), "rounds": b.rounds,
                         "kept_gain": k.gain if k else None, "kept_ci": list(k.gain_ci) if k else None,
                         "parts": [{"kind": p.name, "alone_gain": p.alone.gain, "atop_gain": p.atop.gain,
                                    "contribution": p.contribution.gain,
                                    "contribution_ci": list(p.contribution.gain_ci), "held": p.held,
                                    "pays": p.kept} for p in result.bundle.parts]}
    return doc


def _check(plan) -> None:
    unknown = [k for k in plan.kinds if k not in ORDER]
    if unknown:
        raise AdvisorError(f"kinds: {', '.join(map(repr, unknown))} cannot be part of a whole run"
                           f"{did_you_mean(unknown[0], ORDER)}; choose among {', '.join(ORDER)}")


KIND = Kind("all", "the whole advisor: indexes, then rewrites of what is still slow, then knobs, each on a "
            "shadow with the changes before it; finally the changes measured together, each kept only if it pays",
            run, plan=AllPlan, check_plan=_check, summarize=_summary, choices={"kinds": ORDER},
            title="Whole-advisor")
