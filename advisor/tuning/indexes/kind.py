"""The index kind's registry entry: a run plan -> the index pipeline (``pipeline.tune_indexes``) on an observed
target; its options (``max_width``: columns per candidate, ``retrain``, IA2's ``episodes`` and ``samples``, ``correct``:
choose again on costs corrected by measured time) are
the plan's, as over REST. ``Context.inputs["resume"]``: a stored, unfinished index run to continue (its validation
passes stored as trial records are reused, ``Context``'s ``ledger_of``)."""

from __future__ import annotations

from advisor.core.domain import DropIndexChange, IndexChange
from advisor.tuning.indexes import face
from advisor.tuning.kind import Context, Kind, ledger_of
from advisor.tuning.kind import validation_of as _validation
from advisor.tuning.indexes import plan as plan_inputs
from advisor.tuning.indexes.plan import IndexesPlan
from optimizers import indexes


def run(ctx: Context, plan) -> object:
    from advisor.tuning.indexes.pipeline import IndexPlan, tune_indexes  # on use: the CLI lists kinds
    from advisor.tuning.observe import require_workload

    index_plan = IndexPlan(plan.optimizer, plan.budget_mb, plan.seed, plan.max_width,
                           _validation(ctx, plan), plan.sample_percent,
                           ctx.inputs.get("max_statements", 30),
                           {"episodes": plan.episodes, "device": ctx.device, "samples": plan.samples,
                            "retrain": plan.retrain, "correct": plan.correct}).check()
    connector = ctx.connector
    obs = require_workload(ctx.observed(connector))
    run_id, ledger = ledger_of(ctx, obs.target_id, "indexes", plan)
    return tune_indexes(ctx.store, connector, obs, index_plan, model_dir=ctx.model_dir(obs.target_id),
                        run_id=run_id, say=ctx.say, shadows=ctx.shadows, ledger=ledger)



def _train_shipped(*args) -> dict:
    from advisor.tuning.indexes import shipped  # on use: the CLI lists kinds

    return shipped.train(*args)


KIND = Kind("indexes", "new indexes within a storage budget (and unused ones to drop): what-if costs, the "
            "optimizer's set, each index built and measured on a shadow", run, optimizers=indexes.OPTIMIZERS,
            change_types=(IndexChange, DropIndexChange), plan=IndexesPlan, default_optimizer="ia2", title="Index",
            train_shipped=_train_shipped, predicted_basis="what-if planner cost",
            report=face.report, document=face.document, explain=face.per_statement,
            page=face.PAGE, page_data=face.page, inputs=plan_inputs.INPUTS, displays=plan_inputs.DISPLAYS)
