"""The knob kind's registry entry: a run plan -> the knob pipeline (``pipeline.tune_knobs``) on an observed
target. The searched space (``include``, ``exclude``, ``range``, ``allow_durability``, ``allow_unsafe``) and the
``objective`` are plan options, as over REST. Inputs besides the plan (``Context.inputs``): ``hardware`` (the target's, when the
caller knows it), ``llm`` (a seeder; default: the one configured), ``resume`` (a stored, unfinished run)."""

from __future__ import annotations


from advisor.core.domain import KnobChange
from advisor.core.errors import AdvisorError
from advisor.core.inputs import ranges
from advisor.tuning.knobs import face
from advisor.tuning.kind import Context, Kind, default_outcome
from advisor.tuning.knobs import plan as plan_inputs
from advisor.tuning.knobs.plan import KnobsPlan
from advisor.tuning.kind import validation_of as _validation
from optimizers import knobs
from optimizers.knobs.space import SpaceOptions, check_options


def run(ctx: Context, plan) -> object:
    from advisor.core.settings import get_settings
    from advisor.tuning.knobs.pipeline import KnobPlan, tune_knobs  # on use: the CLI lists kinds
    from advisor.tuning.knobs.trials import TuningOptions
    from advisor.tuning.observe import require_workload
    from optimizers.knobs.llm import from_settings

    rest = dict(validation=_validation(ctx, plan),
                sample_percent=plan.sample_percent, max_statements=ctx.inputs.get("max_statements", 30))
    resume = ctx.inputs.get("resume")
    if resume:
        knob_plan = KnobPlan.from_run(ctx.store.run(resume)["options"], **rest)
    else:
        tuning = TuningOptions(optimizer=plan.optimizer, trials=plan.trials, seeds=plan.seeds, seed=plan.seed,
                               use_seeds=plan.seeds > 0, objective=plan.objective, parallel=plan.parallel,
                               ray=plan.ray)
        knob_plan = KnobPlan(tuning, space_of(plan), repeats=plan.repeats, **rest)
    connector = ctx.connector
    obs = require_workload(ctx.observed(connector))
    llm = ctx.inputs.get("llm")
    run_id = ctx.open_run(obs.target_id, "knobs", knob_plan.tuning.optimizer, knob_plan.to_dict(), resume,
                          ctx.run_id)
    return tune_knobs(ctx.store, connector, obs, knob_plan, hardware=ctx.inputs.get("hardware"),
                      llm=llm if llm is not None else from_settings(get_settings()), run_id=run_id,
                      resume=resume, say=ctx.say, shadows=ctx.shadows)


OBJECTIVES = ("latency", "throughput")


def space_of(plan) -> SpaceOptions:
    """What the plan asks of the knob space."""
    return SpaceOptions(include=plan.include, exclude=plan.exclude, ranges=ranges(plan.range),
                        allow_durability=plan.allow_durability, allow_unsafe=plan.allow_unsafe)


def check_target(connector, plan) -> None:
    """Before any work (no run is recorded): a knob name the server does not have (in ``include``, ``exclude`` or
    ``range``; the closest names suggested), an empty range, or a knob named in ``include`` without the flag the
    engine's profile asks for it (unsafe, durability), is refused (``space.check_options``)."""
    space = space_of(plan)
    named = (*space.include, *space.exclude, *space.ranges)
    check_options(connector.knob_catalog() if named else {}, connector.knob_profile(), space)


def _check(plan) -> None:
    if plan.objective not in OBJECTIVES:
        raise AdvisorError(f"objective {plan.objective!r}: choose one of {', '.join(OBJECTIVES)}")
    ranges(plan.range)


def _summary(result) -> dict:
    """The run row's record of a knob run: the default one (its recommendation, message, what was dropped) with
    the search in figures (trials, failures, best and baseline objectives, findings, keep-current)."""
    return {**result.summary, **default_outcome(result)}


KIND = Kind("knobs", "server settings: a search on a shadow (HiBO, GP-BO, TPE, random) or one rule-based "
            "configuration, validated against the current settings", run, optimizers=knobs.OPTIMIZERS,
            change_types=(KnobChange,), plan=KnobsPlan,
            default_optimizer="hibo", check_plan=_check, check_target=check_target, choices={"objective": OBJECTIVES, "storage": plan_inputs.STORAGE}, summarize=_summary,
            title="Knob", auto_applies=True,
            report=face.report, document=face.document, page=face.PAGE,
            inputs=plan_inputs.INPUTS, take=plan_inputs.take)
