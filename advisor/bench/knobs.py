"""``advisor bench knobs``: every knob optimizer with the same trial budget on real PostgreSQL sandboxes, then
the same optimizers over many seeds on a surrogate fitted to those real trials.

Per workload, one sandbox server holds the data (fsync on, as in production; the data fits in memory) and is the
shadow every run tunes. Runs go one after another on the same server, each starting from PostgreSQL's defaults.

Reported per workload (real database):
- G*: the best configuration of all runs' trials pooled (the reference), re-measured against the defaults with
  interleaved passes; its gain and 95% interval.
- per optimizer: best objective and gain over the defaults (one pass per trial), share of G* reached, trials to
  reach 95% of its own final best, wall time, failed trials; HiBO's best validated against the defaults.
- the rules (PGTune) configuration against the defaults.

The surrogate part (labelled as such) fits a random forest to the pooled real trials (log objective) and runs
each optimizer ``surrogate_seeds`` times on it: mean trials to reach 95% of the best known value and mean best.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from advisor.core.domain import Hardware, Statement, TrialResult, Workload
from advisor.core.errors import NotFound
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from advisor.tuning.validation import ValidationOptions
from advisor.storage.store import Store, new_id, open_store
from advisor.tuning.knobs.pipeline import search
from advisor.tuning.knobs.trials import (ReplayRunner, TrialRecord, TrialRunner, TuningOptions, best_so_far,
                            compare_configs)
from connectors import factory
from connectors.base import Shadow
from optimizers import registry
from optimizers.knobs.features import extract
from optimizers.knobs.seeding import Seed, rule_seeds
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.space import KnobSpace
from workloads import suites

# Runs per workload: name, optimizer, seeded. "hibo" is HiBO with rule seeds; the rest start from nothing.
RUNS = (("hibo", "hibo", True), ("hibo-unseeded", "hibo", False), ("gp", "gp", False), ("tpe", "tpe", False),
        ("random", "random", False))
MIN_GAIN = ValidationOptions().min_gain  # the same bar a recommendation must clear
SAFETY_RUNS = (("hibo", "hibo", True), ("random", "random", False))


@dataclass(frozen=True)
class BenchWorkload:
    name: str
    kind: str  # replay | pgbench
    full: bool  # all runs (a G* workload) or the safety runs only
    trials: int


DEFAULT_WORKLOADS = (BenchWorkload("joins", "replay", True, 30), BenchWorkload("lookups", "replay", True, 30),
                     BenchWorkload("tpch", "replay", False, 12), BenchWorkload("pgbench", "pgbench", False, 10))


@dataclass(frozen=True)
class BenchOptions:
    workloads: tuple[str, ...] = ("joins", "lookups", "tpch", "pgbench")
    trials: int | None = None  # overrides each workload's default
    repeats: int = 2
    validation_rounds: int = 4
    surrogate_seeds: int = 3
    surrogate_trials: int = 30
    seed: int = 0
    out_dir: str = "bench-results/knobs"


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


class KnobBench:
    def __init__(self, options: BenchOptions = BenchOptions(), say: Say = silent, hardware: Hardware | None = None):
        self.options = options
        self.say = say
        self.hw = hardware or detect()
        self.out = Path(options.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)

    def run(self) -> dict:
        started = time.time()
        by_name = {w.name: w for w in DEFAULT_WORKLOADS}
        reports: list[WorkloadReport] = []
        pooled: dict[str, tuple[KnobSpace, list[TrialRecord], list[Seed]]] = {}
        store = open_store(self.out / "bench.duckdb")
        try:
            for name in self.options.workloads:
                if name not in by_name:
                    raise NotFound(f"unknown bench workload {name!r} (available: {', '.join(by_name)})")
                report, space, records, seeds = self._workload(by_name[name], store)
                reports.append(report)
                pooled[name] = (space, records, seeds)
        finally:
            store.close()
        surrogate = self._surrogate(pooled, reports)
        doc = {"machine": {"cores": self.hw.cores, "memory_gb": round(self.hw.memory_bytes / 1024**3, 1),
                           "storage": self.hw.storage},
               "options": asdict(self.options), "wall_s": round(time.time() - started, 1),
               "workloads": [asdict(r) for r in reports], "surrogate": surrogate}
        (self.out / "knobs.json").write_text(json.dumps(doc, indent=2, default=str))
        self._plot(reports)
        return doc

    # --- one workload on a real server ------------------------------------------------------------------

    def _workload(self, wl: BenchWorkload, store: Store):
        from advisor.tuning.knobs.trials import PgbenchRunner

        trials_n = self.options.trials or wl.trials
        self.say(f"[{wl.name}] starting a server and loading the data")
        with factory.sandbox("postgres", f"bench-{wl.name}") as sandbox:
            dsn = sandbox.create_database("bench")
            if wl.kind == "pgbench":
                from workloads import pgbench

                pgbench.initialize(dsn, PgbenchRunner.scale)
                runner = PgbenchRunner()
                workload = Workload(tuple(Statement(f"pgbench.{i}", q, 1, 1.0) for i, q in enumerate(pgbench_texts())))
            else:
                suite = suites.get(wl.name)
                suites.prepare(dsn, suite)
                bound = suite.statements(self.options.seed)
                runner = ReplayRunner(bound, repeats=self.options.repeats)
                workload = Workload(tuple(Statement(b.queryid, b.sql, 1, 1.0) for b in bound))
            shadow = Shadow.of(sandbox, "bench")
            connector = shadow.connector
            catalog = connector.knob_catalog()
            space = KnobSpace.build(catalog, self.hw)
            with connector.connect() as conn:
                data_bytes = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
            features = extract(workload, data_bytes, "oltp" if wl.kind == "pgbench" else "dw")
            seeds, _ = rule_seeds(space, features)
            runs = RUNS if wl.full else SAFETY_RUNS
            all_records: list[TrialRecord] = []
            summaries: list[tuple[str, str, bool, list[TrialRecord], float]] = []
            for label, optimizer, seeded in runs:
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
            hibo_records = next(s[3] for s in summaries if s[0] == "hibo")
            hibo_best = min((r for r in hibo_records if r.result.objective is not None and r.result.status == "measured"),
                            key=lambda r: r.result.objective)  # type: ignore[arg-type, return-value]
            if hibo_best.config == top.config:
                hibo_cmp = ref
            elif hibo_best.source == "default":
                hibo_cmp = None
            else:
                self.say(f"[{wl.name}] validating HiBO's best against the defaults")
                hibo_cmp = compare_configs(trials, base_cfg, {**base_cfg, **hibo_best.config},
                                           self.options.validation_rounds,
                                           say=lambda m: self.say(f"[{wl.name}] HiBO {m}"))
            trials.reset()
        gstar = max(ref.gain, 0.0)
        run_summaries = []
        for label, optimizer, seeded, records, wall in summaries:
            curve = [max(_gain(default_obj, b) or 0.0, 0.0) if math.isfinite(b) else 0.0
                     for b in best_so_far(records)]
            best = min((r for r in records if r.result.objective is not None and r.result.status == "measured"),
                       key=lambda r: r.result.objective, default=None)  # type: ignore[arg-type]
            final = curve[-1] if curve else 0.0
            share = final / gstar if gstar > 0 else None
            run_summaries.append(RunSummary(
                label, optimizer, seeded, len(records), sum(r.result.status != "measured" for r in records),
                best.result.objective if best else None, best.config if best else {},
                final, share, trials_to_fraction(curve, final), round(wall, 1), curve))
        if hibo_cmp is None or hibo_cmp.ci[0] <= MIN_GAIN:
            recommends = f"keep the current configuration (interval does not clear {MIN_GAIN:.0%})"
        else:
            recommends = f"HiBO's best ({hibo_cmp.gain:+.1%})"
        return (WorkloadReport(wl.name, runner.objective, default_obj, rules_obj, _gain(default_obj, rules_obj),
                               ref.gain, ref.ci, top.config, len(all_records),
                               hibo_cmp.gain if hibo_cmp else 0.0, hibo_cmp.ci if hibo_cmp else None, recommends,
                               run_summaries),
                space, all_records, seeds)

    # --- surrogate ---------------------------------------------------------------------------------------

    def _surrogate(self, pooled, reports: list[WorkloadReport]) -> dict:
        from sklearn.ensemble import RandomForestRegressor

        out: dict = {"label": "SURROGATE: a random forest fitted to the real trials above; not a database",
                     "seeds": self.options.surrogate_seeds, "trials": self.options.surrogate_trials, "workloads": {}}
        if self.options.surrogate_seeds <= 0:
            return out
        for report in reports:
            space, records, seeds = pooled[report.name]
            ok = [r for r in records if r.result.status == "measured" and r.result.objective]
            if len(ok) < 20 or not any(s.label == "hibo-unseeded" for s in report.runs):
                continue
            X = np.array([space.encode(r.config) for r in ok])
            y = np.log([r.result.objective for r in ok])
            model = RandomForestRegressor(n_estimators=200, min_samples_leaf=2, random_state=0).fit(X, y)
            base = space.encode(space.default_config())
            default_val = float(model.predict(base[None, :])[0])
            per_run: dict[str, list[tuple[int | None, float]]] = {}
            best_known = float(y.min())
            curves: dict[str, list[list[float]]] = {}
            for label, optimizer, seeded in RUNS:
                for s in range(self.options.surrogate_seeds):
                    opt = registry.create("knobs", optimizer, KnobProblem(space), seed=1000 + s)
                    configs = [{}] + ([sd.config for sd in seeds] if seeded else [])
                    values = []

                    def measure(config: dict) -> None:  # the surrogate's value, told as a trial's outcome
                        v = float(model.predict(space.encode({**space.default_config(), **config})[None, :])[0])
                        opt.tell(tuple(space.changes({**space.default_config(), **config})),
                                 TrialResult(math.exp(v)))
                        values.append(v)

                    for config in configs[:self.options.surrogate_trials]:
                        measure(config)
                    while len(values) < self.options.surrogate_trials:
                        measure({c.name: c.value for c in opt.ask(1, current=())[0]})
                    best_known = min(best_known, min(values))
                    curves.setdefault(label, []).append(list(np.minimum.accumulate(values)))
                self.say(f"[surrogate {report.name}] {label} done")
            gstar = 1.0 - math.exp(best_known - default_val)
            summary = {}
            for label, runs in curves.items():
                gains = [[1.0 - math.exp(v - default_val) for v in c] for c in runs]
                to95 = [trials_to_fraction(g, gstar) for g in gains]
                to95_own = [trials_to_fraction(g, g[-1]) for g in gains]
                summary[label] = {
                    "mean_final_gain": round(float(np.mean([g[-1] for g in gains])), 4),
                    "mean_trials_to_95pct_of_gstar": _mean_or_none(to95, self.options.surrogate_trials),
                    "reached_95pct_of_gstar": sum(t is not None for t in to95),
                    "mean_trials_to_95pct_of_own_best": _mean_or_none(to95_own, self.options.surrogate_trials),
                    "mean_curve": [round(float(v), 4) for v in np.mean(gains, axis=0)],
                }
            out["workloads"][report.name] = {"gstar_surrogate": round(gstar, 4), "optimizers": summary}
        return out

    # --- the plot ------------------------------------------------------------------------------------------

    def _plot(self, reports: list[WorkloadReport]) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(reports), figsize=(5 * len(reports), 4), squeeze=False)
        for ax, report in zip(axes[0], reports, strict=True):
            for run in report.runs:
                ax.plot(range(1, len(run.curve) + 1), [100 * g for g in run.curve], label=run.label,
                        linewidth=2 if run.label == "hibo" else 1)
            ax.axhline(100 * report.gstar, color="black", linestyle="--", linewidth=1, label="G* (pooled best)")
            if report.rules_gain is not None:
                ax.axhline(100 * report.rules_gain, color="grey", linestyle=":", linewidth=1, label="rules (PGTune)")
            ax.set_title(f"{report.name} ({report.objective})")
            ax.set_xlabel("trial")
            ax.set_ylabel("best-so-far gain over defaults (%)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(self.out / "knobs-convergence.png", dpi=110)
        plt.close(fig)


def _mean_or_none(values: list[int | None], cap: int) -> float:
    """Mean trials, counting a run that never got there as ``cap + 1`` (so misses are not hidden)."""
    return round(float(np.mean([v if v is not None else cap + 1 for v in values])), 1)


def pgbench_texts() -> list[str]:
    return ["UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
            "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"]


def table(doc: dict) -> str:
    """The bench's text table."""
    lines = []
    for w in doc["workloads"]:
        lo, hi = w["gstar_ci"]
        rules = f"{w['rules_gain']:+.1%}" if w["rules_gain"] is not None else "-"
        lines.append(f"\n{w['name']} ({w['objective']}): defaults {w['default_objective']:.1f}, rules config {rules} "
                     f"vs defaults; G* = {w['gstar']:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}) from "
                     f"{w['pooled_trials']} pooled trials")
        hv = w["hibo_validated_ci"]
        lines.append(f"  HiBO's best validated: {w['hibo_validated_gain']:+.1%}"
                     + (f" (95% CI {hv[0]:+.1%} .. {hv[1]:+.1%})" if hv else "") + f" -> recommends {w['hibo_recommends']}")
        lines.append(f"  {'optimizer':<14} {'trials':>6} {'failed':>6} {'best':>10} {'gain':>8} {'of G*':>6} "
                     f"{'to 95%':>6} {'wall s':>7}")
        for r in w["runs"]:
            share = f"{r['share_of_gstar']:.0%}" if r["share_of_gstar"] is not None else "-"
            lines.append(f"  {r['label']:<14} {r['trials']:>6} {r['failed']:>6} {r['best_objective'] or 0:>10.1f} "
                         f"{r['gain']:>+8.1%} {share:>6} {r['trials_to_95'] or '-':>6} {r['wall_s']:>7.1f}")
    sur = doc.get("surrogate") or {}
    for name, w in (sur.get("workloads") or {}).items():
        lines.append(f"\nSURROGATE {name} (random forest on the real trials; {sur['seeds']} seeds x "
                     f"{sur['trials']} trials): G*surrogate = {w['gstar_surrogate']:+.1%}")
        lines.append(f"  {'optimizer':<14} {'mean gain':>9} {'to 95% G*':>9} {'hit':>4} {'to 95% own':>10}")
        for label, s in w["optimizers"].items():
            lines.append(f"  {label:<14} {s['mean_final_gain']:>+9.1%} {s['mean_trials_to_95pct_of_gstar']:>9} "
                         f"{s['reached_95pct_of_gstar']:>4} {s['mean_trials_to_95pct_of_own_best']:>10}")
    lines.append(f"\nwall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores, "
                 f"{doc['machine']['memory_gb']} GiB")
    return "\n".join(lines)
