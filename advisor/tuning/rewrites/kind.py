"""The rewrite kind's registry entry: a run plan -> the rewrite pipeline (``pipeline.tune_rewrites``). Inputs
besides the plan (``Context.inputs``): ``options`` (the optimizer's: Aurora's ``episodes``, ``retrain``), ``resume``
(a stored, unfinished rewrite run to continue: its races stored as trial records are reused). The plan's
``sql`` (a script whose statements are rewritten instead of the observed workload's heaviest) is refused before
any work when the target's parser refuses a statement (``check_target``, called by the service first)."""

from __future__ import annotations

from advisor.core.domain import QueryRewrite
from advisor.tuning.rewrites import face
from advisor.tuning.kind import Context, Kind, ledger_of
from advisor.tuning.rewrites import given
from advisor.tuning.kind import validation_of as _validation
from advisor.tuning.rewrites.plan import RewritesPlan
from optimizers import rewrites


def check_target(connector, plan) -> None:
    """The given SQL through the target's own parser, before any work (``given.check``)."""
    given.check(connector, plan.sql)


def run(ctx: Context, plan) -> object:
    from advisor.tuning.observe import require_workload
    from advisor.tuning.rewrites.pipeline import RewritePlan, tune_rewrites  # on use: the CLI lists kinds

    connector = ctx.connector
    statements = given.statements(plan.sql, connector.dialect)
    rewrite_plan = RewritePlan(plan.optimizer, statements, plan.max_statements,
                               validation=_validation(ctx, plan),
                               seed=plan.seed, sample_percent=plan.sample_percent,
                               options=dict(ctx.inputs.get("options") or {})).check()
    obs = ctx.observed(connector)
    if not statements:
        require_workload(obs)
    run_id, ledger = ledger_of(ctx, obs.target_id, "rewrites", plan)
    return tune_rewrites(ctx.store, connector, obs, rewrite_plan, model_dir=ctx.model_dir(obs.target_id),
                         run_id=run_id, say=ctx.say, shadows=ctx.shadows, ledger=ledger)



def _train_shipped(*args) -> dict:
    from advisor.tuning.rewrites import shipped  # on use: the CLI lists kinds

    return shipped.train(*args)


KIND = Kind("rewrites", "faster SQL for the heaviest statements (equality saturation), each proven to return "
            "the same rows and timed on a shadow; handed to the statements' owners, never applied", run,
            optimizers=rewrites.OPTIMIZERS, change_types=(QueryRewrite,), plan=RewritesPlan,
            check_target=check_target, handed_over=True, default_optimizer="aurora", title="Query rewrite",
            train_shipped=_train_shipped,
            report=face.report, document=face.document, page=face.PAGE, page_data=face.page)
