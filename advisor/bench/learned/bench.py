"""``advisor bench learned-index``: every learned-index tuner at the same budget on datasets x workloads, the
sorted-array binary search on the same streams, LITune meta-trained once on held-out tasks, and drift.

The grid: ``datasets`` (synthetic key sets, ``keys`` each) x ``workloads`` (named mixes) x ``seeds`` x index
(``indexes``, ALEX-like by default; PGM, read-only, on the read-only workload). Per cell, each tuner runs through
the pipeline's own entry point (``advisor.tuning.learned_index.pipeline.tune_index``: the defaults' trial, ``budget``
evaluations with the safety cut, the best ``finalists`` re-measured beside the defaults in ``finalist_rounds``
rotating rounds for the pick, then ``rounds`` interleaved validation rounds of the pick against the defaults),
so the cell reports per tuner (with ``finalists``, each arm's median CPU ns/op and rounds, and ``picked``, why): validated tuned and default throughput (ops/s) and p99 (ns), the gain (tuned over
defaults, one interleaved run), evaluations to reach 95% of the cell's best trial throughput, unsafe evaluations,
and ``below_defaults`` where the validated tuned figure is under the defaults' (flagged, never hidden). The
sorted array (``connectors.factory.binary_search_baseline``) runs the same stream in rounds interleaved with the
index at the best tuner's configuration.

LITune meta-trains once per bench (``meta``) on datasets the grid does not evaluate (or, when every dataset
is evaluated, on other keys of them: said in the JSON), stores its model under ``<out>/models`` and every cell's
LITune loads it (as IA2's models are reused). Drift: ``drift``. Targets and plots: ``report``.
"""

from __future__ import annotations

import json
import statistics
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.bench.learned import meta, report
from advisor.bench.learned.drift import run_drift
from advisor.bench.learned.measure import side_by_side
from advisor.core.errors import InvalidInput
from advisor.core.hardware import detect
from advisor.core.params import ParamSpace
from advisor.core.progress import Say, silent
from advisor.tuning.learned_index import finalists as picking
from advisor.tuning.learned_index.pipeline import operations, problem, tune_index
from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.learned_index.training import features
from connectors import factory
from optimizers import registry
from workloads.datasets.learned import keysets, mixes

TUNERS = ("random", "grid", "tpe", "gp", "hibo", "litune")
REACH = 0.95  # evaluations to reach this fraction of the cell's best trial throughput


@dataclass(frozen=True)
class LearnedBenchOptions:
    datasets: tuple[str, ...] = keysets.SOSD_LIKE
    workloads: tuple[str, ...] = mixes.MIXES
    seeds: tuple[int, ...] = (1, 2)
    keys: int = 200_000
    budget: int = 30
    tuners: tuple[str, ...] = TUNERS
    indexes: tuple[str, ...] = ("alex",)  # pgm joins on read-only workloads (it is read-only)
    pgm_read_only: bool = True
    rounds: int = 3  # interleaved validation rounds per tuner (and for the sorted array)
    finalists: int = picking.FINALISTS  # the search's best configurations re-measured beside the defaults ...
    finalist_rounds: int = picking.ROUNDS  # ... in this many rotating rounds, for the pick (0: the search's best)
    episodes: int = 300  # LITune's meta-training episodes
    litune_model: str = "trained"  # trained: meta-trained here on the families not evaluated; shipped: advisor train's
    device: str = "auto"  # LITune's training device: auto, cpu, cuda
    drift: bool = True
    drift_dataset: str = "books"
    drift_from: str = "read-heavy"
    drift_to: str = "write-heavy"
    drift_phases: int = 3
    drift_ops: int = 20_000  # operations per phase (and initial keys: as many)
    drift_budget: int = 12  # from-scratch tuning per phase, and LITune's first phase
    online_budget: int = 6  # LITune's evaluations in each later phase (online, O2)
    drift_tuner: str = "hibo"  # the re-tuned-from-scratch strategy
    out_dir: str = "bench-results/learned-index"

    def check(self) -> None:
        """Refuse, in one line, names the bench does not know and sizes it cannot run."""
        for what, chosen, known in (("datasets", self.datasets, keysets.SYNTHETIC),
                                    ("workloads", self.workloads, mixes.MIXES),
                                    ("tuners", self.tuners, TUNERS),
                                    ("indexes", self.indexes, factory.learned_indexes())):
            bad = [n for n in chosen if n not in known]
            if bad or not chosen:
                raise InvalidInput(f"unknown {what} {', '.join(bad) or '(none given)'}: choose from "
                                   f"{', '.join(known)}")
        if self.drift_dataset not in keysets.SYNTHETIC:
            raise InvalidInput(f"unknown drift dataset {self.drift_dataset!r}: choose from "
                               f"{', '.join(keysets.SYNTHETIC)}")
        mixes.parse_mix(self.drift_from), mixes.parse_mix(self.drift_to)
        if self.litune_model not in ("trained", "shipped"):
            raise InvalidInput(f"unknown LITune model {self.litune_model!r}: choose trained or shipped")
        if self.device not in ("auto", "cpu", "cuda"):
            raise InvalidInput(f"unknown device {self.device!r}: choose auto, cpu or cuda")
        if self.keys < 2_000 or self.budget < 2 or self.rounds < 1 or not self.seeds:
            raise InvalidInput("the bench needs --keys >= 2000, --budget >= 2, --rounds >= 1 and a seed")
        if self.finalists < 0 or self.finalist_rounds < 0:
            raise InvalidInput("the bench needs --finalists >= 0 and --finalist-rounds >= 0")


@dataclass(frozen=True)
class Cell:
    dataset: str
    workload: str
    seed: int
    index: str

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.workload}/s{self.seed}/{self.index}"


def cells(o: LearnedBenchOptions) -> list[Cell]:
    """The grid, in order: every index of ``indexes`` that can run the workload, PGM added on read-only ones."""
    out = []
    for d in o.datasets:
        for w in o.workloads:
            inserts = mixes.parse_mix(w).insert > 0
            names = list(o.indexes) + (["pgm"] if o.pgm_read_only and not inserts and "pgm" not in o.indexes else [])
            for s in o.seeds:
                out += [Cell(d, w, s, i) for i in names if not (inserts and factory.learned_index(i).read_only)]
    return out


@dataclass
class TunerRow:
    tuner: str
    default: dict
    tuned: dict
    gain: float
    evaluations: int
    unsafe: int
    reach95: int | None  # evaluations (the defaults' trial counted) to the cell's 95% mark; None: never
    accepted: bool | None  # the interleaved validation's verdict (None: nothing changed or not validated)
    below_defaults: bool
    best: dict
    trace: list = field(default_factory=list)  # per evaluation: throughput (0 when failed or unsafe)
    objectives: list = field(default_factory=list)  # per evaluation: ns/op (None when failed or unsafe)
    seconds: float = 0.0
    # what the validation decided on: the gain in thread CPU time per operation (1 - tuned / defaults) and its 95%
    # interval, the minimum gain its lower end had to clear, the rounds kept and how it went (its load among it)
    cpu_gain: float | None = None
    cpu_gain_ci: list | None = None
    min_gain: float | None = None
    rounds: int = 0
    measured: str = ""
    # the pick's re-measure (``advisor.tuning.learned_index.finalists``): each arm (the defaults first) with its search
    # and median CPU ns/op, rounds and whether picked; and why the pick ([] and "": none, the search's best)
    finalists: list = field(default_factory=list)
    picked: str = ""

    @property
    def verdict(self) -> str:
        return {True: "accepted", False: "rejected", None: "unchanged"}[self.accepted]


def create(name: str, prob, seed: int, **options):
    """A learned-index optimizer with those of ``options`` its ``_setup`` names (LITune's device and episodes),
    the others left out: the searches take ``**options`` through to their base, which refuses unknown ones."""
    import inspect

    named = inspect.signature(registry.get("learned-index", name)._setup).parameters
    return registry.create("learned-index", name, prob, seed=seed,
                           **{k: v for k, v in options.items() if k in named and named[k].kind != named[k].VAR_KEYWORD})


def first_reach(trace, mark: float) -> int | None:
    """The first evaluation (1-based) whose throughput is at least ``mark``.

    >>> first_reach([1.0, 5.0, 9.0], 4.5), first_reach([1.0], 2.0)
    (2, None)
    """
    return next((i + 1 for i, v in enumerate(trace) if v >= mark), None)


class LearnedIndexBench:
    def __init__(self, options: LearnedBenchOptions = LearnedBenchOptions(), say: Say = silent):
        options.check()
        self.options, self.say, self.out = options, say, Path(options.out_dir)

    def run(self) -> dict:
        o, started = self.options, time.time()
        self.out.mkdir(parents=True, exist_ok=True)
        hw = detect()
        grid = cells(o)
        indexes = tuple(dict.fromkeys(c.index for c in grid))
        training = meta.meta_train(o, self.out / "models", self.say, indexes) if "litune" in o.tuners \
            else None
        results = []
        for i, cell in enumerate(grid):
            self.say(f"cell {i + 1}/{len(grid)}: {cell.name}")
            results.append(self.cell(cell))
        drift = run_drift(o, self.out / "models", self.say) if o.drift else None
        doc = {"bench": "learned-index", "options": {**asdict(o)},
               "machine": {"cores": hw.cores, "memory_gb": round(hw.memory_bytes / 1024**3, 1)},
               "training": training, "cells": results, "drift": drift,
               "wall_s": round(time.time() - started, 1)}
        doc["targets"] = report.targets(doc)
        (self.out / "learned-index.json").write_text(json.dumps(doc, indent=2, default=str))
        report.plot(doc, self.out / "learned-index.png")
        if drift:
            report.plot_drift(drift, self.out / "learned-index-drift.png")
        return doc

    def cell(self, cell: Cell) -> dict:
        o = self.options
        mix = mixes.parse_mix(cell.workload)
        keys = keysets.synthetic(cell.dataset, o.keys, cell.seed)
        initial, stream = mixes.workload(keys, mix, operations(len(keys), mix.insert), cell.seed)
        engine = factory.learned_index(cell.index)
        space, feats = ParamSpace(engine.parameters()), features(keys, mix)
        rows: list[TunerRow] = []
        for name in run_order(o.tuners, cell.name):
            prob = problem(space, engine.name, feats)
            opt = create(name, prob, cell.seed, device=o.device, episodes=o.episodes)
            opt.prepare(self.out / "models", self.say)
            start = time.perf_counter()
            found = tune_index(engine, initial, [stream], opt, o.budget, seed=cell.seed, rounds=o.rounds,
                               finalists=o.finalists, finalist_rounds=o.finalist_rounds)
            rows.append(row_of(name, found, time.perf_counter() - start))
            self.say(f"  {name}: {rows[-1].tuned['throughput_ops']:,.0f} ops/s tuned vs "
                     f"{rows[-1].default['throughput_ops']:,.0f} defaults ({rows[-1].gain:.2f}x), "
                     f"{rows[-1].unsafe} unsafe")
        rows.sort(key=lambda r: o.tuners.index(r.tuner))  # reported in the order asked
        best = max((v for r in rows for v in r.trace), default=0.0)
        for r in rows:
            r.reach95 = first_reach(r.trace, REACH * best)
        sorted_array = self.sorted_array(engine, initial, stream, max(rows, key=lambda r: r.gain))
        defaults = {k: statistics.median(r.default[k] for r in rows) for k in ("throughput_ops", "p99_ns")}
        return {"cell": cell.name, **asdict(cell), "keys": len(keys), "operations": int(len(stream.ops)),
                "best_trial_throughput": best, "defaults": defaults, "sorted_array": sorted_array,
                "tuners": [row_doc(r) for r in rows]}

    def sorted_array(self, engine, initial, stream, best: TunerRow) -> dict:
        """The sorted array with binary search on the same stream, measured side by side (``measure``)
        with the index at the best tuner's configuration (the highest validated gain), each on its own harness."""
        sorted_engine = factory.binary_search_baseline()
        sorted_target = HarnessTarget(sorted_engine, initial, [stream])
        med = side_by_side({"index": (HarnessTarget(engine, initial, [stream]), best.best),
                            "sorted": (sorted_target, sorted_target.space.default_config())}, self.options.rounds)
        return {"throughput_ops": med["sorted"]["throughput_ops"], "p99_ns": med["sorted"]["p99_ns"],
                "index_throughput_ops": med["index"]["throughput_ops"], "index_p99_ns": med["index"]["p99_ns"],
                "index_tuner": best.tuner,
                "index_over_sorted": round(med["index"]["throughput_ops"] / med["sorted"]["throughput_ops"], 4)}


def row_of(name: str, found, seconds: float) -> TunerRow:
    """A tuner's row from the pipeline's result: validated figures, per-evaluation traces."""
    trace, objectives = [], []
    for t in found.trials:
        ok = t.result.status == "measured" and t.result.objective is not None
        trace.append(float((t.result.metrics or {}).get("throughput_ops", 0.0)) if ok else 0.0)
        objectives.append(float(t.result.objective) if ok else None)
    default = {k: float(found.default.get(k, 0.0)) for k in ("throughput_ops", "p99_ns")}
    tuned = {k: float(found.tuned.get(k, 0.0)) for k in ("throughput_ops", "p99_ns")}
    gain = tuned["throughput_ops"] / default["throughput_ops"] if default["throughput_ops"] > 0 else 0.0
    ev = found.evidence
    accepted = None if ev is None else bool(ev.accepted)
    row = TunerRow(name, default, tuned, round(gain, 4), found.evaluations, found.unsafe_evaluations, None,
                   accepted, tuned["throughput_ops"] < default["throughput_ops"], dict(found.best), trace,
                   objectives, round(seconds, 2))
    row.finalists, row.picked = [f.doc() for f in found.finalists], found.picked
    if ev is not None:
        row.cpu_gain, row.cpu_gain_ci = round(ev.gain, 4), [round(v, 4) for v in ev.gain_ci]
        row.min_gain, row.rounds, row.measured = ev.min_gain, ev.rounds, ev.measured
    return row


def row_doc(row: TunerRow) -> dict:
    """A row as the JSON document holds it (its verdict spelled out)."""
    return {**asdict(row), "verdict": row.verdict}


def interval(r: dict) -> str:
    """A row's validated CPU-time gain and its interval, as the table prints it.

    >>> interval({"cpu_gain": 0.1234, "cpu_gain_ci": [0.05, 0.2]}), interval({"cpu_gain": None})
    ('+12.3% [+5.0%, +20.0%]', '-')
    """
    if r.get("cpu_gain") is None:
        return "-"
    lo, hi = r["cpu_gain_ci"]
    return f"{r['cpu_gain']:+.1%} [{lo:+.1%}, {hi:+.1%}]"


def table(doc: dict) -> str:
    """The grid as text: one line per cell and tuner, then the targets."""
    head = (f"{'cell':34} {'tuner':8} {'default/s':>11} {'tuned/s':>11} {'gain':>6} {'p99 ns':>8} "
            f"{'reach95':>7} {'unsafe':>6}  {'verdict':9} {'CPU-time gain [95% interval]':30} rounds")
    lines = ["learned-index bench: validated throughput (ops/s, wall time), p99 (ns), evaluations to 95% of the "
             "cell's best; the validation's verdict, decided on its CPU-time gain per operation and interval",
             head, "-" * len(head)]
    for c in doc["cells"]:
        for r in c["tuners"]:
            flag = " BELOW DEFAULTS" if r["below_defaults"] else ""
            verdict = {True: "accepted", False: "rejected", None: "unchanged"}[r["accepted"]]
            lines.append(f"{c['cell']:34} {r['tuner']:8} {r['default']['throughput_ops']:>11,.0f} "
                         f"{r['tuned']['throughput_ops']:>11,.0f} {r['gain']:>5.2f}x {r['tuned']['p99_ns']:>8,.0f} "
                         f"{r['reach95'] if r['reach95'] is not None else '-':>7} {r['unsafe']:>6}  {verdict:9} "
                         f"{interval(r):30} {r.get('rounds') or '-'}{flag}")
            if r.get("picked"):
                lines.append(f"{'':34} {'':8} picked {r['picked']} (the defaults and {len(r['finalists']) - 1} "
                             f"finalists re-measured in {r['finalists'][0]['rounds']} rotating rounds)")
        sa = c["sorted_array"]
        lines.append(f"{c['cell']:34} {'sorted':8} {'':>11} {sa['throughput_ops']:>11,.0f} {'':>6} "
                     f"{sa['p99_ns']:>8,.0f}   (binary search; {sa['index_tuner']}'s configuration "
                     f"{sa['index_throughput_ops']:,.0f}/s alongside: {sa['index_over_sorted']:.2f}x)")
    for index, t in (doc.get("training") or {}).items():
        lines.append(f"\nLITune meta-training for {index}: {t['seconds']:.0f} s on {t['device']}, {t['episodes']} "
                     f"episodes, {len(t['tasks'])} tasks; {t['held_out']}")
    lines.append(report.targets_table(doc))
    lines.append(f"wall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores, "
                 f"{doc['machine']['memory_gb']} GiB")
    return "\n".join(lines)


def meta_train_only(options: LearnedBenchOptions, say: Say = silent) -> dict:
    """``--meta-train-only``: LITune's meta-training for the grid's indexes, timed (seconds, device, episodes),
    nothing else run; also saved as ``<out>/meta-train.json``."""
    options.check()
    out = Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hw = detect()
    indexes = tuple(dict.fromkeys(c.index for c in cells(options)))
    doc = {"bench": "learned-index meta-training", "requested_device": options.device, "episodes": options.episodes,
           "machine": {"cores": hw.cores, "memory_gb": round(hw.memory_bytes / 1024**3, 1)},
           "training": meta.meta_train(options, out / "models", say, indexes)}
    (out / "meta-train.json").write_text(json.dumps(doc, indent=2, default=str))
    return doc


def summarize(path: str, out_dir: str) -> dict:
    """``--summarize FILE``: a saved learned-index.json's targets recomputed from its measurements (nothing run),
    saved with its plots under ``out_dir``."""
    try:
        doc = json.loads(Path(path).read_text())
        doc["cells"], doc["machine"]  # noqa: B018  (a bench document)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InvalidInput(f"{path} is not a learned-index bench document: {e}") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc["targets"] = report.targets(doc)
    (out / "learned-index.json").write_text(json.dumps(doc, indent=2, default=str))
    report.plot(doc, out / "learned-index.png")
    if doc.get("drift"):
        report.plot_drift(doc["drift"], out / "learned-index-drift.png")
    return doc


def run_order(tuners: tuple[str, ...], cell: str) -> tuple[str, ...]:
    """The order the tuners run in on ``cell``: the list rotated by a hash of the cell's name, so that no tuner is
    always first or last on a machine whose load drifts during a cell (the same cell, the same order).

    >>> run_order(("random", "gp", "litune"), "normal/balanced/s1/alex")
    ('gp', 'litune', 'random')
    >>> sorted(run_order(("random", "gp", "litune"), "any")) == sorted(("random", "gp", "litune"))
    True
    """
    k = zlib.crc32(cell.encode()) % len(tuners) if tuners else 0
    return tuple(tuners[k:]) + tuple(tuners[:k])
