"""The whole advisor in one run: "what should I change on this database?".

1. **indexes** for the observed workload (the index pipeline, on its own shadow);
2. **rewrites** of what is still slow, on a shadow that has the new indexes;
3. **knobs** on a shadow that has the new indexes;
4. **the bundle**: every validated change that is applied to a database (indexes, knobs) measured together on a
   freshly built shadow of the target as it is now (``bundle.measure_bundle``): the bundle's gain, each part's
   contribution (the bundle without it) and the share of its gain that holds on the fresh shadow. A part that
   does not pay in the bundle (it helped only without another, or hurts with it) is rejected, and says why.

Each step is its kind's own registry entry and pipeline, so each stores its recommendation as a run of
that kind would; a step that fails is reported and the run goes on. Rewrites are handed to people, never applied:
they are not part of the database bundle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from advisor.core.domain import Recommendation
from advisor.core.errors import AdvisorError, NothingToReplay
from advisor.core.wording import baseline_with, headline, slower_faster
from advisor.tuning.indexes.kind import KIND as INDEXES
from advisor.tuning.kind import Context
from advisor.tuning.knobs.kind import KIND as KNOBS
from advisor.tuning.observe import bind, observe, require_workload
from advisor.tuning.rewrites.kind import KIND as REWRITES
from advisor.tuning.validation import ValidationOptions
from advisor.tuning.all.bundle import BundleResult, measure_bundle
from advisor.tuning.all.plan import ORDER
from connectors import factory

STEPS = {k.name: k for k in sorted((INDEXES, REWRITES, KNOBS), key=lambda k: ORDER.index(k.name))}  # in order
# the bundle's round budget at least (its parts are kept on the t-widened interval, so a clear bundle stops at 3
# rounds; a budget of 5 gave verdicts that flipped between demo runs where it was not clear)
MIN_BUNDLE_ROUNDS = 8


@dataclass(frozen=True)
class Step:
    kind: str
    recommendation: Recommendation | None
    message: str
    failed: bool = False
    result: object = None


@dataclass(frozen=True)
class WholeResult:
    steps: tuple[Step, ...]
    bundle: BundleResult | None = None
    message: str = ""
    dropped: tuple[dict, ...] = ()  # {"change", "kind", "why"}: parts the bundle left out
    recommendations: tuple[Recommendation, ...] = field(default=())  # as they stand after the bundle

    @property
    def recommendation(self) -> Recommendation | None:
        """No single recommendation: a whole run has one per kind (``recommendations``)."""
        return None


def tune_all(ctx: Context, plan) -> WholeResult:
    order = tuple(k for k in ORDER if k in (plan.kinds or ORDER))
    connector = _connector(ctx)
    obs = require_workload(observe(ctx.store, connector, ctx.name, 0.0, ctx.say))
    # one run row for the whole run, and one snapshot: the steps share both (production does not change meanwhile)
    ctx = dataclasses.replace(ctx, observation=obs, run_id=ctx.open_run(obs.target_id, "all", None,
                                                                        {"plan": plan.to_dict()}, None, ctx.run_id))
    steps: list[Step] = []
    base: list = []  # the validated database changes so far: later steps' shadows start from them
    based_on: list[dict] = []  # and whose they are: a later step's baseline includes them (``baseline_with``)
    for i, name in enumerate(order, 1):
        ctx.say(f"[{i}/{len(order)}] {name}")
        sub = _sub_plan(plan, name, obs.data_bytes)
        try:
            with factory.shadows_start_from(base):
                result = STEPS[name].run(ctx, sub)
        except NothingToReplay:  # the workload's, not the step's: every later step would fail the same way
            raise
        except AdvisorError as e:
            ctx.say(f"{name}: failed: {e}")
            steps.append(Step(name, None, f"failed: {e}", failed=True))
            continue
        rec, message = result.recommendation, result.message
        if based_on:  # its figures say that their baseline has the earlier steps' changes
            message = f"{message} [measured {baseline_with(based_on)}]" if message else message
            if rec is not None:
                ctx.store.add_details(rec.id, {"baseline_with": list(based_on)})
                rec = ctx.store.recommendation(rec.id)
        steps.append(Step(name, rec, message, result=result))
        if rec is not None and rec.state == "validated" and not STEPS[name].handed_over:
            base.extend(rec.changes)
            based_on.append({"kind": name, "recommendation": rec.id, "changes": len(rec.changes)})
    parts = [s for s in steps if s.recommendation is not None and s.recommendation.state == "validated"
             and not STEPS[s.kind].handed_over]
    bundle, dropped = None, []
    if parts and plan.validate:
        ctx.say(f"[bundle] {' + '.join(s.kind for s in parts)} measured together on a fresh shadow")
        bundle, dropped = _validate_bundle(ctx, connector, obs, parts, plan)
    recs = tuple(ctx.store.recommendation(s.recommendation.id) for s in steps if s.recommendation is not None)
    # what a step that recommended nothing tried (a recommendation lists its own in its details)
    dropped += [row for s in steps if s.recommendation is None and s.result is not None
                for row in getattr(s.result, "dropped", ())]
    return WholeResult(tuple(steps), bundle, _message(steps, bundle, recs), tuple(dropped), recs)


def _connector(ctx: Context):
    return ctx.connector


def _sub_plan(plan, kind: str, data_bytes: int):
    """The plan of one step: its kind's plan with the options the whole run shares with it, and the defaults that
    kind derives from the target's size (``RunPlan.sized_for``: an index budget when none was given)."""
    part = STEPS[kind].plan
    shared = {name: getattr(plan, name) for name in part.options() if name != "optimizer" and hasattr(plan, name)}
    return STEPS[kind].checked(part(kind=kind, **shared).sized_for(data_bytes))


def _validate_bundle(ctx: Context, connector, obs, parts: list[Step], plan) -> tuple[BundleResult | None, list[dict]]:
    """The parts measured together on a fresh shadow; a part the bundle leaves out is rejected, saying why. A
    bundle that cannot be measured (the shadow failed) leaves the steps' verdicts as they are, and says so."""
    options = ValidationOptions(rounds=max(MIN_BUNDLE_ROUNDS, plan.rounds))
    try:
        bound, _skipped = bind(connector, obs, ctx.inputs.get("max_statements", 30), ctx.say)
        with ctx.shadows.clone(connector, sample_percent=plan.sample_percent, say=ctx.say) as shadow:
            result = measure_bundle(shadow, bound, [(s.kind, s.recommendation.changes,
                                                     s.recommendation.evidence.gain if s.recommendation.evidence
                                                     else None) for s in parts], options, ctx.say)
    except AdvisorError as e:
        ctx.say(f"the bundle could not be measured: {e}; each step's verdict stands")
        return None, []
    dropped = []
    for step, part in zip(parts, result.parts):
        rec = step.recommendation
        ctx.store.add_details(rec.id, {"bundle": _part_doc(part, result)})
        if part.kept:
            continue
        c = part.contribution
        others = ", ".join(s.kind for s in parts if s is not step)
        where = f"in the bundle with {others}" if others else "measured again on a fresh shadow"
        # the contribution's gain is 1 - with / without: with it, the workload took -gain more time
        why = (f"{where} it does not pay: with it the workload was {slower_faster(-c.gain)} (its gain's 95% CI "
               f"{c.gain_ci[0]:+.1%} .. {c.gain_ci[1]:+.1%})"
               + (f" and slows {len(c.regressions)} statement(s)" if c.regressions else ""))
        ctx.store.add_details(rec.id, {"bundle_verdict": why})  # shown with the recommendation
        try:
            ctx.store.transition(rec.id, "rejected", "advisor", why, expect="validated")
        except AdvisorError as e:  # approved meanwhile: the verdict is recorded beside it, not forced
            ctx.say(f"{step.kind}: {why} ({e})")
        dropped.append({"change": f"{step.kind} ({len(rec.changes)} change(s))", "kind": step.kind, "why": why})
    return result, dropped


def recheck(ctx: Context, rec: Recommendation, plan) -> dict:
    """Re-measure a validated recommendation on a freshly built shadow of the target as it is now: the share of
    its gain that holds when redeployed (the MLOS team's TUNA), stored in its details under "bundle"."""
    connector = _connector(ctx)
    obs = observe(ctx.store, connector, ctx.name, 0.0, ctx.say)
    bound, _skipped = bind(connector, obs, ctx.inputs.get("max_statements", 30), ctx.say)
    ctx.say(f"re-measuring recommendation {rec.id} on a freshly built shadow")
    with ctx.shadows.clone(connector, sample_percent=plan.sample_percent, say=ctx.say) as shadow:
        result = measure_bundle(shadow, bound, [(rec.kind, rec.changes, rec.evidence.gain if rec.evidence else None)],
                                ValidationOptions(rounds=max(MIN_BUNDLE_ROUNDS, plan.rounds)), ctx.say)
    doc = _part_doc(result.parts[0], result)
    ctx.store.add_details(rec.id, {"bundle": doc})
    return doc


def _part_doc(part, result: BundleResult) -> dict:
    return {"alone_gain": part.alone.gain, "alone_ci": list(part.alone.gain_ci),
            "atop_gain": part.atop.gain, "atop_ci": list(part.atop.gain_ci),
            "contribution": part.contribution.gain, "contribution_ci": list(part.contribution.gain_ci),
            "held": part.held, "kept": part.kept, "bundle_gain": result.bundle.gain,
            "bundle_ci": list(result.bundle.gain_ci)}


def _message(steps: list[Step], bundle: BundleResult | None, recs: tuple[Recommendation, ...]) -> str:
    states = {r.id: r.state for r in recs}
    parts = []
    for s in steps:
        if s.recommendation is None:  # its first sentence (the step's own result has the rest)
            parts.append(f"{s.kind}: {headline(s.message or 'nothing recommended')}")
        else:
            parts.append(f"{s.kind}: {states.get(s.recommendation.id, s.recommendation.state)}")
    if bundle is not None and bundle.kept is not None:
        lo, hi = bundle.kept.gain_ci
        parts.append(f"together {bundle.kept.gain:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%})")
    return "; ".join(parts)
