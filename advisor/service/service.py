"""AdvisorService: the one API that the CLI, REST routes, web pages and scheduled jobs call.

Each method parses nothing and prints nothing: it takes plain values, does one job, records it in the store
and returns domain objects. Production is only read here; applying to it is a separate, approved step.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.core.domain import Hardware, IndexChange, Recommendation, Snapshot, Statement, Workload
from advisor.tuning.index_validation import IndexValidation, validate_indexes
from advisor.tuning.indexing import build_problem
from advisor.service.auth import Principal
from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.service.access import AccessMixin
from advisor.service.operations import OperationsMixin
from advisor.tuning.validation import ValidationOptions, validate
from advisor.storage.store import Store, new_id
from connectors import factory
from connectors.base import Connector
from optimizers import registry
from optimizers.base import TuningContext
from optimizers.knobs.features import extract
from optimizers.knobs.rules import classify_workload
from optimizers.knobs.search import SearchOptimizer
from optimizers.knobs.seeding import seeds_for
from optimizers.knobs.space import KnobSpace, SpaceOptions
from advisor.tuning.trials import ReplayRunner, TrialRunner, TuningOptions, TuningRun
from workloads.binding import bind_workload
from workloads.capture import workload_delta


@dataclass(frozen=True)
class Observation:
    target_id: str
    snapshot_id: str
    snapshot: Snapshot
    workload: Workload
    workload_kind: str


@dataclass(frozen=True)
class IndexTuneResult:
    recommendation: Recommendation | None  # None when no index is worth its space
    observation: Observation
    chosen: tuple[IndexChange, ...]  # the optimizer's set, before validation
    validation: IndexValidation | None
    whatif: dict  # relative cost, costs, estimated bytes, budget, what-if calls and cache hits, selection time
    training: dict | None  # IA2's training (or the reused model's) statistics
    skipped: tuple[tuple[str, str], ...] = ()
    message: str = ""


@dataclass(frozen=True)
class TuneResult:
    recommendation: Recommendation | None  # None when the optimizer proposes nothing
    observation: Observation
    reasons: dict[str, str] = field(default_factory=dict)
    skipped: tuple[tuple[str, str], ...] = ()  # (statement, why it could not be replayed)
    message: str = ""
    run_id: str | None = None
    trials: tuple = ()  # TrialRecord of a search run, in order
    findings: tuple[str, ...] = ()  # what the run learned besides the recommendation


class AdvisorService(OperationsMixin, AccessMixin):
    """The tuning itself (observe, tune knobs, tune indexes) is here; registered targets, runs, the recommendation
    lifecycle and schedules are in ``service_ops``, tokens and sessions in ``service_access``. ``executor`` (a ``runs.RunExecutor``) runs started runs in the background; without one (the CLI),
    ``start_run`` runs them in the caller's thread. Actions that change anything take ``who`` (a Principal) and
    check its role here, so every adapter enforces the same rules."""

    def __init__(self, store: Store, say: Say | None = None, executor=None):
        self.store = store
        self.say = say or silent
        self.executor = executor
        self._principals: dict[str, tuple[int, Principal]] = {}  # token hash -> (store version, principal)

    # --- observe --------------------------------------------------------------------------------------------

    def observe(self, dsn: str, name: str | None = None, interval_s: float = 0.0) -> Observation:
        """Snapshot the target; the workload is the delta over ``interval_s`` seconds, or everything since the
        last statistics reset when 0."""
        connector = factory.connector(dsn)
        self.say(f"observing {connector.display_name}")
        before = connector.observe() if interval_s > 0 else None
        if before is not None:
            self.say(f"waiting {interval_s:g}s for the workload")
            time.sleep(interval_s)
        snap = connector.observe()
        workload = workload_delta(snap, before)
        target_id = self.store.upsert_target(name or connector.target_name, connector.engine, connector.display_name)
        snapshot_id = self.store.add_snapshot(target_id, snap, workload)
        return Observation(target_id, snapshot_id, snap, workload, classify_workload(workload))

    def _observe_workload(self, dsn: str, name: str | None) -> Observation:
        """An observation with at least one application statement (tuning needs a workload)."""
        obs = self.observe(dsn, name)
        if not obs.workload.statements:
            raise AdvisorError(f"no workload observed in database {obs.snapshot.database!r}: pg_stat_statements has "
                               "no application statements; run the workload first")
        return obs

    # --- tune -----------------------------------------------------------------------------------------------

    def tune_knobs(self, dsn: str, optimizer: str = "rules", *, name: str | None = None,
                   hardware: Hardware | None = None, validation: ValidationOptions | None = ValidationOptions(),
                   sample_percent: float | None = None, max_statements: int = 30,
                   tuning: TuningOptions | None = None, space: SpaceOptions = SpaceOptions(), llm=None,
                   resume: str | None = None, repeats: int = 3, run_id: str | None = None) -> TuneResult:
        """Observe, ask the optimizer (a search optimizer runs a whole tuning run, see ``_tune_search``), validate its configuration on a shadow (unless ``validation`` is None)
        and store the recommendation: validated when the gain's interval clears the minimum gain and no
        statement regresses, rejected otherwise."""
        from advisor.core.hardware import detect

        opt = registry.create("knobs", optimizer)  # an unknown name fails before anything is touched
        if isinstance(opt, SearchOptimizer) or resume:
            return self._tune_search(dsn, optimizer, name=name, hardware=hardware, validation=validation,
                                     sample_percent=sample_percent, max_statements=max_statements,
                                     tuning=tuning or TuningOptions(optimizer=optimizer), space=space,
                                     llm=llm, resume=resume, repeats=repeats, run_id=run_id)
        obs = self._observe_workload(dsn, name)
        catalog = {s.name: s for s in obs.snapshot.settings}
        hw = hardware or detect()
        context = TuningContext(catalog, obs.workload, hw, obs.workload_kind)
        self.say(f"workload: {len(obs.workload.statements)} statements, {obs.workload.total_calls} calls, "
                 f"kind {obs.workload_kind}; hardware {hw.memory_bytes / 1024**3:.1f} GiB, {hw.cores} cores, {hw.storage}")
        changes = opt.suggest(context, 1)[0]
        reasons = dict(getattr(opt, "last_reasons", {}))
        if not changes:
            return TuneResult(None, obs, reasons, (), f"{optimizer}: nothing to change")
        connector = factory.connector(dsn)
        plan = connector.plan_changes(changes, catalog)
        self.say(f"{optimizer} proposes {len(changes)} changes" + (" (restart needed)" if plan.needs_restart else ""))
        run_id = run_id or new_id()
        rec = Recommendation(new_id(), obs.target_id, "knobs", optimizer, plan.changes, plan.apply_sql,
                             plan.revert_sql, plan.needs_restart, "proposed", time.time(), run_id=run_id)
        if validation is None:
            self.store.add_recommendation(rec)
            return TuneResult(rec, obs, reasons, (), "not validated (validation was switched off)")
        statements = self._top(obs.workload.statements, max_statements)
        bound, skipped = bind_workload(connector, Workload(statements))
        for st, why in skipped:
            self.say(f"cannot replay a statement ({why}); left out")
        self.say(f"validating on a shadow: {len(bound)} statements, {validation.rounds} interleaved rounds")
        try:
            with factory.clone(connector, sample_percent=sample_percent, say=self.say) as shadow:
                evidence = validate(shadow, bound, plan.changes, validation, say=self.say)
        except AdvisorError as e:
            self.store.add_trial(obs.target_id, run_id, optimizer, list(plan.changes), None, "failed", str(e))
            self.store.add_recommendation(rec)
            rec = self.store.transition(rec.id, "rejected", "advisor", f"validation failed: {e}")
            return TuneResult(rec, obs, reasons, tuple((s.sql, w) for s, w in skipped), f"validation failed: {e}")
        self.store.add_trial(obs.target_id, run_id, optimizer, list(plan.changes), evidence, "measured")
        rec = dataclasses.replace(rec, evidence=evidence)
        self.store.add_recommendation(rec)
        verdict = "validated" if evidence.accepted else "rejected"
        why = _verdict_note(evidence)
        rec = self.store.transition(rec.id, verdict, "advisor", why)
        return TuneResult(rec, obs, reasons, tuple((s.sql, w) for s, w in skipped), why)

    def _tune_search(self, dsn: str, optimizer: str, *, name, hardware, validation, sample_percent, max_statements,
                     tuning: TuningOptions, space: SpaceOptions, llm, resume: str | None, repeats: int,
                     run_id: str | None = None) -> TuneResult:
        """A tuning run on a shadow: baseline, seeds, then the optimizer's trials, every one stored as it ends;
        the best configuration is validated once more against the baseline with interleaved rounds."""
        from advisor.core.hardware import detect

        prior: dict = {}
        if resume:
            prior = self.store.run(resume)
            if prior["state"] == "done":
                raise AdvisorError(f"tuning run {resume} is already finished")
            opts = prior["options"]
            tuning = TuningOptions(**opts["tuning"])
            space = SpaceOptions(**{**opts["space"], "include": tuple(opts["space"]["include"]),
                                    "exclude": tuple(opts["space"]["exclude"]),
                                    "ranges": {k: tuple(v) for k, v in opts["space"]["ranges"].items()}})
            repeats = opts.get("repeats", repeats)
        opt = registry.create("knobs", tuning.optimizer, seed=tuning.seed)
        if not isinstance(opt, SearchOptimizer):
            raise AdvisorError(f"{tuning.optimizer} is not a search optimizer")
        obs = self._observe_workload(dsn, name)
        catalog = {s.name: s for s in obs.snapshot.settings}
        hw = hardware or detect()
        knob_space = KnobSpace.build(catalog, hw, space)
        opt.bind(knob_space)
        features = extract(obs.workload, sum(t.total_bytes for t in obs.snapshot.tables), obs.workload_kind)
        seeds = seeds_for(knob_space, features, tuning.seeds, llm, (self.store.cached_seeds, self.store.cache_seeds),
                          warn=self.say) if tuning.use_seeds else []
        connector = factory.connector(dsn)
        statements = self._top(obs.workload.statements, max_statements)
        bound, skipped = bind_workload(connector, Workload(statements))
        if not bound:
            raise AdvisorError("nothing to replay: no statement of the workload could be bound to values")
        if resume and prior["target_id"] != obs.target_id:
            raise AdvisorError(f"tuning run {resume} belongs to another target; resume it against that target")
        options = {"tuning": tuning.to_dict(), "space": dataclasses.asdict(space), "repeats": repeats}
        managed = bool(run_id and not resume)  # started by start_run: execute_run records how it ends
        if managed:  # its row exists; record the search's own options
            self.store.update_run(run_id, options={**self.store.run(run_id)["options"], **options})
        run_id = resume or run_id or new_id()
        if not resume and not self._run_exists(run_id):
            self.store.add_run(run_id, obs.target_id, "knobs", tuning.optimizer, options)
        self.say(f"tuning run {run_id}: {tuning.optimizer}, {tuning.trials} trials over {knob_space.dim} knobs, "
                 f"{len(bound)} statements, {len(seeds)} seed(s)")
        with factory.clone(connector, sample_percent=sample_percent, say=self.say) as shadow:
            trials = TrialRunner(shadow, ReplayRunner(bound, repeats=repeats, objective=tuning.objective), knob_space,
                                 tuning.timeout_factor, tuning.min_timeout_s, self.say)
            run = TuningRun(self.store, run_id, obs.target_id, trials, opt, tuning, seeds, self.say)
            if resume:
                run.resume_from_store()
            try:
                run.execute()
            except BaseException:
                if not managed:
                    self.store.update_run(run_id, state="interrupted")
                raise
            trials.reset()
            result = self._recommend_best(run, obs, connector, catalog, shadow, bound, validation)
        skipped_pairs = tuple((s.sql, w) for s, w in skipped)
        return dataclasses.replace(result, skipped=skipped_pairs)

    def _recommend_best(self, run: TuningRun, obs: Observation, connector: Connector, catalog, shadow,
                        bound, validation) -> TuneResult:
        """Validate the best configuration against the current one; when it is rejected (a statement regressed,
        or the gain is not significant), try the next candidates (the best seed, then the runner-up), up to
        ``MAX_VALIDATIONS`` in all. Every attempt is stored as a recommendation with its evidence; the first one
        accepted is the result."""
        findings = list(_findings(run))
        base = run.baseline()
        candidates = _candidates(run)
        summary = {"trials": len(run.records), "failed": sum(r.result.status != "measured" for r in run.records),
                   "best": candidates[0].config if candidates else None,
                   "best_objective": candidates[0].result.objective if candidates else None,
                   "baseline_objective": base.result.objective if base else None, "findings": findings}
        if base is None or not candidates:
            self.store.update_run(run.run_id, state="done", result=summary)
            return TuneResult(None, obs, {}, (), "no configuration beat the current one", run.run_id,
                              tuple(run.records), tuple(findings))
        first: tuple[Recommendation, str] | None = None
        for i, cand in enumerate(candidates if validation is not None else candidates[:1]):
            plan = connector.plan_changes(run.space.changes(cand.config), catalog)
            rec = Recommendation(new_id(), obs.target_id, "knobs", run.optimizer.name, plan.changes, plan.apply_sql,
                                 plan.revert_sql, plan.needs_restart, "proposed", time.time(), run_id=run.run_id)
            if validation is None:
                self.store.add_recommendation(rec)
                self.store.update_run(run.run_id, state="done", result={**summary, "recommendation": rec.id})
                return TuneResult(rec, obs, {}, (), "not validated (validation was switched off)", run.run_id,
                                  tuple(run.records), tuple(findings))
            self.say(f"validating candidate {i + 1} (trial {cand.number + 1}, {cand.source}, {len(plan.changes)} "
                     f"changes) against the current configuration: {validation.rounds} interleaved rounds")
            try:
                evidence = validate(shadow, bound, plan.changes, validation, say=self.say)
            except AdvisorError as e:
                self.store.add_recommendation(rec)
                rec = self.store.transition(rec.id, "rejected", "advisor", f"validation failed: {e}")
                why = f"validation failed: {e}"
            else:
                rec = dataclasses.replace(rec, evidence=evidence)
                self.store.add_recommendation(rec)
                why = _verdict_note(evidence)
                rec = self.store.transition(rec.id, "validated" if evidence.accepted else "rejected", "advisor", why)
                if evidence.accepted:
                    if first is not None:
                        findings.append(f"{i} better-scoring candidate(s) were rejected on validation "
                                        f"(first: {first[1]}); recommending trial {cand.number + 1} ({cand.source})")
                    self.store.update_run(run.run_id, state="done", result={**summary, "recommendation": rec.id})
                    return TuneResult(rec, obs, {}, (), why, run.run_id, tuple(run.records), tuple(findings))
            self.say(f"candidate {i + 1} rejected: {why}")
            if first is None:
                first = (rec, why)
        assert first is not None
        self.store.update_run(run.run_id, state="done", result={**summary, "recommendation": first[0].id})
        return TuneResult(first[0], obs, {}, (), first[1], run.run_id, tuple(run.records), tuple(findings))

    @staticmethod
    def _top(statements: Sequence[Statement], n: int) -> tuple[Statement, ...]:
        return tuple(sorted(statements, key=lambda s: s.total_ms, reverse=True)[:n])

    def tune_indexes(self, dsn: str, optimizer: str = "ia2", *, budget_mb: float, name: str | None = None,
                     validation: ValidationOptions | None = ValidationOptions(), sample_percent: float | None = None,
                     max_statements: int = 30, device: str = "auto", episodes: int = 300, seed: int = 0,
                     retrain: bool = False, max_width: int = 3, samples: int = 48,
                     run_id: str | None = None) -> IndexTuneResult:
        """Recommend indexes for the observed workload within ``budget_mb`` MiB: candidates and what-if costs on a
        shadow (HypoPG), the optimizer's choice, then every index built for real on the shadow and kept only if
        it measurably helps a statement it serves and makes none of them regress (``advisor.tuning.index_validation``)."""
        if budget_mb <= 0:
            raise AdvisorError(f"the index budget must be positive, got {budget_mb:g} MB")
        registry.create("indexes", optimizer)  # an unknown name fails before anything is touched
        obs = self._observe_workload(dsn, name)
        connector = factory.connector(dsn)
        bound, skipped = bind_workload(connector, Workload(self._top(obs.workload.statements, max_statements)))
        for st, why in skipped:
            self.say(f"cannot replay a statement ({why}); left out")
        if not bound:
            raise AdvisorError("nothing to tune: no statement of the workload could be bound to values")
        budget = int(budget_mb * 1024 * 1024)
        data_bytes = sum(t.total_bytes for t in obs.snapshot.tables)
        with factory.clone(connector, sample_percent=sample_percent, say=self.say) as shadow:
            unparsed: list[tuple[str, str]] = []
            problem, session = build_problem(shadow.connector, obs.snapshot, bound, budget, max_width=max_width,
                                             skipped=unparsed)
            with session:
                for qid, why in unparsed:
                    self.say(f"statement {qid}: {why}; left out of index selection")
                self.say(f"{len(problem.candidates)} candidate indexes from {len(problem.queries)} statements; "
                         f"budget {budget_mb:g} MB")
                opt, training = self._index_optimizer(optimizer, obs.target_id, problem, data_bytes, device,
                                                      episodes, seed, retrain, samples)
                started = time.perf_counter()
                chosen = opt.choose(problem)
                selection_s = time.perf_counter() - started
                base_cost, cost = problem.cost(), problem.cost(chosen)
                estimated = {ix: problem.whatif.size(ix) for ix in chosen}
                whatif = {"relative_cost": cost / base_cost if base_cost else 1.0, "cost_before": base_cost,
                          "cost_after": cost, "estimated_bytes": sum(estimated.values()), "budget_bytes": budget,
                          "candidates": len(problem.candidates), "selection_s": selection_s,
                          **problem.whatif.counters()}
            self.say(f"{optimizer} chose {len(chosen)} index(es), what-if relative cost {whatif['relative_cost']:.3f}")
            existing = [i.name for i in obs.snapshot.indexes if not i.is_primary and not i.is_unique and i.scans == 0]
            if not chosen:
                return IndexTuneResult(None, obs, (), None, whatif, training, tuple(unparsed),
                                       f"{optimizer}: no index is worth its space within the budget")
            if validation is None:
                plan = connector.plan_changes(chosen)
                rec = Recommendation(new_id(), obs.target_id, "indexes", optimizer, plan.changes, plan.apply_sql,
                                     plan.revert_sql, False, "proposed", time.time(),
                                     details=_index_details(connector, chosen, estimated, None, whatif, training),
                                     run_id=run_id)
                self.store.add_recommendation(rec)
                return IndexTuneResult(rec, obs, tuple(chosen), None, whatif, training, tuple(unparsed),
                                       "not validated (validation was switched off)")
            checked = validate_indexes(shadow, bound, chosen, estimated, existing, validation, say=self.say)
        return self._index_recommendation(obs, connector, optimizer, chosen, estimated, checked, whatif, training,
                                          tuple(unparsed), run_id)

    def _index_optimizer(self, optimizer: str, target_id: str, problem, data_bytes: int, device: str,
                         episodes: int, seed: int, retrain: bool, samples: int = 48):
        """The plugin; for IA2, the target's trained model for this candidate set (trained and saved first when
        there is none, or when ``retrain``)."""
        if optimizer != "ia2":
            return registry.create("indexes", optimizer, seed=seed), None
        from optimizers.indexes.ia2 import TD3Agent, TD3Options, action_space_key, mix_sampler

        path = self._model_dir(target_id) / f"ia2-{action_space_key(problem.candidates)}.pt"
        if path.exists() and not retrain:
            agent = TD3Agent.load(path, problem.candidates, device)
            self.say(f"IA2: using the model trained for this target ({path})")
            info = {**agent.stats.to_dict(), "reused": True, "model": str(path)}
            return registry.create("indexes", "ia2", seed=seed, agent=agent, samples=samples), info
        lo = max(1, min(problem.budget_bytes // 2, int(0.05 * data_bytes)))
        hi = max(problem.budget_bytes * 2, int(0.5 * data_bytes), lo + 1)
        agent = TD3Agent(problem.candidates, TD3Options(episodes=episodes), device, seed)
        self.say(f"IA2: training on {len(problem.queries)} statement templates, {episodes} episodes on "
                 f"{agent.device}")
        agent.train(mix_sampler(problem, [q.queryid for q in problem.queries], (lo, hi)), say=self.say)
        agent.save(path, {"target_id": target_id})
        info = {**agent.stats.to_dict(), "reused": False, "model": str(path)}
        return registry.create("indexes", "ia2", seed=seed, agent=agent, samples=samples), info

    def _model_dir(self, target_id: str) -> Path:
        root = Path(tempfile.gettempdir()) / "db-advisor-models" if self.store.path == ":memory:" \
            else Path(self.store.path).parent / "models"
        return root / target_id

    def _index_recommendation(self, obs: Observation, connector: Connector, optimizer: str, chosen,
                              estimated, checked, whatif, training, unparsed, run_id=None) -> IndexTuneResult:
        details = _index_details(connector, chosen, estimated, checked, whatif, training)
        if not checked.kept:
            rec = Recommendation(new_id(), obs.target_id, "indexes", optimizer, tuple(chosen), (), (), False,
                                 "proposed", time.time(), details=details, run_id=run_id)
            self.store.add_recommendation(rec)
            why = "every chosen index was dropped on validation: " + "; ".join(
                f"{connector.index_name(v.index)}: {v.reason}" for v in checked.verdicts)
            rec = self.store.transition(rec.id, "rejected", "advisor", why)
            return IndexTuneResult(rec, obs, tuple(chosen), checked, whatif, training, unparsed, why)
        plan = connector.plan_changes(checked.kept)
        rec = Recommendation(new_id(), obs.target_id, "indexes", optimizer, plan.changes, plan.apply_sql,
                             plan.revert_sql, False, "proposed", time.time(), evidence=checked.evidence,
                             details=details, run_id=run_id)
        self.store.add_recommendation(rec)
        why = _verdict_note(checked.evidence)
        if checked.unexplained:
            why += (f"; slower but unaffected by the indexes (their plans use none of them), so noise: "
                    f"{', '.join(checked.unexplained)}")
        rec = self.store.transition(rec.id, "validated" if checked.accepted else "rejected", "advisor", why)
        return IndexTuneResult(rec, obs, tuple(chosen), checked, whatif, training, unparsed, why)

    def _run_exists(self, run_id: str) -> bool:
        return bool(self.store.runs(run_id=run_id))


MAX_VALIDATIONS = 3


def _index_details(connector: Connector, chosen, estimated, checked, whatif, training) -> dict:
    verdicts = {v.index: v for v in checked.verdicts} if checked else {}
    indexes = []
    for ix in chosen:
        v = verdicts.get(ix)
        indexes.append({"index": connector.index_name(ix), "table": f"{ix.schema}.{ix.table}",
                        "columns": list(ix.columns),
                        "estimated_bytes": estimated.get(ix), "built_bytes": v.built_bytes if v else None,
                        "statements": list(v.serves) if v else [], "kept": v.kept if v else None,
                        "reason": v.reason if v else "not validated"})
    return {"indexes": indexes, "whatif": whatif, "training": training,
            "unused_existing_indexes": list(checked.unused_existing) if checked else [],
            "unexplained_slowdowns": list(checked.unexplained) if checked else []}


def _candidates(run: TuningRun) -> list:
    """Configurations worth validating, best first: the best trial, the best seed (few, explained changes), the
    runner-up; only those that measured better than the baseline and change something."""
    base = run.baseline()
    ok = sorted((r for r in run.records if r.result.status == "measured" and r.result.objective is not None
                 and r.source != "default" and run.space.changes(r.config)), key=lambda r: r.result.objective)
    if base is not None:
        ok = [r for r in ok if r.result.objective < base.result.objective]
    picks = ok[:1] + [r for r in ok if r.source.startswith("seed:")][:1] + ok[1:2]
    out, seen = [], set()
    for r in picks:
        key = tuple(sorted(r.config.items()))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out[:MAX_VALIDATIONS]


def _findings(run: TuningRun):
    """What a DBA should hear besides the winner: how the seeds (the rules a DBA would apply) compare with the
    current configuration, and how many trials failed and why."""
    base = run.baseline()
    for r in run.records:
        if base is None or not r.source.startswith("seed:"):
            continue
        if r.result.objective is None:
            yield f"{r.source[5:]} configuration failed: {r.result.reason}"
            continue
        change = r.result.objective / base.result.objective - 1.0
        verdict = "worse than" if change > 0.05 else "better than" if change < -0.05 else "about the same as"
        yield f"{r.source[5:]} configuration is {verdict} the current one ({change:+.0%} objective, one pass)"
    failed = [r for r in run.records if r.result.status != "measured"]
    if failed:
        yield f"{len(failed)} trial(s) failed or were infeasible; first: {failed[0].result.reason}"


def _verdict_note(evidence) -> str:
    lo, hi = evidence.gain_ci
    head = f"measured gain {evidence.gain:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}, {evidence.rounds} rounds)"
    if evidence.regressions:
        return head + f"; {len(evidence.regressions)} statement(s) regressed by more than " \
                      f"{evidence.regression_threshold:.0%}"
    if not evidence.significant:
        return head + f"; the interval does not clear the minimum gain of {evidence.min_gain:.0%}"
    return head
