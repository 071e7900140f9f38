"""The knob pipeline, top down: observe (done by the caller) -> the target's hardware -> the problem and its seeds
-> bind the workload -> a shadow -> the search (baseline, seeds, then the optimizer's asks, every trial stored) ->
the best candidates rounded as a DBA writes them, reduced by ablation to the knobs that carry their gain, and
validated against the current settings (a set that regressed a statement again without the knob to blame:
``advisor.tuning.knobs.repair``) -> recommend, or "keep your current settings" when nothing measurably
beats them. The service, the demo and ``advisor bench knobs`` call these same functions (the bench tunes a
sandbox it loaded itself, so it starts at ``search``)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field

from advisor.core.domain import Hardware, Recommendation
from advisor.core.knobprofile import KnobProfile
from advisor.core.errors import AdvisorError
from advisor.core.hardware import PARTS, describe, for_target
from advisor.core.progress import Say, silent
from advisor.core.sqltext import shorten
from advisor.storage.store import Store
from advisor.tuning.observe import Observation, bind
from advisor.tuning.recommend import Dropped, dropped_rows, recommend, verdict_note
from advisor.tuning.knobs.shares import seed_line
from advisor.tuning.shadows import Shadows
from advisor.tuning.knobs import slots
from advisor.tuning.knobs.ablation import PLAN_INERT, Ablation, AblationOptions, ablate
from advisor.tuning.knobs.retime import confirm_knob_regressions
from advisor.tuning.knobs.repair import MAX_REPAIRS, blame, repairable, to_take_out, widened, without
from advisor.tuning.knobs.trials import ReplayRunner, TrialRecord, TrialRunner, TuningOptions, TuningRun
from advisor.tuning.validation import ValidationOptions, validate
from connectors.base import Connector, Shadow
from optimizers import registry
from optimizers.base import Optimizer
from optimizers.knobs.features import extract
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.seeding import Seed, seeds_for
from optimizers.knobs.space import KnobSpace, SpaceOptions
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay

MAX_VALIDATIONS = 3


@dataclass(frozen=True)
class KnobPlan:
    """What a knob tuning run does: the search (``tuning``), the space, the validation (None: not validated),
    passes per trial, the shadow's sample, how many of the heaviest statements are replayed, and the ablation
    that reduces the best configuration to the knobs that matter before it is validated (None: not reduced)."""

    tuning: TuningOptions = TuningOptions()
    space: SpaceOptions = SpaceOptions()
    validation: ValidationOptions | None = ValidationOptions()
    repeats: int = 3
    sample_percent: float | None = None
    max_statements: int = 30
    ablation: AblationOptions | None = AblationOptions()

    def to_dict(self) -> dict:
        return {"tuning": self.tuning.to_dict(), "space": dataclasses.asdict(self.space), "repeats": self.repeats}

    @classmethod
    def from_run(cls, options: dict, **rest) -> "KnobPlan":
        """The plan a stored run was started with (for ``--resume``)."""
        space = options["space"]
        return cls(TuningOptions(**options["tuning"]),
                   SpaceOptions(**{**space, "include": tuple(space["include"]), "exclude": tuple(space["exclude"]),
                                   "ranges": {k: tuple(v) for k, v in space["ranges"].items()}}),
                   repeats=options.get("repeats", 3), **rest)


@dataclass(frozen=True)
class TuneResult:
    recommendation: Recommendation | None  # None when nothing was worth validating
    observation: Observation
    reasons: dict[str, str] = field(default_factory=dict)  # the optimizer's explain()
    skipped: tuple[tuple[str, str], ...] = ()  # (statement, why it could not be replayed)
    message: str = ""
    run_id: str | None = None
    trials: tuple = ()  # TrialRecord of the run, in order
    findings: tuple[str, ...] = ()  # what the run learned besides the recommendation
    # what was tried and is not recommended, and why: {"change", "kind", "why"} (``advisor.tuning.recommend``)
    dropped: tuple[dict, ...] = ()
    summary: dict = field(default_factory=dict)  # the search in figures, for the run's row (the service writes it)


def tune_knobs(store: Store, connector: Connector, obs: Observation, plan: KnobPlan, *,
               hardware: Hardware | None = None, llm=None, run_id: str | None = None, resume: str | None = None,
               say: Say = silent, shadows: Shadows | None = None) -> TuneResult:
    """The whole knob pipeline for an observed target (its shadow from ``shadows``, default a full copy). ``hardware``: the target server's, as given for this run
    (None, or this machine's ``detect()``: the target's own, from ``target_hardware``); ``run_id``: the run row
    the service opened for it (trials are stored under it; how the run ends is the service's to record);
    ``resume``: that row is a stored, unfinished run to continue."""
    hardware, hardware_notes = target_hardware(store, connector, obs.target_id, hardware, say)
    problem = knob_problem(obs, hardware, connector.knob_profile(), plan.space)
    optimizer = registry.create("knobs", plan.tuning.optimizer, problem, seed=plan.tuning.seed)
    seeds = propose_seeds(store, problem, obs, plan.tuning, llm, connector.dialect, say)
    bound, skipped = bind(connector, obs, plan.max_statements, say)
    if run_id is None:
        raise AdvisorError("a knob search needs a run to store its trials in (AdvisorService.tune opens one)")
    say(f"tuning run {run_id}: {plan.tuning.optimizer}, {plan.tuning.trials} trials over {problem.space.dim} knobs, "
        f"{len(bound)} statements, {len(seeds)} seed(s)")
    with (shadows or Shadows()).clone(connector, sample_percent=plan.sample_percent, say=say) as shadow:
        bound, failing = leave_out_failing(shadow, bound, say)
        trials = TrialRunner(shadow, ReplayRunner(bound, repeats=plan.repeats, objective=plan.tuning.objective),
                             problem.space, plan.tuning.timeout_factor, plan.tuning.min_timeout_s, say)
        with slots.trial_executor(trials, plan, connector, shadows or Shadows(), bound, say) as executor:
            run = search(store, run_id, obs.target_id, trials, optimizer, plan.tuning, seeds, resume=bool(resume),
                         say=say, executor=executor)
        trials.reset()
        result = validate_best(store, run, obs, connector, shadow, bound, plan.validation, say, plan.ablation)
    return dataclasses.replace(result, skipped=skipped + failing,
                               findings=tuple(hardware_notes) + tuple(
                                   f"left out of the objective, it fails with the current settings: "
                                   f"{shorten(sql, 80)} ({why})" for sql, why in failing) + result.findings)


def target_hardware(store: Store, connector: Connector, target_id: str, given: Hardware | None,
                    say: Say = silent) -> tuple[Hardware, list[str]]:
    """The hardware memory-derived knob sizes are made for: the target server's (``advisor.core.hardware
    .for_target``: given for this run, stored with the target, read from the server, else this machine's, said
    out loud), and the findings to report (a part that only this machine gave). ``given`` with source
    ``detected`` is this machine's, so it counts as not given."""
    run = None if given is None or given.source == "detected" else \
        {"memory_bytes": given.memory_bytes, "cores": given.cores, "storage": given.storage}
    stored = store.target_by_id(target_id).get("hardware")
    server = None
    if not (run or stored) or len({**(stored or {}), **(run or {})}) < len(PARTS):
        try:
            server = connector.hardware()
        except AdvisorError as e:
            say(f"could not read the target's hardware: {e}")
    hw, notes = for_target(run, stored, server)
    say(f"hardware: {describe(hw)} ({'; '.join(notes)})")
    return hw, [f"hardware: {n}" for n in notes if "this machine" in n]


def leave_out_failing(shadow: Shadow, bound: list[BoundStatement],
                      say: Say = silent) -> tuple[list[BoundStatement], tuple[tuple[str, str], ...]]:
    """The statements that run on the shadow as it is, and (sql, error) for those that fail there (a unique-key
    INSERT replayed twice, say): they would fail every trial, so they are left out of the objective."""
    result = replay(shadow.connector, bound, ReplayOptions(repeats=1, warmup=0))
    failing = {qid: getattr(errors[0], "reason", str(errors[0])) for qid, errors in result.errors.items() if errors}
    for st in bound:
        if st.queryid in failing:
            say(f"a statement fails with the current settings and is left out: {failing[st.queryid]}")
    kept = [st for st in bound if st.queryid not in failing]
    if not kept:
        raise AdvisorError(f"every statement of the workload fails on the shadow; first: {next(iter(failing.values()))}")
    return kept, tuple((st.sql, failing[st.queryid]) for st in bound if st.queryid in failing)


def knob_problem(obs: Observation, hardware: Hardware, profile: KnobProfile,
                 space: SpaceOptions = SpaceOptions()) -> KnobProblem:
    """The space over the target's catalog and hardware, by its engine's knob ``profile``
    (``Connector.knob_profile()``), with the observed workload's kind."""
    catalog = {s.name: s for s in obs.snapshot.settings}
    return KnobProblem(KnobSpace.build(catalog, hardware, profile, space), obs.workload_kind)


def propose_seeds(store: Store, problem: KnobProblem, obs: Observation, tuning: TuningOptions, llm, dialect: str,
                  say: Say = silent) -> list[Seed]:
    """LLMTune-style seeds: from ``llm`` when it answers, from hardware and workload rules otherwise; cached in
    the store per (hardware, workload fingerprint). ``dialect``: the target's SQL dialect (``Connector.dialect``),
    to read the statements in."""
    if not tuning.use_seeds:
        return []
    features = extract(obs.workload, obs.data_bytes, obs.workload_kind, dialect=dialect,
                       metrics=obs.snapshot.metrics)
    return seeds_for(problem.space, features, tuning.seeds, llm, (store.cached_seeds, store.cache_seeds), warn=say)


def search(store: Store, run_id: str, target_id: str, trials: TrialRunner, optimizer: Optimizer,
           tuning: TuningOptions, seeds: list[Seed], *, resume: bool = False, say: Say = silent, executor=None):
    """The propose step: the baseline, the seeds, then the asks, each trial stored as it ends (on ``executor``)."""
    run = TuningRun(store, run_id, target_id, trials, optimizer, tuning, seeds, say, executor=executor)
    if resume:
        run.resume_from_store()
    run.execute()
    return run


def validate_best(store: Store, run: TuningRun, obs: Observation, connector: Connector, shadow: Shadow, bound,
                  validation: ValidationOptions | None, say: Say = silent,
                  ablation: AblationOptions | None = AblationOptions()) -> TuneResult:
    """Validate the best configuration against the current one. Its values are rounded as a DBA writes them,
    then (``ablation``) it is reduced to the knobs that carry its gain (``advisor.tuning.knobs.ablation``), and
    that reduced set is validated (when the ablation could not tell which knobs carry the gain, the knobs whose
    share did not settle, together: ``advisor.tuning.knobs.repair.fall_back``). A set rejected only because
    statements regressed is validated again without the knob carrying the least of its gain, then the next
    (``repair``: at most ``MAX_REPAIRS`` in a run; the knob taken out is a dropped row naming the regressed
    statement and its ratio). When it is still rejected (or the gain is not significant), the next candidates
    (the best seed, then the runner-up) go the same way, up to ``MAX_VALIDATIONS`` in all.
    Every validated attempt is stored as a recommendation with its evidence and its knobs' shares; the first one
    accepted is the result. When no trial beat the current configuration, or nothing measurably does, the
    outcome is "keep your current settings", with what was measured."""
    findings = list(findings_of(run))
    base = run.baseline()
    picks = candidates(run)
    reasons = run.optimizer.explain()
    summary = {"trials": len(run.records), "failed": sum(r.result.status != "measured" for r in run.records),
               "best": picks[0].config if picks else None,
               "best_objective": picks[0].result.objective if picks else None,
               "baseline_objective": base.result.objective if base else None, "findings": findings,
               "objective_unit": run.trials.runner.unit}
    dropped: list[dict] = []

    def done(rec, why: str, keep: dict | None = None) -> TuneResult:
        if keep is not None:
            why = f"{KEEP}: {why}"
            summary["keep_current"] = {**keep, "why": why}
        return TuneResult(rec, obs, reasons, (), why, run.run_id, tuple(run.records), tuple(findings),
                          dropped=tuple(dropped_rows(dropped)), summary=summary)

    if run.records and run.best() is None:  # not even the current settings could be measured
        raise AdvisorError(every_trial_failed(run.records))
    if base is None:
        return done(None, "no configuration to validate: the current settings failed")
    if not picks:
        measured = [r for r in run.records if r.result.objective is not None and r is not base]
        best_other = min((r.result.objective for r in measured), default=None)
        return done(None, f"no trial of {len(run.records)} beat them (current settings "
                          f"{run.trials.runner.display(base.result.objective)}"
                          + (f", best other {run.trials.runner.display(best_other)}" if best_other else "") + ")",
                    keep={"trials": len(run.records), "baseline_objective": base.result.objective,
                          "best_other_objective": best_other})
    catalog = run.space.catalog
    first = keep = None
    repairs_left = MAX_REPAIRS

    def attempt(label: str, config: dict, details: dict, cut: Ablation | None, left_out: list):
        """Validate ``config`` and store it as a recommendation: (it, its evidence or None, why)."""
        plan = connector.plan_changes(run.space.changes(config), catalog)
        common = dict(observed=obs, kind="knobs", optimizer=run.optimizer.name, plan=plan,
                      run_id=run.run_id, dropped=left_out)
        say(f"validating {label}: {len(plan.changes)} change(s) against the current configuration, "
            f"{validation.rounds} interleaved rounds")
        try:
            evidence = validate(shadow, bound, plan.changes, validation, say=say)
            # a read the rounds showed slower is timed longer, the setting applied and reverted in turn (beside a
            # busy CPU the rounds' intervals let a real 1.2x through)
            evidence = confirm_knob_regressions(shadow, bound, plan.changes, evidence, validation, say)
        except AdvisorError as e:
            why = f"validation failed: {e}"
            return recommend(store, **common, details=details, accepted=False, why=why), None, why
        why = verdict_note(evidence)
        if cut is not None:  # each kept knob's share of the gain as validated
            cut.rescale(evidence.gain)
            details = cut.details()
            findings.append(f"ablation: {label} changed {cut.changed} knob(s); {len(cut.shares)} carry its gain: "
                            + ", ".join(f"{s.knob} {s.current} -> {s.proposed} "
                                        + (f"({s.share:.0%})" if s.share == s.share else "(share not settled)")
                                        for s in cut.shares))
        rec = recommend(store, **common, details=details, evidence=evidence, accepted=evidence.accepted, why=why)
        return rec, evidence, why

    def accept(rec, why: str, i: int, cand: TrialRecord, earlier) -> TuneResult:
        if earlier is not None:
            findings.append(f"{i} better-scoring candidate(s) were rejected on validation "
                            f"(first: {earlier[1]}); recommending trial {cand.number + 1} ({cand.source})")
        return done(rec, why)

    for i, cand in enumerate(picks if validation is not None else picks[:1]):
        config = run.space.rounded(cand.config)
        if validation is None:
            plan = connector.plan_changes(run.space.changes(config), catalog)
            return done(recommend(store, observed=obs, kind="knobs", optimizer=run.optimizer.name,
                                  plan=plan, run_id=run.run_id, details=_shares_unmeasured(run.space, config)),
                        "not validated (validation was switched off)")
        label = f"candidate {i + 1} (trial {cand.number + 1}, {cand.source})"
        details, cut, left_out = _shares_unmeasured(run.space, config), None, []
        if ablation is not None:
            # the current settings run again, however much slower than the best pass they are
            factor = run.trials.timeout_factor
            run.trials.timeout_factor = factor * max(1.0, base.result.objective / max(cand.result.objective, 1e-9))
            try:
                cut = ablate(run.trials, run.space.default_config(), config,
                             dataclasses.replace(ablation, min_gain=validation.min_gain), say)
            except AdvisorError as e:
                say(f"{label} rejected: {e}")
                dropped.append({"change": label, "kind": "knob", "why": str(e)})
                continue
            finally:
                run.trials.timeout_factor = factor
                run.trials.reset()
            left_out = [Dropped(f"{d.knob} = {d.proposed}", "knob", d.why) for d in cut.dropped]
            dropped.extend(left_out)
            if cut.keep_current:
                say(f"{label}: {cut.why}")
                ref = cut.reference
                keep = keep or {"why_first": cut.why, "gain": ref.gain if ref else None,
                                "gain_ci": list(ref.ci) if ref else None, "measured": ref.line if ref else None}
                continue
            unreduced, (config, details) = config, (cut.config, cut.details())
            if cut.fallback:
                findings.append(f"ablation: {label}: {cut.why}")
        rec, evidence, why = attempt(label, config, details, cut, left_out)
        earlier = first
        if evidence is not None and evidence.accepted:
            return accept(rec, why, i, cand, earlier)
        say(f"{label} rejected: {why}")
        first = first or (rec, why)
        # rejected only for regressions: the kept set again without the knob to blame (advisor.tuning.knobs.repair)
        repairable_now = cut is not None and evidence is not None and repairable(evidence)
        for knob in to_take_out(cut.shares, repairs_left) if repairable_now else ():
            repairs_left -= 1
            row = Dropped(f"{knob} = {next(s.proposed for s in cut.shares if s.knob == knob)}", "knob",
                          f"taken out after validation: {blame(evidence)}")
            fixed = without(cut, knob, run.space.default_config()[knob], row.why)
            say(f"repairing {label}, rejected only for its regressions: validating it without {knob}")
            rec, again, why = attempt(f"{label} without {knob}", fixed.config, fixed.details(), fixed,
                                      [*left_out, row])
            if again is not None and again.accepted:
                dropped.append(row)
                findings.append(f"repair: {label} was rejected for its regressions; without {knob} it is validated")
                return accept(rec, why, i, cand, earlier)
            say(f"{label} without {knob} rejected: {why}")
            if again is None or not repairable(again):  # the regressions are gone, or the gain went with it
                break
        if repairable_now and len(cut.shares) == 1 and repairs_left > 0:  # its one knob regressed: the others
            knob, proposed = cut.shares[0].knob, cut.shares[0].proposed
            wider = widened(unreduced, cut, run.space.default_config(), knob)
            if wider is not None:
                repairs_left -= 1
                row = Dropped(f"{knob} = {proposed}", "knob", f"taken out after validation: {blame(evidence)}")
                inert = [r for r in left_out if r.why == PLAN_INERT]
                say(f"repairing {label}: its one kept knob, {knob}, regressed statements; validating the "
                    "candidate's other changes without it")
                rec, again, why = attempt(f"{label}'s other changes without {knob}", wider,
                                          _shares_unmeasured(run.space, wider), None, [*inert, row])
                if again is not None and again.accepted:
                    dropped[:] = [d for d in dropped if d not in left_out or d in inert] + [row]
                    findings.append(f"repair: {label}'s one kept knob {knob} regressed statements; its other "
                                    f"changes without it are validated")
                    return accept(rec, why, i, cand, earlier)
                say(f"{label}'s other changes without {knob} rejected: {why}")
    if first is None:  # no candidate measurably beat the current settings
        return done(None, keep["why_first"] if keep else "no candidate could be measured",
                    keep=keep or {})
    return done(first[0], f"no candidate was validated; first: {first[1]}", keep={"recommendation": first[0].id})


KEEP = "keep your current settings"


def _shares_unmeasured(space: KnobSpace, config: dict[str, str]) -> dict:
    """Details of a configuration not reduced by ablation: each change current -> proposed, share unknown."""
    base = space.default_config()
    return {"knob_shares": [{"knob": c.name, "current": space.units.shown(space.catalog[c.name], base[c.name]),
                             "proposed": space.units.shown(space.catalog[c.name], c.value), "share": None,
                             "restart": space.catalog[c.name].needs_restart} for c in space.changes(config)]}


def every_trial_failed(records) -> str:
    """Why a run whose every trial failed (the baseline included) failed: its most common reasons.

    >>> from advisor.core.domain import TrialResult
    >>> every_trial_failed([TrialRecord(i, {}, "x", TrialResult(None, "failed", why), 0.0)
    ...                     for i, why in enumerate(["oom", "timeout", "oom"])])
    'every trial failed (3 of 3, the current settings included): oom (2 trials); timeout (1 trial)'
    """
    counts = Counter(r.result.reason or r.result.status for r in records).most_common(3)
    reasons = "; ".join(f"{why} ({n} trial{'s' if n > 1 else ''})" for why, n in counts)
    return f"every trial failed ({len(records)} of {len(records)}, the current settings included): {reasons}"


def candidates(run: TuningRun) -> list[TrialRecord]:
    """Configurations worth validating, best first: the best trial, the best seed (few, explained changes), the
    runner-up, among those that measured better than the baseline and change something. None when no trial
    beat the baseline: then the current settings are kept. Trials that slowed no statement by the guard's 10% in
    their pass come first (the guard would reject the others), each group best first."""
    base = run.baseline()
    ok = sorted((r for r in run.records if r.result.status == "measured" and r.result.objective is not None
                 and r.source != "default" and run.space.changes(r.config)),
                key=lambda r: (r.slows_a_statement(), r.result.objective))
    better = [r for r in ok if base is not None and r.result.objective < base.result.objective]
    picks = better[:1] + [r for r in better if r.source.startswith("seed:")][:1] + better[1:2]
    out, seen = [], set()
    for r in picks:
        key = tuple(sorted(r.config.items()))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out[:MAX_VALIDATIONS]


def findings_of(run: TuningRun):
    """What a DBA should hear besides the winner: how the seeds (the rules a DBA would apply) compare with the
    current configuration, and how many trials failed and why."""
    base = run.baseline()
    for r in run.records:
        if base is None or not r.source.startswith("seed:"):
            continue
        if r.result.objective is None:
            yield f"{r.source[5:]} configuration failed: {r.result.reason}"
            continue
        yield seed_line(r.source[5:], r.result.objective / base.result.objective - 1.0)
    failed = [r for r in run.records if r.result.status != "measured"]
    if failed:
        yield f"{len(failed)} trial(s) failed or were infeasible; first: {failed[0].result.reason}"
