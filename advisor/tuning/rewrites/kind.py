"""The rewrite kind's registry entry: a run plan -> the rewrite pipeline (``pipeline.tune_rewrites``). Inputs
besides the plan (``Context.inputs``): ``sql`` (a script whose statements are rewritten instead of the observed
workload's heaviest), ``options`` (the optimizer's: Aurora's ``episodes``, ``retrain``)."""

from __future__ import annotations

from advisor.core.domain import QueryRewrite
from advisor.core.errors import AdvisorError
from advisor.tuning.kind import Context, Kind
from advisor.tuning.observe import require_workload
from advisor.tuning.rewrites.pipeline import RewritePlan, split_statements, tune_rewrites
from advisor.tuning.kind import validation_of as _validation
from optimizers import rewrites


def run(ctx: Context, plan) -> object:
    from connectors import factory

    sql = ctx.inputs.get("sql")
    statements = split_statements(sql) if sql is not None else ()
    if sql is not None and not statements:
        raise AdvisorError("no SQL statement in the text given")
    rewrite_plan = RewritePlan(plan.optimizer, statements, plan.max_statements,
                               validation=_validation(ctx, plan),
                               seed=plan.seed, sample_percent=plan.sample_percent,
                               options=dict(ctx.inputs.get("options") or {})).check()
    connector = factory.connector(ctx.dsn)
    obs = ctx.observed(connector)
    if not statements:
        require_workload(obs)
    return tune_rewrites(ctx.store, connector, obs, rewrite_plan, model_dir=ctx.model_dir(obs.target_id),
                         run_id=ctx.run_id, say=ctx.say)


KIND = Kind("rewrites", "faster SQL for the heaviest statements (equality saturation), each proven to return "
            "the same rows and timed on a shadow; handed to the statements' owners, never applied", run,
            optimizers=rewrites.OPTIMIZERS, change_types=(QueryRewrite,), options=("max_statements",),
            handed_over=True, default_optimizer="aurora", title="Query rewrite")
