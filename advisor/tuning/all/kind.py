"""The whole-advisor kind's registry entry ("all"): indexes, then rewrites, then knobs, then the bundle
(``pipeline.tune_all``). It takes every option of the kinds it runs, and ``kinds`` to run fewer."""

from __future__ import annotations

from advisor.core.errors import AdvisorError
from advisor.core.names import did_you_mean
from advisor.tuning.kind import Kind
from advisor.tuning.all.plan import ORDER
from advisor.tuning.all import face
from advisor.tuning.all.plan import AllPlan


def run(ctx, plan):
    from advisor.tuning.all.pipeline import tune_all  # on use: the CLI lists kinds

    return tune_all(ctx, plan)


def _check(plan) -> None:
    unknown = [k for k in plan.kinds if k not in ORDER]
    if unknown:
        raise AdvisorError(f"kinds: {', '.join(map(repr, unknown))} cannot be part of a whole run"
                           f"{did_you_mean(unknown[0], ORDER)}; choose among {', '.join(ORDER)}")


KIND = Kind("all", "the whole advisor: indexes, then rewrites of what is still slow, then knobs, each on a "
            "shadow with the changes before it; finally the changes measured together, each kept only if it pays",
            run, plan=AllPlan, check_plan=_check, summarize=face.outcome, choices={"kinds": ORDER},
            title="Whole-advisor", composite=True,
            report=face.report, document=face.document)
