"""``advisor bench knobs``: every knob optimizer with the same trial budget on real PostgreSQL sandboxes, then
the same optimizers over many seeds on a surrogate fitted to real trials (``advisor.bench.knobs.surrogate``).

Two modes:

- ``real`` (the default): per workload, one sandbox server holds the data (fsync on, as in production; the data
  fits in memory) and is the shadow every run tunes, one run after another, each from PostgreSQL's defaults.
  Reported: G*, the best configuration of all runs' trials pooled, re-measured against the defaults with
  interleaved passes (gain and 95% interval); per optimizer its best objective and gain over the defaults (one
  pass per trial), its best gain among trials that slowed no statement by 10% (``feasible``, from the trial's
  own pass), the share of G* reached, trials to 95% of its own best, wall time, failed trials; HiBO's
  recommendation (its best trial that slowed no statement, else its best) validated as the pipeline validates
  (ABBA rounds, the per-statement guard): gain, interval, verdict and the statements that regressed. The
  surrogate is then fitted to the pooled trials.
- ``surrogate``: per workload, a space-filling design of real trials (the current settings, the rule seeds,
  ``design`` Sobol points), or a design saved by an earlier run (``design_from``), and only the surrogate part.

Generated workloads (``gen-<schema>.s<seed>``, ``multi-<schema>.s<seed>``: ``advisor.bench.knobs.generated``) run
every optimizer with ``opt_seeds`` seeds each (the same workload, the same budget), on every engine of
``engine`` (comma-separated); each HiBO seeded run's recommendation (every run's with ``validate="every"``) is
reduced by the pipeline's ablation to at most 5 knobs that carry its gain and validated, and the summary over
seeds and engines (``generated.summary``) says whether HiBO seeded is at least as good as SMAC3, GP-BO and TPE.

The surrogate part (labelled as such) runs each optimizer ``surrogate_seeds`` times at ``surrogate_trials``
trials: the mean share of the pooled best feasible gain reached, how many seeds reached 90% of it, and how many
runs' best-by-total trial would regress a statement (see ``surrogate``).

With ``time_limit_s``, no optimizer run, re-measure or validation starts past the limit: the run ends with the table,
JSON and plot of what it measured, and ``cut`` lists each workload, engine and step left out.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor.bench.knobs import generated
from advisor.bench.knobs.hog import cpu_hogs
from advisor.bench.knobs.plot import plot
from advisor.bench.knobs.runs import Validated, WorkloadReport, gain_over, observed, recommendation, summarize
from advisor.bench.knobs.surrogate import Observed, Surrogate, compare, measure_design
from advisor.core.domain import Hardware, Statement, Workload
from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from advisor.storage.store import Store, new_id, open_store
from advisor.tuning.knobs.ablation import AblationOptions, ablate
from advisor.tuning.knobs.pipeline import search
from advisor.tuning.knobs.retime import confirm_knob_regressions
from advisor.tuning.knobs.runners import PgbenchRunner, ReplayRunner
from advisor.tuning.knobs.trials import TrialRecord, TrialRunner, TuningOptions, compare_configs
from advisor.tuning.recommend import verdict_note
from advisor.tuning.validation import ValidationOptions, validate
from connectors import factory
from connectors.base import Shadow
from optimizers import registry
from optimizers.knobs.features import extract
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.seeding import rule_seeds
from optimizers.knobs.space import KnobSpace
from workloads.datasets import knob_suites, suites
from advisor.bench.knobs.workloads import BenchWorkload, Skipped, _check_client, bench_workload, pgbench_texts

# Runs per workload: name, optimizer, seeded. "hibo" is HiBO with rule seeds; the rest start from nothing.
RUNS = (("hibo", "hibo", True), ("hibo-unseeded", "hibo", False), ("smac", "smac", False), ("gp", "gp", False),
        ("tpe", "tpe", False), ("random", "random", False))
GENERATED_RUNS = (("hibo", "hibo", True), ("smac", "smac", False), ("gp", "gp", False), ("tpe", "tpe", False))
MIN_GAIN = ValidationOptions().min_gain  # the same bar a recommendation must clear
SAFETY_RUNS = (("hibo", "hibo", True), ("random", "random", False))
_CUT = object()  # a re-measure the time limit left out


@dataclass(frozen=True)
class BenchOptions:
    workloads: tuple[str, ...] = ("joins", "lookups", "planner", "tpch", "memory", "pgbench")
    trials: int | None = None  # overrides each workload's default
    repeats: int = 2
    validation_rounds: int = 4
    surrogate_seeds: int = 3
    surrogate_trials: int = 30
    seed: int = 0
    out_dir: str = "bench-results/knobs"
    mode: str = "real"  # real | surrogate
    design: int = 48  # Sobol points of a surrogate-mode design
    design_from: str | None = None  # a knobs.json whose designs the surrogate mode reuses (no data loaded)
    engine: str = factory.DEFAULT_ENGINE  # of the servers the workloads run on; comma-separated: each in turn
    opt_seeds: int = 1  # runs of each optimizer per workload, seeds seed, seed + 1, ...
    statements: int = 8  # drawn per generated workload
    scale: float | None = None  # of the generated workloads' data (None: generated.SCALES)
    validate: str = "hibo"  # whose recommendations are reduced and validated: hibo (seeded) | every | none
    cpu_hogs: int = 0  # busy processes beside the whole run (a loaded machine)
    remeasure_rounds: int = 3  # each run's pick against the defaults (0: not re-measured)
    time_limit_s: float | None = None  # past it, no run, re-measure or validation starts; what was cut is listed

    @property
    def engines(self) -> tuple[str, ...]:
        return tuple(e.strip() for e in self.engine.split(",") if e.strip())


class KnobBench:
    def __init__(self, options: BenchOptions = BenchOptions(), say: Say = silent, hardware: Hardware | None = None):
        self.options = options
        self.say = say
        self.hw = hardware or detect()
        self.out = Path(options.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.engine = options.engines[0] if options.engines else factory.DEFAULT_ENGINE
        self.deadline = time.time() + options.time_limit_s if options.time_limit_s else None
        self.cut: list[dict[str, str]] = []  # what the time limit left out: workload, engine, what

    def _late(self, name: str, what: str) -> bool:
        """Whether the time limit has passed; if so ``what`` of ``name`` is recorded as cut."""
        if self.deadline is None or time.time() < self.deadline:
            return False
        self.cut.append({"name": name, "engine": self.engine, "what": what})
        self.say(f"[{self.engine} {name}] time limit passed: {what} cut")
        return True

    def run(self) -> dict:
        started = time.time()
        if self.options.time_limit_s:
            self.deadline = started + self.options.time_limit_s
        for engine in self.options.engines:
            factory.supported(engine)
        wanted = [bench_workload(n) for n in self.options.workloads]
        reports: list[WorkloadReport] = []
        skipped: list[dict[str, str]] = []  # workloads this engine cannot run, with the fact that says why
        designs: dict[str, dict] = {}
        surrogate: dict = {"label": "SURROGATE: per-statement random forests fitted to real trials; not a database",
                           "seeds": self.options.surrogate_seeds, "trials": self.options.surrogate_trials,
                           "workloads": {}}
        with cpu_hogs(self.options.cpu_hogs) as load:
            if self.options.mode == "surrogate":
                saved = json.loads(Path(self.options.design_from).read_text())["designs"] \
                    if self.options.design_from else {}
                for wl in wanted:
                    if wl.kind == "replay" and wl.full:
                        designs[wl.name] = saved[wl.name] if wl.name in saved else self._design(wl)
                        if self.options.surrogate_seeds > 0:
                            surrogate["workloads"][wl.name] = self._on_surrogate(wl.name, designs[wl.name])
            else:
                store = open_store(self.out / "bench.duckdb")
                try:
                    for engine in self.options.engines:
                        self.engine = engine
                        self._on_servers(wanted, store, reports, skipped, designs, surrogate,
                                         lambda: self._document(started, reports, skipped, surrogate, designs, None))
                finally:
                    store.close()
        doc = self._document(started, reports, skipped, surrogate, designs, load)
        plot(reports, surrogate, self.out / "knobs-convergence.png")
        return doc

    def _document(self, started: float, reports: list, skipped: list, surrogate: dict, designs: dict,
                  load: dict | None) -> dict:
        """The run's document, written to ``knobs.json`` (after every workload too: a run cut short keeps what
        it measured, ``partial``)."""
        gen = generated.summary([asdict(r) for r in reports if generated.parse(r.name)])
        doc = {"mode": self.options.mode,
               "machine": {"cores": self.hw.cores, "memory_gb": round(self.hw.memory_bytes / 1024**3, 1),
                           "storage": self.hw.storage, "cpu_hogs": self.options.cpu_hogs, "load": load},
               "options": asdict(self.options), "wall_s": round(time.time() - started, 1),
               "workloads": [asdict(r) for r in reports], "skipped": skipped, "surrogate": surrogate,
               "generated": gen, "designs": designs, "partial": load is None, "cut": self.cut}
        (self.out / "knobs.json").write_text(json.dumps(doc, indent=2, default=str))
        return doc

    def _on_servers(self, wanted: list[BenchWorkload], store: Store, reports: list, skipped: list, designs: dict,
                    surrogate: dict, saved=lambda: None) -> None:
        """Every workload of ``wanted`` on a server of ``self.engine``: the generated ones of a schema on one."""
        groups: dict[str, list[BenchWorkload]] = {}
        for wl in wanted:
            g = generated.parse(wl.name)
            groups.setdefault(f"data-{g.schema}" if g else wl.name, []).append(wl)
        for key, wls in groups.items():
            if self.deadline is not None and time.time() >= self.deadline:
                for wl in wls:
                    self._late(wl.name, "the whole workload (not started)")
                continue
            self.say(f"[{self.engine} {key}] starting a server and loading the data")
            with factory.sandbox(self.engine, f"bench-{key}") as sandbox:
                dsn = None
                if key.startswith("data-"):
                    dsn = sandbox.create_database("bench")
                    try:
                        generated.load(factory.connector(dsn), key[5:], self.options.scale,
                                       say=lambda m, k=key: self.say(f"[{self.engine} {k}] {m}"))
                    except AdvisorError as e:  # a data set this engine cannot load (JOB's generator is PostgreSQL's)
                        self.say(f"[{self.engine} {key}] skipped: {e}")
                        skipped += [{"name": wl.name, "engine": self.engine, "reason": f"data not loaded: {e}"}
                                    for wl in wls]
                        continue
                for wl in wls:
                    if self._late(wl.name, "the whole workload (not started)"):
                        continue
                    try:
                        _check_client(Shadow.of(sandbox, sandbox.default_db).connector, wl)
                        report, design = self._workload(wl, store, sandbox, dsn)
                    except Skipped as e:
                        self.say(f"[{wl.name}] skipped: {e}")
                        skipped.append({"name": wl.name, "engine": self.engine, "reason": str(e)})
                        continue
                    reports.append(report)
                    saved()
                    if design is not None:
                        designs[wl.name] = design
                        surrogate["workloads"][wl.name] = self._on_surrogate(wl.name, design)

    # --- servers ----------------------------------------------------------------------------------------

    def _server(self, sandbox, wl: BenchWorkload, dsn: str | None = None):
        """``wl``'s data in ``sandbox`` (loaded here, or already in ``dsn``) and its statements: (shadow, runner,
        workload, space, features)."""
        dsn = dsn or sandbox.create_database("bench")
        if wl.kind == "pgbench":
            from workloads.datasets import pgbench

            pgbench.initialize(dsn, PgbenchRunner.scale)
            runner = PgbenchRunner()
            workload = Workload(tuple(Statement(f"pgbench.{i}", q, 1, 1.0) for i, q in enumerate(pgbench_texts())))
        else:
            if wl.kind == "generated":
                name = generated.parse(wl.name)
                bound = generated.statements(factory.connector(dsn), name, self.options.statements,
                                             say=lambda m: self.say(f"[{wl.name}] {m}"))
                if not bound:
                    raise Skipped("no statement could be drawn from this schema")
                self.say(f"[{wl.name}] {len(bound)} statements drawn")
            else:
                suite = knob_suites.get(wl.name)
                suites.prepare(factory.connector(dsn), suite)
                bound = suite.statements(self.options.seed, factory.connector(dsn).dialect)
            runner = ReplayRunner(bound, repeats=self.options.repeats)
            workload = Workload(tuple(Statement(b.queryid, b.sql, 1, 1.0) for b in runner.statements))
        shadow = Shadow.of(sandbox, "bench")
        space = KnobSpace.build(shadow.connector.knob_catalog(), self.hw, shadow.connector.knob_profile())
        data_bytes = shadow.connector.bench().database_bytes()
        features = extract(workload, data_bytes, "oltp" if wl.kind == "pgbench" else "dw",
                           dialect=shadow.connector.dialect)
        return shadow, runner, workload, space, features

    def _design(self, wl: BenchWorkload) -> dict:
        """A surrogate-mode design measured on a real server, in the form ``knobs.json`` keeps it."""
        self.say(f"[{wl.name}] starting a server and loading the data")
        with factory.sandbox(self.engine, f"bench-{wl.name}") as sandbox:
            shadow, runner, workload, space, features = self._server(sandbox, wl)
            seeds, _ = rule_seeds(space, features)
            trials = TrialRunner(shadow, runner, space, say=silent)
            points = measure_design(trials, self.options.design, [s.config for s in seeds], self.options.seed,
                                    say=lambda m: self.say(f"[{wl.name}] {m}"))
        return self._design_doc(runner, features.kind, seeds, points)

    def _design_doc(self, runner: ReplayRunner, kind: str, seeds, points: list[Observed]) -> dict:
        return {"hardware": asdict(self.hw), "kind": kind,
                "weights": {s.queryid: s.weight for s in runner.statements},
                "seeds": [{"source": s.source, "config": s.config} for s in seeds],
                "trials": [p.to_dict() for p in points]}

    def _on_surrogate(self, name: str, design: dict) -> dict:
        """Every run of ``RUNS`` over seeds on a surrogate fitted to ``design`` (its space rebuilt from a server's
        catalog and the design's hardware)."""
        hw = Hardware(**design["hardware"])
        with factory.sandbox(self.engine, f"bench-{name}-catalog") as sandbox:
            connector = Shadow.of(sandbox, sandbox.default_db).connector
            space = KnobSpace.build(connector.knob_catalog(), hw, connector.knob_profile())
        points = [Observed(t["config"], t["statement_ms"], t["failed"]) for t in design["trials"]]
        model = Surrogate(space, design["weights"], points)
        self.say(f"[surrogate {name}] fitted to {model.trained_on} real trials; running "
                 f"{len(RUNS)} optimizers x {self.options.surrogate_seeds} seeds")
        return compare(model, RUNS, [s["config"] for s in design["seeds"]], self.options.surrogate_seeds,
                       self.options.surrogate_trials, design["kind"],
                       say=lambda m: self.say(f"[surrogate {name}] {m}"), extra=[p.config for p in points])

    # --- one workload on a real server ------------------------------------------------------------------

    def _workload(self, wl: BenchWorkload, store: Store, sandbox,
                  dsn: str | None = None) -> tuple[WorkloadReport, dict | None]:
        trials_n = self.options.trials or wl.trials
        shadow, runner, workload, space, features = self._server(sandbox, wl, dsn)
        seeds, _ = rule_seeds(space, features)
        all_records: list[TrialRecord] = []
        summaries: list[tuple[str, str, bool, int, list[TrialRecord], float]] = []
        runs = GENERATED_RUNS if wl.kind == "generated" else RUNS if wl.full else SAFETY_RUNS
        for seed in range(self.options.seed, self.options.seed + max(1, self.options.opt_seeds)):
            for label, optimizer, seeded in runs:
                if summaries and self._late(wl.name, f"run {label} seed {seed}"):
                    continue
                tag = f"[{self.engine} {wl.name}] {label}" + (f" seed {seed}" if self.options.opt_seeds > 1 else "")
                self.say(f"{tag}: {trials_n} trials")
                opt = registry.create("knobs", optimizer, KnobProblem(space, features.kind), seed=seed)
                trials = TrialRunner(shadow, runner, space, say=silent)
                run_id = new_id()
                tuning = TuningOptions(optimizer=optimizer, trials=trials_n, seed=seed, use_seeds=seeded)
                store.add_run(run_id, "bench:" + wl.name, "knobs", label, {"tuning": tuning.to_dict()})
                t0 = time.time()
                records = search(store, run_id, "bench:" + wl.name, trials, opt, tuning, seeds if seeded else [],
                                 say=lambda m, t=tag: self.say(f"{t} {m}")).records
                trials.reset()
                store.update_run(run_id, state="done")
                summaries.append((label, optimizer, seeded, seed, records, time.time() - t0))
                all_records += records
        # the reference: the best of all trials pooled, and the defaults, measured the same way
        defaults = [r.result.objective for r in all_records if r.source == "default" and r.result.objective]
        default_obj = statistics.median(defaults)
        rules = [r.result.objective for r in all_records if r.source == "seed:rules" and r.result.objective]
        rules_obj = statistics.median(rules) if rules else None
        ok = [r for r in all_records if r.result.status == "measured" and r.result.objective is not None]
        top = min(ok, key=lambda r: r.result.objective)  # type: ignore[arg-type, return-value]
        trials = TrialRunner(shadow, runner, space, say=silent)
        base_cfg = space.default_config()
        if self._late(wl.name, "G* re-measure (the pooled best's single pass instead)"):
            single = gain_over(default_obj, top.result.objective) or 0.0
            ref_gain, ref_ci = single, (single, single)
        else:
            self.say(f"[{self.engine} {wl.name}] re-measuring the pooled best against the defaults")
            ref = compare_configs(trials, base_cfg, {**base_cfg, **top.config}, self.options.validation_rounds,
                                  say=lambda m: self.say(f"[{wl.name}] G* {m}"))
            ref_gain, ref_ci = ref.gain, ref.ci
            trials.reset()
        picks = [self._remeasured(wl.name, trials, base_cfg, s) for s in summaries] \
            if self.options.remeasure_rounds > 0 else [None] * len(summaries)
        validated = [self._validated(wl.name, shadow, runner, space, s[0], s[3], s[4]) for s in summaries
                     if isinstance(runner, ReplayRunner) and (self.options.validate == "every" or
                                                              (self.options.validate == "hibo" and s[0] == "hibo"))
                     and not self._late(wl.name, f"validation of {s[0]} seed {s[3]}")]
        gstar = max(ref_gain, 0.0)
        run_summaries = [summarize(default_obj, gstar, *s, remeasured=None if p is _CUT else p)
                         for s, p in zip(summaries, picks)]
        for r, p in zip(run_summaries, picks):
            r.remeasure_cut = p is _CUT
        first = next((v for v in validated if v.label == "hibo"), None)
        if first is None:
            recommends = "not validated (no per-statement replay)" if not isinstance(runner, ReplayRunner) \
                else "not validated"
        else:
            recommends = first.verdict
        report = WorkloadReport(wl.name, runner.objective, default_obj, rules_obj, gain_over(default_obj, rules_obj),
                                ref_gain, ref_ci, top.config, len(all_records),
                                first.gain if first else None, first.ci if first else None, recommends,
                                run_summaries, first.regressed if first else [], self.engine,
                                len(workload.statements), validated)
        design = self._design_doc(runner, features.kind, seeds, observed(all_records)) \
            if wl.full and wl.kind == "replay" and self.options.surrogate_seeds > 0 else None
        return report, design

    def _remeasured(self, name: str, trials: TrialRunner, base_cfg: dict, run: tuple):
        """The run's pick against the defaults, ``remeasure_rounds`` interleaved rounds (None: nothing beat them)."""
        rec = recommendation(run[4])
        if rec is None:
            return None
        if self._late(name, f"re-measure of {run[0]} seed {run[3]}'s pick"):
            return _CUT
        self.say(f"[{self.engine} {name}] {run[0]} seed {run[3]}: re-measuring its pick against the defaults")
        try:
            return compare_configs(trials, base_cfg, {**base_cfg, **rec.config}, self.options.remeasure_rounds)
        except AdvisorError as e:
            self.say(f"[{self.engine} {name}] {run[0]} seed {run[3]}: its pick failed again ({e})")
            return None
        finally:
            trials.reset()

    def _validated(self, name: str, shadow: Shadow, runner: ReplayRunner, space: KnobSpace, label: str, seed: int,
                   records: list[TrialRecord]) -> Validated:
        """A run's recommendation as the pipeline makes it: its best trial rounded, reduced by ablation to at most
        five knobs that carry its gain, validated against the defaults (the guard, regressions timed again)."""
        say = (lambda m: self.say(f"[{self.engine} {name}] {label} seed {seed} {m}"))
        rec = recommendation(records)
        if rec is None:
            return Validated(label, seed, {}, None, None, False, [], "keep the current configuration (no trial "
                                                                     "beat it)")
        trials = TrialRunner(shadow, runner, space, say=silent)
        base = next(r for r in records if r.source == "default")
        trials.timeout_factor *= max(1.0, base.result.objective / max(rec.result.objective, 1e-9))
        say(f"reducing trial {rec.number + 1}'s configuration by ablation")
        try:
            cut = ablate(trials, space.default_config(), space.rounded(rec.config),
                         AblationOptions(max_knobs=generated.MAX_KNOBS, min_gain=MIN_GAIN), say)
        except AdvisorError as e:
            return Validated(label, seed, {}, None, None, False, [], f"rejected: {e}")
        finally:
            trials.reset()
        if cut.keep_current:
            ref = cut.reference
            return Validated(label, seed, {}, ref.gain if ref else None, ref.ci if ref else None, False, [],
                             f"keep the current configuration: {cut.why}")
        changes = space.changes(cut.config)
        options = ValidationOptions(rounds=self.options.validation_rounds)
        say(f"validating {len(changes)} change(s)")
        try:
            evidence = validate(shadow, runner.statements, changes, options, say=say)
            evidence = confirm_knob_regressions(shadow, runner.statements, changes, evidence, options, say)
        except AdvisorError as e:
            return Validated(label, seed, {c.name: c.value for c in changes}, None, None, False, [],
                             f"validation failed: {e}")
        verdict = (f"trial {rec.number + 1} reduced to {len(changes)} knob(s): " + verdict_note(evidence))
        return Validated(label, seed, {c.name: c.value for c in changes}, evidence.gain, evidence.gain_ci,
                         evidence.accepted, [s.queryid for s in evidence.regressions], verdict)
