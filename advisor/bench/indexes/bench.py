"""``advisor bench indexes``: index advisors on TPC-H with HypoPG what-if costs, then real runs on the server.

Setup: one sandbox server with TPC-H at ``scale`` (primary keys only), one instance of each of the 22 queries.
IA2 trains once on ``train`` templates (the others are held out), with random frequencies and budgets from
the smallest to the largest bench budget; it is then asked, without retraining, for every test mix.

Test mixes: ``mixes`` random sets of ``mix_size`` templates drawn from all 22 (so some contain held-out
templates), frequencies drawn from 1..1000. Budgets are fractions of the data size (tables with their primary
keys). Per advisor, mix and budget: RC = what-if cost with its indexes / cost without (1.0 = no help), the
selection time and its own what-if calls (each advisor has its own cache, so calls are comparable; the HypoPG
session underneath is shared). The ILP is solved where its instance is small enough; its gap is reported.

Real runs (middle budget): the TPC-H workload (every query but ``real_exclude``, weight 1) with the indexes IA2
chooses for it built on the server, against no new index, interleaved rounds; then IA2's set goes through the same per-index validation a
recommendation does (an index that slows a statement by more than 10% or helps none is dropped). Extend's set
is measured the same way for comparison.
"""

from __future__ import annotations

import dataclasses
import json
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from advisor.core.hardware import detect
from advisor.tuning.indexes.validation import validate_indexes
from advisor.tuning.indexes.problem import build_problem
from advisor.core.progress import Say, silent
from advisor.tuning.validation import ValidationOptions, validate
from connectors import factory
from connectors.base import Shadow
from advisor.core.errors import AdvisorError
from advisor.tuning.indexes.choice import choose
from optimizers import registry
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import IndexProblem
from workloads.datasets import tpch
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay

ADVISORS = ("noindex", "dexter", "extend", "ilp", "ia2", "ia2-nobeam")
# advisors that are an optimizer with other options: IA2 without its beam decoding (greedy and sampled rollouts only)
VARIANTS = {"ia2-nobeam": ("ia2", {"beam": 0})}


@dataclass(frozen=True)
class IndexBenchOptions:
    scale: float = 0.2
    budgets: tuple[float, ...] = (0.05, 0.1, 0.2, 0.35, 0.5)  # fractions of the data size
    mixes: int = 10
    mix_size: int = 5
    held_out: int = 4  # templates IA2 never trains on
    episodes: int = 300
    samples: int = 48  # IA2's sampled rollouts per recommendation
    device: str = "auto"
    seed: int = 0
    rounds: int = 3  # interleaved rounds of the real runs
    statement_timeout_ms: int = 60_000
    real: bool = True
    reward: str = "relative"  # IA2's training reward (see IA2Options)
    # without an index on l_partkey these two take 20-45 s each at SF 0.1 (their correlated subqueries scan
    # lineitem per outer row): in the real runs they run once per arm instead of in every interleaved round
    slow: tuple[str, ...] = ("q17", "q20")
    slow_timeout_ms: int = 600_000
    out_dir: str = "bench-results/indexes"
    engine: str = factory.DEFAULT_ENGINE  # of the server TPC-H is loaded into


@dataclass
class Cell:
    advisor: str
    budget: float
    mix: int
    rc: float
    indexes: int
    estimated_bytes: int
    seconds: float
    whatif_calls: int
    unseen: bool  # the mix holds a template IA2 did not train on
    status: str = "ok"


@dataclass
class IndexBenchReport:
    data_bytes: int
    candidates: int
    train_templates: list[str]
    held_out: list[str]
    training: dict
    cells: list[Cell] = field(default_factory=list)
    real: dict = field(default_factory=dict)


class IndexBench:
    def __init__(self, options: IndexBenchOptions = IndexBenchOptions(), say: Say | None = None):
        self.options = options
        self.say = say or silent
        self.out = Path(options.out_dir)

    def run(self) -> dict:
        o = self.options
        started = time.time()
        factory.supported(o.engine)
        self.out.mkdir(parents=True, exist_ok=True)
        rng = random.Random(o.seed)
        with factory.sandbox(o.engine, "bench-indexes") as sandbox, \
                tempfile.TemporaryDirectory(prefix="advisor-bench-models-") as tmp:
            models = Path(tmp)  # IA2's model, trained once on the training templates
            dsn = sandbox.create_database("tpch")
            self.say(f"loading TPC-H at scale {o.scale:g}")
            tpch.load(factory.connector(dsn), o.scale, progress=self.say)
            connector = sandbox.connector("tpch")
            connector.loader().analyze()
            snapshot = connector.observe()
            bound = [BoundStatement(f"q{n}", q, q, 1.0, "literal", False) for n, q in tpch.stream(rng, o.scale)]
            data_bytes = sum(t.total_bytes for t in snapshot.tables)
            base, session = build_problem(connector, snapshot, bound, int(o.budgets[0] * data_bytes))
            with session:
                ids = [q.queryid for q in base.queries]
                held = sorted(rng.sample(ids, o.held_out), key=ids.index)
                train = [q for q in ids if q not in held]
                self.say(f"{len(base.candidates)} candidates from {len(ids)} templates; IA2 trains on {len(train)}, "
                         f"held out: {', '.join(held)}")
                budgets_b = (int(min(o.budgets) * data_bytes), int(max(o.budgets) * data_bytes))
                ia2 = registry.create("indexes", "ia2", base, seed=o.seed, episodes=o.episodes, reward=o.reward,
                                      device=o.device, templates=train, budgets=budgets_b)
                stats = ia2.prepare(models, self.say) or {}
                training = {**stats, "whatif": base.whatif.counters()}
                self.say(f"IA2 trained in {stats.get('seconds', 0):.0f}s on {stats.get('device')}")
                report = IndexBenchReport(data_bytes, len(base.candidates), train, held, training)
                mixes = [self._mix(rng, ids) for _ in range(o.mixes)]
                names = {c.name for c in registry.available("indexes")}
                advisors = [a for a in ADVISORS if VARIANTS.get(a, (a,))[0] in names]
                caches = {name: CachedWhatIf(session) for name in advisors}
                truth = CachedWhatIf(session)  # RC is always computed with one shared cache
                for m, weights in enumerate(mixes):
                    unseen = any(q in held for q in weights)
                    for frac in o.budgets:
                        budget = int(frac * data_bytes)
                        for name in advisors:
                            report.cells.append(self._cell(name, base, caches[name], truth, weights, budget, frac,
                                                           m, unseen, models))
                    self.say(f"mix {m + 1}/{len(mixes)} done ({', '.join(weights)})")
                middle = o.budgets[len(o.budgets) // 2]
                full = {q: 1.0 for q in ids}
                configs = {}
                for name in ("ia2", "extend"):
                    problem = _with(base, caches[name], full, int(middle * data_bytes))
                    configs[name] = _pick(name, problem, models, o)
                whole = _with(base, truth, full, int(middle * data_bytes))
                report.real["whatif_rc"] = {k: whole.cost(v) / whole.cost() for k, v in configs.items()}
                estimated = {ix: truth.size(ix) for v in configs.values() for ix in v}
            if o.real:
                report.real.update(self._real(sandbox, connector, bound, configs, estimated, middle))
        doc = {"machine": {**asdict(detect()), "scale": o.scale}, "options": asdict(o),
               "wall_s": round(time.time() - started, 1), **asdict(report), "summary": summarize(report)}
        (self.out / "indexes.json").write_text(json.dumps(doc, indent=2, default=str))
        plot(doc, self.out / "indexes-rc.png")
        return doc

    def _mix(self, rng: random.Random, ids: list[str]) -> dict[str, float]:
        return {q: float(rng.randint(1, 1000)) for q in rng.sample(ids, self.options.mix_size)}

    def _cell(self, name, base, cache, truth, weights, budget, frac, m, unseen, models) -> Cell:
        problem = _with(base, cache, weights, budget)
        calls = cache.calls
        o = self.options
        optimizer, extra = VARIANTS.get(name, (name, {}))
        options = {"samples": o.samples, "device": o.device, "episodes": o.episodes, "reward": o.reward, **extra}
        try:  # the pipeline's own step; ``seconds`` is the ask alone (IA2's model is loaded before it)
            config, _, seconds, _ = choose(problem, optimizer, seed=o.seed, model_dir=models, options=options)
            status = "ok"
        except AdvisorError as e:  # the ILP refuses instances that are too large
            config, status, seconds = (), f"not solved: {e}", 0.0
        judge = _with(base, truth, weights, budget)
        rc = judge.cost(config) / judge.cost() if status == "ok" else float("nan")
        return Cell(name, frac, m, rc, len(config), judge.size(config), seconds, cache.calls - calls, unseen, status)

    def _real(self, sandbox, connector, bound, configs, estimated, middle) -> dict:
        """Interleaved rounds over the statements that run in seconds; ``slow`` ones (minutes without an index)
        once per arm, without warm-up. The whole workload's relative runtime adds both parts."""
        o = self.options
        shadow = Shadow(sandbox, connector, "tpch")
        fast = [b for b in bound if b.queryid not in o.slow]
        slow = [b for b in bound if b.queryid in o.slow]
        options = ValidationOptions(rounds=o.rounds, statement_timeout_ms=o.statement_timeout_ms)
        once = ValidationOptions(rounds=1, warmup=0, statement_timeout_ms=o.slow_timeout_ms)
        out: dict = {"budget": middle, "slow": list(o.slow)}
        slow_base: dict[str, float] | None = None
        for name, config in configs.items():
            if not config:
                out[name] = {"relative_runtime": 1.0, "relative_runtime_fast": 1.0, "indexes": 0}
                continue
            self.say(f"real run: TPC-H with {name}'s {len(config)} indexes vs none: {len(fast)} statements in "
                     f"{o.rounds} interleaved rounds, then {', '.join(b.queryid for b in slow)} once per arm")
            ev = validate(shadow, fast, config, options, say=self.say)
            base_fast, cand_fast = float(np.median(ev.baseline_totals_ms)), float(np.median(ev.candidate_totals_ms))
            if slow and slow_base is None:  # no new index: the same for every advisor, measured once
                slow_base = self._slow_pass(shadow, slow, (), once)
            slow_cand = self._slow_pass(shadow, slow, config, once) if slow else {}
            base_slow, cand_slow = sum((slow_base or {}).values()), sum(slow_cand.values())
            ratios = {s.queryid: s.ratio for s in ev.statements}
            ratios.update({q: slow_cand[q] / slow_base[q] for q in slow_cand if slow_base and slow_base.get(q)})
            out[name] = {"relative_runtime": (cand_fast + cand_slow) / (base_fast + base_slow),
                         "relative_runtime_fast": cand_fast / base_fast, "gain_ci_fast": ev.gain_ci,
                         "baseline_ms": {"fast": base_fast, "slow": base_slow},
                         "candidate_ms": {"fast": cand_fast, "slow": cand_slow}, "indexes": len(config),
                         "slow_ms": {q: {"baseline": (slow_base or {}).get(q), "candidate": v}
                                     for q, v in slow_cand.items()},
                         "statements": {q: round(r, 3) for q, r in ratios.items()},
                         "worst_ratio": max((r for r in ratios.values() if r == r), default=1.0),
                         "regressed": [s.queryid for s in ev.regressions]}
        if configs.get("ia2"):
            self.say("real run: IA2's set through the per-index validation of a recommendation")
            checked = validate_indexes(shadow, fast, configs["ia2"], estimated, (), options, say=self.say)
            ev = checked.evidence
            out["ia2_validated"] = {
                "kept": len(checked.kept), "dropped": [(v.index.table, v.index.columns, v.reason)
                                                       for v in checked.verdicts if not v.kept],
                "relative_runtime": _relative(ev.baseline_totals_ms, ev.candidate_totals_ms) if ev else 1.0,
                "worst_ratio": max((s.ratio for s in ev.statements if s.ratio == s.ratio), default=1.0) if ev else 1.0,
                "regressed": [s.queryid for s in ev.regressions if s.queryid not in checked.unexplained] if ev else [],
                "unexplained": list(checked.unexplained), "accepted": checked.accepted,
                "sizes": [(v.index.table, v.index.columns, v.estimated_bytes, v.built_bytes) for v in checked.verdicts]}
        return out


    def _slow_pass(self, shadow: Shadow, statements, config, options: ValidationOptions) -> dict[str, float]:
        """One run of each statement (ms) with ``config`` built (and dropped again afterwards)."""
        applied = shadow.connector.apply(list(config)) if config else None
        try:
            self.say(f"running {', '.join(b.queryid for b in statements)} once "
                     f"{'with ' + str(len(config)) + ' indexes' if config else 'without new indexes'}")
            result = replay(shadow.connector, statements, ReplayOptions(1, 1, 0, options.statement_timeout_ms))
        finally:
            if applied is not None:
                shadow.connector.revert(applied)
        return {b.queryid: result.median_ms(b.queryid) for b in statements}


def _with(base: IndexProblem, cache: CachedWhatIf, weights: dict[str, float], budget: int) -> IndexProblem:
    return dataclasses.replace(base.with_weights(weights, budget), whatif=cache)


def _pick(name: str, problem: IndexProblem, models: Path, o: IndexBenchOptions) -> list:
    """The advisor's indexes, through the pipeline's own step (IA2 reuses the model trained once in ``models``)."""
    options = {"samples": o.samples, "device": o.device, "episodes": o.episodes, "reward": o.reward}
    return list(choose(problem, name, seed=o.seed, model_dir=models, options=options)[0])


def _relative(base: tuple[float, ...], cand: tuple[float, ...]) -> float:
    return float(np.median(cand) / np.median(base)) if base and np.median(base) > 0 else float("nan")


def summarize(report: IndexBenchReport) -> dict:
    """Mean RC per advisor and budget; IA2 against Extend and the ILP; selection times."""
    out: dict = {"rc": {}, "rc_unseen": {}, "seconds": {}, "whatif_calls": {}}
    budgets = sorted({c.budget for c in report.cells})
    for name in dict.fromkeys(c.advisor for c in report.cells):
        cells = [c for c in report.cells if c.advisor == name and c.status == "ok"]
        out["rc"][name] = {str(b): _mean([c.rc for c in cells if c.budget == b]) for b in budgets}
        out["rc_unseen"][name] = {str(b): _mean([c.rc for c in cells if c.budget == b and c.unseen]) for b in budgets}
        out["seconds"][name] = _mean([c.seconds for c in cells])
        out["whatif_calls"][name] = _mean([c.whatif_calls for c in cells])
    ia2, ext = out["rc"]["ia2"], out["rc"]["extend"]
    out["ia2_minus_extend_points"] = {b: round(100 * (ia2[b] - ext[b]), 2) for b in ia2}
    out["ia2_minus_extend_mean_points"] = round(statistics.mean(out["ia2_minus_extend_points"].values()), 2)
    by_key = {(c.advisor, c.budget, c.mix): c for c in report.cells}
    for name in ("ia2", *VARIANTS):
        gaps = []
        for c in report.cells:
            ilp = by_key.get(("ilp", c.budget, c.mix))
            if c.advisor == name and ilp and ilp.status == "ok" and ilp.rc > 0:
                gaps.append(c.rc / ilp.rc - 1.0)
        key = "ia2_vs_ilp_gap" if name == "ia2" else f"{name.replace('-', '_')}_vs_ilp_gap"
        out[key] = {"mean": _mean(gaps), "max": max(gaps) if gaps else None, "cells": len(gaps),
                    "within_2pct": round(sum(g <= 0.02 for g in gaps) / len(gaps), 3) if gaps else None}
    return out


def _mean(xs) -> float | None:
    xs = [x for x in xs if x == x]
    return round(statistics.mean(xs), 4) if xs else None


def table(doc: dict) -> str:
    s = doc["summary"]
    budgets = list(next(iter(s["rc"].values())).keys())
    lines = [f"TPC-H SF {doc['options']['scale']:g}: {doc['candidates']} candidates, data "
             f"{doc['data_bytes'] / 1024**2:.0f} MB, {doc['options']['mixes']} mixes of {doc['options']['mix_size']} "
             f"templates; IA2 trained on {len(doc['train_templates'])} templates (held out: "
             f"{', '.join(doc['held_out'])}) in {doc['training']['seconds']:.0f}s on {doc['training']['device']}",
             "", "mean relative what-if cost RC (lower is better) by budget (fraction of data size)",
             f"{'advisor':10}" + "".join(f"{b:>8}" for b in budgets) + f"{'select s':>10}{'what-if':>9}"]
    for name, row in s["rc"].items():
        lines.append(f"{name:10}" + "".join(f"{row[b]:>8.3f}" if row[b] is not None else f"{'-':>8}"
                                            for b in budgets) +
                     f"{s['seconds'][name]:>10.3f}{s['whatif_calls'][name]:>9.0f}")
    for name in ("extend", "ia2"):
        row = s["rc_unseen"].get(name, {})
        lines.append(f"{name + '*':10}" + "".join(f"{row[b]:>8.3f}" if row.get(b) is not None
                                                             else f"{'-':>8}" for b in budgets) +
                     "   (* only the mixes holding a template IA2 did not train on)")
    lines.append(f"IA2 - Extend, points of RC: {s['ia2_minus_extend_points']} (mean "
                 f"{s['ia2_minus_extend_mean_points']:+.2f})")
    for name in ("ia2", *VARIANTS):
        g = s.get("ia2_vs_ilp_gap" if name == "ia2" else f"{name.replace('-', '_')}_vs_ilp_gap") or {"cells": 0}
        if g["cells"]:
            lines.append(f"{name} vs ILP optimum: mean gap {100 * g['mean']:+.2f}%, worst {100 * g['max']:+.2f}%, "
                         f"within 2% on {g.get('within_2pct', 0):.0%} of {g['cells']} solved instances")
    real = doc.get("real", {})
    if "ia2" in real:
        lines.append(f"\nreal runs, TPC-H (22 queries), budget {real['budget']:g} of data, {doc['options']['rounds']} "
                     f"interleaved rounds ({', '.join(real['slow'])}: one run per arm):")
        for name in ("ia2", "extend"):
            r = real.get(name)
            if r:
                lines.append(f"  {name:7} relative runtime {r['relative_runtime']:.3f} (without "
                             f"{', '.join(real['slow'])}: {r['relative_runtime_fast']:.3f}), {r['indexes']} indexes, "
                             f"what-if RC {real['whatif_rc'][name]:.3f}, worst statement {r.get('worst_ratio', 1):.2f}x")
        v = real.get("ia2_validated")
        if v:
            lines.append(f"  ia2 after per-index validation (without {', '.join(real['slow'])}): kept {v['kept']}, dropped {len(v['dropped'])}, "
                         f"relative runtime {v['relative_runtime']:.3f}, worst statement {v['worst_ratio']:.2f}x, "
                         f"regressed >10% through a kept index: {v['regressed'] or 'none'}"
                         + (f" (slower with plans the kept indexes cannot touch, noise: {', '.join(v['unexplained'])})"
                            if v.get("unexplained") else "") + f"; accepted: {v.get('accepted')}")
    lines.append(f"\nwall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores")
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, row in doc["summary"]["rc"].items():
        xs = [float(b) for b, v in row.items() if v is not None]
        ys = [v for v in row.values() if v is not None]
        ax.plot([100 * x for x in xs], ys, marker="o", label=name, linewidth=2 if name == "ia2" else 1)
    ax.set_xlabel("budget (% of data size)")
    ax.set_ylabel("relative what-if cost RC")
    ax.set_title(f"TPC-H SF {doc['options']['scale']:g}, {doc['options']['mixes']} random mixes")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
