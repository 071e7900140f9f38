"""AdvisorService: the one API that the CLI, REST routes, web pages and scheduled jobs call.

Each method parses nothing and prints nothing: it takes plain values, does one job, records it in the store
and returns domain objects. Production is only read here; applying to it is a separate, approved step.
"""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.auth import ADMIN, ROLES, Principal, hash_secret, new_secret
from advisor.domain import Hardware, IndexChange, Recommendation, Snapshot, Statement, Workload
from advisor.index_validation import IndexValidation, validate_indexes
from advisor.indexing import build_problem
from advisor.errors import AdvisorError, Conflict, Unauthorized
from advisor.production import apply_recommendation, rollback_recommendation
from advisor.progress import Say, silent
from advisor.runs import ACTIVE, ProgressLog, RunCancelled, RunPlan
from advisor.scheduling import AUTO_APPLY, check_cron, next_fire, run_scheduled
from advisor.secrets import vault_for
from advisor.settings import get_settings
from advisor.shadow import ValidationOptions, create_shadow, validate
from advisor.store import Store, new_id
from connectors.postgres import PostgresConnector
from connectors.postgres.changes import index_name
from connectors.postgres.connection import parse_dsn, redact
from optimizers import registry
from optimizers.base import TuningContext
from optimizers.knobs.features import extract
from optimizers.knobs.rules import classify_workload
from optimizers.knobs.search import SearchOptimizer
from optimizers.knobs.seeding import seeds_for
from optimizers.knobs.space import KnobSpace, SpaceOptions
from advisor.tuning import ReplayRunner, TrialRunner, TuningOptions, TuningRun
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


def target_name(dsn: str) -> str:
    p = parse_dsn(dsn)
    return f"{p.get('host', 'localhost')}:{p.get('port', '5432')}/{p.get('dbname', p.get('user', 'postgres'))}"


class AdvisorService:
    """``executor`` (a ``runs.RunExecutor``) runs started runs in the background; without one (the CLI),
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
        connector = PostgresConnector(dsn)
        self.say(f"observing {connector.display_name}")
        before = connector.observe() if interval_s > 0 else None
        if before is not None:
            self.say(f"waiting {interval_s:g}s for the workload")
            time.sleep(interval_s)
        snap = connector.observe()
        workload = workload_delta(snap, before)
        target_id = self.store.upsert_target(name or target_name(dsn), connector.engine, redact(dsn))
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
        from advisor.hardware import detect

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
        connector = PostgresConnector(dsn)
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
            with create_shadow(connector, sample_percent=sample_percent, say=self.say) as shadow:
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
        from advisor.hardware import detect

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
        connector = PostgresConnector(dsn)
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
        with create_shadow(connector, sample_percent=sample_percent, say=self.say) as shadow:
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

    def _recommend_best(self, run: TuningRun, obs: Observation, connector: PostgresConnector, catalog, shadow,
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
        it measurably helps a statement it serves and makes none of them regress (``advisor.index_validation``)."""
        if budget_mb <= 0:
            raise AdvisorError(f"the index budget must be positive, got {budget_mb:g} MB")
        registry.create("indexes", optimizer)  # an unknown name fails before anything is touched
        obs = self._observe_workload(dsn, name)
        connector = PostgresConnector(dsn)
        bound, skipped = bind_workload(connector, Workload(self._top(obs.workload.statements, max_statements)))
        for st, why in skipped:
            self.say(f"cannot replay a statement ({why}); left out")
        if not bound:
            raise AdvisorError("nothing to tune: no statement of the workload could be bound to values")
        budget = int(budget_mb * 1024 * 1024)
        data_bytes = sum(t.total_bytes for t in obs.snapshot.tables)
        with create_shadow(connector, sample_percent=sample_percent, say=self.say) as shadow:
            with shadow.connector.connect() as conn:
                unparsed: list[tuple[str, str]] = []
                problem, session = build_problem(conn, obs.snapshot, bound, budget, max_width=max_width,
                                                 skipped=unparsed)
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
                session.close()
            self.say(f"{optimizer} chose {len(chosen)} index(es), what-if relative cost {whatif['relative_cost']:.3f}")
            existing = [i.name for i in obs.snapshot.indexes if not i.is_primary and not i.is_unique and i.scans == 0]
            if not chosen:
                return IndexTuneResult(None, obs, (), None, whatif, training, tuple(unparsed),
                                       f"{optimizer}: no index is worth its space within the budget")
            if validation is None:
                plan = connector.plan_changes(chosen)
                rec = Recommendation(new_id(), obs.target_id, "indexes", optimizer, plan.changes, plan.apply_sql,
                                     plan.revert_sql, False, "proposed", time.time(),
                                     details=_index_details(chosen, estimated, None, whatif, training), run_id=run_id)
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

    def _index_recommendation(self, obs: Observation, connector: PostgresConnector, optimizer: str, chosen,
                              estimated, checked, whatif, training, unparsed, run_id=None) -> IndexTuneResult:
        details = _index_details(chosen, estimated, checked, whatif, training)
        if not checked.kept:
            rec = Recommendation(new_id(), obs.target_id, "indexes", optimizer, tuple(chosen), (), (), False,
                                 "proposed", time.time(), details=details, run_id=run_id)
            self.store.add_recommendation(rec)
            why = "every chosen index was dropped on validation: " + "; ".join(
                f"{index_name(v.index)}: {v.reason}" for v in checked.verdicts)
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

    # --- targets --------------------------------------------------------------------------------------------

    def add_target(self, name: str, dsn: str, who: Principal = ADMIN) -> dict:
        """Register a database: check that it can be observed, keep its DSN encrypted, take a first snapshot."""
        who.require("operator")
        if not name.strip():
            raise AdvisorError("a target needs a name")
        connector = PostgresConnector(dsn)
        connector.observe()  # reachable, with pg_stat_statements: fails here with a clear message otherwise
        target_id = self.store.upsert_target(name, connector.engine, redact(dsn), vault_for(self.store.path).encrypt(dsn))
        self.store.audit(who.actor, "register_target", target_id, {"name": name, "dsn": redact(dsn)})
        self.observe(dsn, name)
        return self.store.target(target_id)

    def targets(self) -> list[dict]:
        return self.store.targets()

    def target(self, ref: str) -> dict:
        return self.store.target(ref)

    def remove_target(self, ref: str, who: Principal = ADMIN) -> None:
        who.require("operator")
        target = self.store.target(ref)
        if self.store.runs(target["id"], state="running") or self.store.runs(target["id"], state="queued"):
            raise Conflict(f"target {target['name']} has a tuning run going on; wait for it to end")
        self.store.remove_target(target["id"])
        self.store.audit(who.actor, "remove_target", target["id"], {"name": target["name"]})

    def _dsn(self, target: dict) -> str:
        creds = self.store.target_credentials(target["id"])
        if creds is None:
            raise AdvisorError(f"target {target['name']} was only observed with a DSN given on the command line; "
                               "register it (advisor targets add) so that its credentials are stored")
        return vault_for(self.store.path).decrypt(creds)

    def observe_target(self, ref: str, who: Principal = ADMIN) -> Observation:
        who.require("operator")
        target = self.store.target(ref)
        return self.observe(self._dsn(target), target["name"])

    def snapshots(self, ref: str, limit: int | None = None, offset: int = 0) -> list[dict]:
        """The target's snapshots, newest first."""
        return self.store.snapshots(self.store.target(ref)["id"], limit=limit, offset=offset, newest_first=True)

    def count_snapshots(self, ref: str) -> int:
        return self.store.count_snapshots(self.store.target(ref)["id"])

    # --- tuning runs ----------------------------------------------------------------------------------------

    def start_run(self, ref: str, plan: RunPlan, who: Principal = ADMIN, *, schedule_id: str | None = None,
                  wait: bool | None = None) -> dict:
        """Queue a tuning run of a registered target; it runs on the executor (or here when there is none, or
        ``wait``). ``Conflict`` when the target already has a run going on."""
        who.require("operator")
        plan = plan.checked()
        target = self.store.target(ref)
        self._dsn(target)  # registered, and its credentials decrypt
        with self.store.lock:
            active = [r for st in ACTIVE for r in self.store.runs(target["id"], state=st)]
            if active:
                raise Conflict(f"target {target['name']} already has tuning run {active[0]['id']} "
                               f"({active[0]['state']}); runs of one target never overlap")
            run_id = new_id()
            self.store.add_run(run_id, target["id"], plan.kind, plan.optimizer, {"plan": plan.to_dict()},
                               state="queued", started_by=who.actor, schedule_id=schedule_id)
        self.store.audit(who.actor, "start_run", run_id, {"target": target["name"], "plan": plan.to_dict()})
        if self.executor is not None and not wait:
            self.executor.submit(run_id)
        else:
            self.execute_run(run_id)
        return self.store.run(run_id)

    def execute_run(self, run_id: str) -> dict:
        """Do a queued run: observe, tune, validate, store the recommendation. Failures are recorded on the run
        (state failed, with the message); the run's row says how it ended."""
        run = self.store.run(run_id)
        if run["state"] != "queued":
            raise Conflict(f"tuning run {run_id} is {run['state']}, not queued")
        plan = RunPlan.from_dict(run["options"]["plan"])
        cancelled = (lambda: self.executor.cancelled(run_id)) if self.executor is not None else (lambda: None)
        progress = ProgressLog(self.store, run_id, self.say, cancelled=cancelled)
        self.store.update_run(run_id, state="running")
        worker = AdvisorService(self.store, progress)
        try:
            target = self.store.target(run["target_id"])
            result = worker._tune_plan(self._dsn(target), target["name"], plan, run_id)
        except Exception as e:  # noqa: BLE001 - every failure ends the run with its message, never silently
            message = str(e) if isinstance(e, (AdvisorError, RunCancelled)) \
                else f"internal error ({type(e).__name__}: {e})"
            progress.cancelled = lambda: None
            progress(f"{'cancelled' if isinstance(e, RunCancelled) else 'failed'}: {message}")
            progress.flush()
            self.store.update_run(run_id, state="cancelled" if isinstance(e, RunCancelled) else "failed",
                                  error=message)
            return self.store.run(run_id)
        rec = result.recommendation
        progress(f"done: {result.message}")
        progress.flush()
        prior = self.store.run(run_id)["result"] or {}
        self.store.update_run(run_id, state="done", result={**prior, "recommendation": rec.id if rec else None,
                                                             "state": rec.state if rec else None,
                                                             "message": result.message})
        return self.store.run(run_id)

    def _tune_plan(self, dsn: str, name: str, plan: RunPlan, run_id: str):
        validation = ValidationOptions(rounds=plan.rounds) if plan.validate else None
        if plan.kind == "indexes":
            return self.tune_indexes(dsn, plan.optimizer, budget_mb=plan.budget_mb, name=name, validation=validation,
                                     sample_percent=plan.sample_percent, episodes=plan.episodes,
                                     samples=plan.samples, run_id=run_id, device=get_settings().device)
        from optimizers.knobs.llm import from_settings

        tuning = TuningOptions(optimizer=plan.optimizer, trials=plan.trials, seeds=plan.seeds,
                               use_seeds=plan.seeds > 0)
        return self.tune_knobs(dsn, plan.optimizer, name=name, validation=validation,
                               sample_percent=plan.sample_percent, tuning=tuning, llm=from_settings(get_settings()),
                               repeats=plan.repeats, run_id=run_id)

    def run(self, run_id: str) -> dict:
        return self.store.run(run_id)

    def cancel_run(self, run_id: str, who: Principal = ADMIN) -> dict:
        """Ask a queued or running run to stop (it stops at its next step and stops its shadow)."""
        who.require("operator")
        run = self.store.run(run_id)
        if run["state"] not in ACTIVE:
            raise Conflict(f"tuning run {run_id} is {run['state']}; only a queued or running run can be cancelled")
        if self.executor is None:
            raise Conflict(f"tuning run {run_id} is not running in this process; stop the process running it")
        self.executor.cancel(run_id, f"cancelled by {who.actor}")
        self.store.audit(who.actor, "cancel_run", run_id, {})
        return run

    def runs(self, target: str | None = None, state: str | None = None, limit: int | None = None,
             offset: int = 0) -> list[dict]:
        target_id = self.store.target(target)["id"] if target else None
        return self.store.runs(target_id, state=state, limit=limit, offset=offset, newest_first=True)

    def count_runs(self, target: str | None = None, state: str | None = None) -> int:
        return self.store.count_runs(self.store.target(target)["id"] if target else None, state)

    def trials(self, run_id: str) -> list[dict]:
        self.store.run(run_id)
        return self.store.trials(run_id)

    def recover_runs(self) -> list[str]:
        """Mark runs left queued or running by a process that stopped as interrupted (a server start calls it)."""
        stale = [r["id"] for st in ACTIVE for r in self.store.runs(state=st)]
        for run_id in stale:
            self.store.update_run(run_id, state="interrupted", error="the server stopped while this run was going on")
        return stale

    # --- recommendations ------------------------------------------------------------------------------------

    def recommendations(self, state: str | None = None, *, kind: str | None = None, target: str | None = None,
                        run_id: str | None = None, limit: int | None = None, offset: int = 0) -> list[Recommendation]:
        target_id = self.store.target(target)["id"] if target else None
        return self.store.recommendations(state, target_id, kind=kind, run_id=run_id, limit=limit, offset=offset)

    def recommendation_summaries(self, state: str | None = None, *, kind: str | None = None,
                                 target: str | None = None, run_id: str | None = None, limit: int | None = None,
                                 offset: int = 0) -> list[dict]:
        """Small rows for lists: measured gain with its interval and the optimizer's predicted gain (what-if
        cost reduction for indexes; best trial against the baseline trial for a knob search)."""
        target_id = self.store.target(target)["id"] if target else None
        rows = self.store.recommendation_summaries(state, target_id, kind=kind, run_id=run_id, limit=limit,
                                                   offset=offset)
        for r in rows:
            rc, best, base = r.pop("relative_cost"), r.pop("best_objective"), r.pop("baseline_objective")
            r["predicted_gain"] = 1.0 - rc if rc is not None else 1.0 - best / base if best is not None and base \
                else None
            low, high = r.pop("gain_low"), r.pop("gain_high")
            r["gain_ci"] = [low, high] if r["gain"] is not None else None
        return rows

    def count_recommendations(self, state: str | None = None, *, kind: str | None = None,
                              target: str | None = None, run_id: str | None = None) -> int:
        target_id = self.store.target(target)["id"] if target else None
        return self.store.count_recommendations(state, target_id, kind, run_id)

    def recommendation(self, rec_id: str) -> Recommendation:
        return self.store.recommendation(rec_id)

    def approve(self, rec_id: str, who: Principal = ADMIN, note: str = "") -> Recommendation:
        who.require("operator")
        return self.store.transition(rec_id, "approved", who.actor, note or "approved", expect="validated")

    def reject(self, rec_id: str, who: Principal = ADMIN, note: str = "") -> Recommendation:
        who.require("operator")
        return self.store.transition(rec_id, "rejected", who.actor, note or "rejected by an operator")

    def _connector_for(self, rec: Recommendation) -> PostgresConnector:
        return PostgresConnector(self._dsn(self.store.target(rec.target_id)))

    def apply(self, rec_id: str, who: Principal = ADMIN) -> Recommendation:
        """Apply an approved, validated recommendation to its production target (see ``advisor.production``)."""
        who.require("operator")
        with self.store.lock:  # one apply or rollback at a time
            rec = self.store.recommendation(rec_id)
            return apply_recommendation(self.store, self._connector_for(rec), rec, who)

    def rollback(self, rec_id: str, who: Principal = ADMIN, why: str = "") -> Recommendation:
        who.require("operator")
        with self.store.lock:
            rec = self.store.recommendation(rec_id)
            return rollback_recommendation(self.store, self._connector_for(rec), rec, who, why)

    def audit_log(self, subject: str | None = None, limit: int | None = None, offset: int = 0) -> list[dict]:
        return self.store.audit_log(subject, limit, offset)

    # --- tokens and web sessions ----------------------------------------------------------------------------

    def create_token(self, name: str, role: str, who: Principal = ADMIN) -> tuple[dict, str]:
        """A new API token: its record and its secret, which is shown only now."""
        who.require("operator")
        if role not in ROLES:
            raise AdvisorError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        if not name.strip():
            raise AdvisorError("a token needs a name")
        secret = new_secret()
        token_id = self.store.add_token(name, role, hash_secret(secret), who.actor)
        self.store.audit(who.actor, "create_token", token_id, {"name": name, "role": role})
        return self.store.token(token_id), secret

    def revoke_token(self, ref: str, who: Principal = ADMIN) -> dict:
        who.require("operator")
        token = self.store.token(ref)
        self.store.revoke_token(token["id"])
        self.store.audit(who.actor, "revoke_token", token["id"], {"name": token["name"]})
        return self.store.token(token["id"])

    def tokens(self) -> list[dict]:
        return self.store.tokens()

    def authenticate(self, secret: str | None) -> Principal:
        if not secret:
            raise Unauthorized("no API token: send 'Authorization: Bearer <token>'")
        key, version = hash_secret(secret), self.store.version  # revoking a token bumps the version
        cached = self._principals.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        token = self.store.token_by_hash(key)
        if token is None:
            raise Unauthorized("unknown API token")
        if token["revoked_at"] is not None:
            raise Unauthorized(f"the API token {token['name']!r} was revoked")
        who = Principal(token["name"], token["role"], token["id"])
        if len(self._principals) > 1000:
            self._principals.clear()
        self._principals[key] = (version, who)
        return who

    def login(self, secret: str) -> tuple[str, str]:
        """A web session for a valid token: (session id for the cookie, CSRF token for forms)."""
        who = self.authenticate(secret)
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
        self.store.add_session(hash_secret(session_id), who.token_id, csrf, get_settings().session_ttl_s)
        self.store.audit(who.actor, "login", who.token_id or "", {})
        return session_id, csrf

    def session(self, session_id: str | None) -> tuple[Principal, str]:
        """The principal and CSRF token of a live web session (its token still valid)."""
        found = self.store.session(hash_secret(session_id)) if session_id else None
        if found is None:
            raise Unauthorized("not logged in, or the session expired")
        token = self.store.token(found["token_id"])
        if token["revoked_at"] is not None:
            raise Unauthorized(f"the API token {token['name']!r} was revoked")
        return Principal(token["name"], token["role"], token["id"]), found["csrf"]

    def logout(self, session_id: str) -> None:
        self.store.drop_session(hash_secret(session_id))

    # --- schedules ------------------------------------------------------------------------------------------

    def add_schedule(self, ref: str, cron: str, plans: Sequence[RunPlan], who: Principal = ADMIN, *,
                     timezone: str = "UTC", auto_apply: str = "none", auto_apply_knobs: Sequence[str] = (),
                     max_regression: float = 0.10) -> dict:
        """Tune ``ref`` by itself on a cron schedule (5 fields, e.g. ``0 2 * * *``): observe, run each plan,
        leave recommendations for approval; with ``auto_apply="reload_knobs"``, apply a validated knob
        recommendation whose changes all take effect on reload (and, when given, are all in
        ``auto_apply_knobs``), and roll it back at the next run if statements got ``max_regression`` slower."""
        who.require("operator")
        target = self.store.target(ref)
        self._dsn(target)
        check_cron(cron, timezone)
        if auto_apply not in AUTO_APPLY:
            raise AdvisorError(f"unknown auto_apply {auto_apply!r}; expected one of {', '.join(AUTO_APPLY)}")
        if not plans:
            raise AdvisorError("a schedule needs at least one run (knobs or indexes)")
        if not 0 < max_regression < 10:
            raise AdvisorError(f"max_regression must be a fraction in (0, 10), got {max_regression:g}")
        doc = {"runs": [p.checked().to_dict() for p in plans], "auto_apply": auto_apply,
               "auto_apply_knobs": list(auto_apply_knobs), "max_regression": max_regression}
        schedule_id = self.store.add_schedule(target["id"], cron, timezone, doc, who.actor)
        self.store.audit(who.actor, "add_schedule", schedule_id, {"target": target["name"], "cron": cron, **doc})
        if self.scheduler is not None:
            self.scheduler.sync()
        return self.schedule(schedule_id)

    scheduler = None  # an advisor.scheduling.Scheduler when the server runs one

    def schedules(self, target: str | None = None) -> list[dict]:
        rows = self.store.schedules(self.store.target(target)["id"] if target else None)
        return [{**s, "next_fire_at": next_fire(s["cron"], s["timezone"])} for s in rows]

    def schedule(self, schedule_id: str) -> dict:
        s = self.store.schedule(schedule_id)
        return {**s, "next_fire_at": next_fire(s["cron"], s["timezone"])}

    def remove_schedule(self, schedule_id: str, who: Principal = ADMIN) -> None:
        who.require("operator")
        self.store.remove_schedule(schedule_id)
        self.store.audit(who.actor, "remove_schedule", schedule_id, {})
        if self.scheduler is not None:
            self.scheduler.sync()

    def fire_schedule(self, schedule_id: str, who: Principal = ADMIN) -> None:
        """Run a schedule's job now: in the background on the server's scheduler, else here."""
        who.require("operator")
        self.store.schedule(schedule_id)
        self.store.audit(who.actor, "fire_schedule", schedule_id, {})
        if self.scheduler is not None:
            self.scheduler.fire_now(schedule_id)
        else:
            self.run_schedule(schedule_id)

    def run_schedule(self, schedule_id: str, fired_at: float | None = None) -> list[dict]:
        """What a schedule's job does when it fires; every run's outcome is on its row (schedule_id set)."""
        return run_scheduled(self, self.store.schedule(schedule_id), fired_at or time.time())


MAX_VALIDATIONS = 3


def _index_details(chosen, estimated, checked, whatif, training) -> dict:
    verdicts = {v.index: v for v in checked.verdicts} if checked else {}
    indexes = []
    for ix in chosen:
        v = verdicts.get(ix)
        indexes.append({"index": index_name(ix), "table": f"{ix.schema}.{ix.table}", "columns": list(ix.columns),
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
