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

The surrogate part (labelled as such) runs each optimizer ``surrogate_seeds`` times at ``surrogate_trials``
trials: the mean share of the pooled best feasible gain reached, how many seeds reached 90% of it, and how many
runs' best-by-total trial would regress a statement (see ``surrogate``).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.bench.knobs.surrogate import Observed, Surrogate, compare, measure_design
from advisor.core.domain import Hardware, Statement, Workload
from advisor.core.errors import AdvisorError, NotFound
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from advisor.storage.store import Store, new_id, open_store
from advisor.tuning.knobs.pipeline import search
from advisor.tuning.knobs.runners import PgbenchRunner, ReplayRunner
from advisor.tuning.knobs.trials import TrialRecord, TrialRunner, TuningOptions, best_so_far, compare_configs
from advisor.tuning.validation import ValidationOptions, validate
from connectors import factory
from connectors.base import Connector, Shadow
from optimizers import registry
from optimizers.knobs.features import extract
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.seeding import rule_seeds
from optimizers.knobs.space import KnobSpace
from workloads.datasets import knob_suites, suites

# Runs per workload: name, optimizer, seeded. "hibo" is HiBO with rule seeds; the rest start from nothing.
RUNS = (("hibo", "hibo", True), ("hibo-unseeded", "hibo", False), ("smac", "smac", False), ("gp", "gp", False),
        ("tpe", "tpe", False), ("random", "random", False))
MIN_GAIN = ValidationOptions().min_gain  # the same bar a recommendation must clear
SAFETY_RUNS = (("hibo", "hibo", True), ("random", "random", False))


@dataclass(frozen=True)
class BenchWorkload:
    name: str
    kind: str  # replay | pgbench
    full: bool  # all runs (a G* workload) or the safety runs only
    trials: int


DEFAULT_WORKLOADS = (BenchWorkload("joins", "replay", True, 30), BenchWorkload("lookups", "replay", True, 30),
                     BenchWorkload("planner", "replay", True, 30), BenchWorkload("tpch", "replay", False, 12),
                     BenchWorkload("memory", "replay", False, 12), BenchWorkload("pgbench", "pgbench", False, 10))


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
    engine: str = factory.DEFAULT_ENGINE  # of the servers the workloads run on


@dataclass
class RunSummary:
    label: str
    optimizer: str
    seeded: bool
    trials: int
    failed: int
    best_objective: float | None
    best_config: dict[str, str]
    gain: float | None  # over the defaults, from the trials' single passes
    share_of_gstar: float | None
    trials_to_95: int | None
    wall_s: float
    curve: list[float] = field(default_factory=list)  # best-so-far gain over the defaults per trial
    feasible_gain: float | None = None  # the best gain among trials that slowed no statement by 10% (one pass)


@dataclass
class WorkloadReport:
    name: str
    objective: str
    default_objective: float
    rules_objective: float | None
    rules_gain: float | None
    gstar: float
    gstar_ci: tuple[float, float]
    gstar_config: dict[str, str]
    pooled_trials: int
    hibo_validated_gain: float | None
    hibo_validated_ci: tuple[float, float] | None
    hibo_recommends: str
    runs: list[RunSummary]
    hibo_regressed: list[str] = field(default_factory=list)  # statements the guard found slower in validation


def _gain(default: float, value: float | None) -> float | None:
    return None if value is None else 1.0 - value / default


def trials_to_fraction(curve: list[float], final: float, fraction: float = 0.95) -> int | None:
    """First trial (1-based) whose best-so-far gain reaches ``fraction`` of ``final``."""
    if final is None or final <= 0:
        return 1 if curve else None
    for i, g in enumerate(curve):
        if g is not None and g >= fraction * final - 1e-12:
            return i + 1
    return None


def observed(records: list[TrialRecord]) -> list[Observed]:
    return [Observed(r.config, r.statement_ms, r.result.status != "measured") for r in records
            if r.result.status != "infeasible"]


class KnobBench:
    def __init__(self, options: BenchOptions = BenchOptions(), say: Say = silent, hardware: Hardware | None = None):
        self.options = options
        self.say = say
        self.hw = hardware or detect()
        self.out = Path(options.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)

    def run(self) -> dict:
        started, _ = time.time(), factory.supported(self.options.engine)
        by_name = {w.name: w for w in DEFAULT_WORKLOADS}
        for name in self.options.workloads:
            if name not in by_name:
                raise NotFound(f"unknown bench workload {name!r} (available: {', '.join(by_name)})")
        wanted = [by_name[n] for n in self.options.workloads]
        reports: list[WorkloadReport] = []
        skipped: list[dict[str, str]] = []  # workloads this engine cannot run, with the fact that says why
        designs: dict[str, dict] = {}
        surrogate: dict = {"label": "SURROGATE: per-statement random forests fitted to real trials; not a database",
                           "seeds": self.options.surrogate_seeds, "trials": self.options.surrogate_trials,
                           "workloads": {}}
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
                for wl in wanted:
                    try:
                        report, design = self._workload(wl, store)
                    except Skipped as e:
                        self.say(f"[{wl.name}] skipped: {e}")
                        skipped.append({"name": wl.name, "reason": str(e)})
                        continue
                    reports.append(report)
                    if design is not None:
                        designs[wl.name] = design
                        surrogate["workloads"][wl.name] = self._on_surrogate(wl.name, design)
            finally:
                store.close()
        doc = {"mode": self.options.mode,
               "machine": {"cores": self.hw.cores, "memory_gb": round(self.hw.memory_bytes / 1024**3, 1),
                           "storage": self.hw.storage},
               "options": asdict(self.options), "wall_s": round(time.time() - started, 1),
               "workloads": [asdict(r) for r in reports], "skipped": skipped, "surrogate": surrogate,
               "designs": designs}
        (self.out / "knobs.json").write_text(json.dumps(doc, indent=2, default=str))
        self._plot(reports, surrogate)
        return doc

    # --- servers ----------------------------------------------------------------------------------------

    def _server(self, sandbox, wl: BenchWorkload):
        """Load ``wl``'s data into ``sandbox``: (shadow, runner, workload, space, features)."""
        dsn = sandbox.create_database("bench")
        if wl.kind == "pgbench":
            from workloads.datasets import pgbench

            pgbench.initialize(dsn, PgbenchRunner.scale)
            runner = PgbenchRunner()
            workload = Workload(tuple(Statement(f"pgbench.{i}", q, 1, 1.0) for i, q in enumerate(pgbench_texts())))
        else:
            suite = knob_suites.get(wl.name)
            suites.prepare(factory.connector(dsn), suite)
            runner = ReplayRunner(suite.statements(self.options.seed, factory.connector(dsn).dialect),
                                  repeats=self.options.repeats)
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
        with factory.sandbox(self.options.engine, f"bench-{wl.name}") as sandbox:
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
        with factory.sandbox(self.options.engine, f"bench-{name}-catalog") as sandbox:
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

    def _workload(self, wl: BenchWorkload, store: Store) -> tuple[WorkloadReport, dict | None]:
        trials_n = self.options.trials or wl.trials
        self.say(f"[{wl.name}] starting a server and loading the data")
        with factory.sandbox(self.options.engine, f"bench-{wl.name}") as sandbox:
            _check_client(Shadow.of(sandbox, sandbox.default_db).connector, wl)
            shadow, runner, workload, space, features = self._server(sandbox, wl)
            seeds, _ = rule_seeds(space, features)
            all_records: list[TrialRecord] = []
            summaries: list[tuple[str, str, bool, list[TrialRecord], float]] = []
            for label, optimizer, seeded in (RUNS if wl.full else SAFETY_RUNS):
                self.say(f"[{wl.name}] {label}: {trials_n} trials")
                opt = registry.create("knobs", optimizer, KnobProblem(space, features.kind), seed=self.options.seed)
                trials = TrialRunner(shadow, runner, space, say=silent)
                run_id = new_id()
                tuning = TuningOptions(optimizer=optimizer, trials=trials_n, seed=self.options.seed,
                                       use_seeds=seeded)
                store.add_run(run_id, "bench:" + wl.name, "knobs", label, {"tuning": tuning.to_dict()})
                t0 = time.time()
                records = search(store, run_id, "bench:" + wl.name, trials, opt, tuning, seeds if seeded else [],
                                 say=lambda m, lab=label: self.say(f"[{wl.name}] {lab} {m}")).records
                trials.reset()
                store.update_run(run_id, state="done")
                summaries.append((label, optimizer, seeded, records, time.time() - t0))
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
            self.say(f"[{wl.name}] re-measuring the pooled best against the defaults")
            ref = compare_configs(trials, base_cfg, {**base_cfg, **top.config}, self.options.validation_rounds,
                                  say=lambda m: self.say(f"[{wl.name}] G* {m}"))
            trials.reset()
            hibo = _recommendation(next(s[3] for s in summaries if s[0] == "hibo"))
            evidence = None
            if hibo is not None and isinstance(runner, ReplayRunner):
                self.say(f"[{wl.name}] validating HiBO's recommendation as the pipeline does")
                evidence = validate(shadow, runner.statements, space.changes(hibo.config),
                                    ValidationOptions(rounds=self.options.validation_rounds),
                                    say=lambda m: self.say(f"[{wl.name}] HiBO {m}"))
        gstar = max(ref.gain, 0.0)
        run_summaries = [self._summary(default_obj, gstar, *s) for s in summaries]
        if evidence is None:
            recommends = "keep the current configuration (no trial beat it)" if hibo is None else \
                "not validated (no per-statement replay)"
        elif evidence.accepted:
            recommends = f"HiBO's trial {hibo.number + 1} ({evidence.gain:+.1%}, no statement regressed)"
        else:
            recommends = (f"keep the current configuration: HiBO's best rejected ({len(evidence.regressions)} "
                          f"statement(s) regressed; interval {'clears' if evidence.significant else 'misses'} "
                          f"{MIN_GAIN:.0%})")
        report = WorkloadReport(wl.name, runner.objective, default_obj, rules_obj, _gain(default_obj, rules_obj),
                                ref.gain, ref.ci, top.config, len(all_records),
                                evidence.gain if evidence else None, evidence.gain_ci if evidence else None,
                                recommends, run_summaries,
                                [s.queryid for s in evidence.regressions] if evidence else [])
        design = self._design_doc(runner, features.kind, seeds, observed(all_records)) \
            if wl.full and wl.kind == "replay" and self.options.surrogate_seeds > 0 else None
        return report, design

    @staticmethod
    def _summary(default_obj: float, gstar: float, label: str, optimizer: str, seeded: bool,
                 records: list[TrialRecord], wall: float) -> RunSummary:
        curve = [max(_gain(default_obj, b) or 0.0, 0.0) if math.isfinite(b) else 0.0 for b in best_so_far(records)]
        measured = [r for r in records if r.result.objective is not None and r.result.status == "measured"]
        best = min(measured, key=lambda r: r.result.objective, default=None)  # type: ignore[arg-type]
        fine = [r.result.objective for r in measured if not r.slows_a_statement()]
        final = curve[-1] if curve else 0.0
        return RunSummary(label, optimizer, seeded, len(records), sum(r.result.status != "measured" for r in records),
                          best.result.objective if best else None, best.config if best else {}, final,
                          final / gstar if gstar > 0 else None, trials_to_fraction(curve, final), round(wall, 1),
                          curve, max(_gain(default_obj, min(fine)) or 0.0, 0.0) if fine else None)

    # --- the plot ------------------------------------------------------------------------------------------

    def _plot(self, reports: list[WorkloadReport], surrogate: dict) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        panels = [(r.name, r) for r in reports] + [(f"SURROGATE {n}", w) for n, w in surrogate["workloads"].items()]
        if not panels:
            return
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
        for ax, (title, item) in zip(axes[0], panels, strict=True):
            if isinstance(item, WorkloadReport):
                for run in item.runs:
                    ax.plot(range(1, len(run.curve) + 1), [100 * g for g in run.curve], label=run.label,
                            linewidth=2 if run.label == "hibo" else 1)
                ax.axhline(100 * item.gstar, color="black", linestyle="--", linewidth=1, label="G* (pooled best)")
                ax.set_ylabel("best-so-far gain over defaults (%)")
            else:
                for label, s in item["optimizers"].items():
                    ax.plot(range(1, len(s["mean_curve"]) + 1), [100 * g for g in s["mean_curve"]], label=label,
                            linewidth=2 if label == "hibo" else 1)
                ax.axhline(100 * item["reference_gain"], color="black", linestyle="--", linewidth=1,
                           label="pooled best feasible")
                ax.set_ylabel("mean best feasible gain (%)")
            ax.set_title(title)
            ax.set_xlabel("trial")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(self.out / "knobs-convergence.png", dpi=110)
        plt.close(fig)


class Skipped(Exception):
    """A workload the engine under test cannot run; the message is the fact that says why."""


def _check_client(connector: Connector, wl: BenchWorkload) -> None:
    """Skipped when ``wl`` is driven by a client program (pgbench) that the connector's engine has not."""
    if wl.kind == "pgbench":
        try:
            connector.loader().client_command("pgbench", ["--version"])
        except AdvisorError as e:
            raise Skipped(f"needs the pgbench client: {e}") from None


def _recommendation(records: list[TrialRecord]) -> TrialRecord | None:
    """What the pipeline would validate first: the best trial better than the baseline, those that slowed no
    statement first (``pipeline.candidates``'s order); None when no trial beat the baseline."""
    base = next((r for r in records if r.source == "default" and r.result.objective is not None), None)
    better = [r for r in records if r.result.status == "measured" and r.result.objective is not None
              and r.source != "default" and base is not None and r.result.objective < base.result.objective]
    return min(better, key=lambda r: (r.slows_a_statement(), r.result.objective), default=None)  # type: ignore


def pgbench_texts() -> list[str]:
    return ["UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
            "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"]
