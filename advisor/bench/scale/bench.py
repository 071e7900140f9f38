"""``advisor bench scale``: what parallel trials buy a knob search, measured, and projected to many workers.

For each workload (a knob suite such as ``planner``, or a generated ``gen-``/``multi-<schema>.s<seed>``) on a local
"production" server of the engine, each statement kept on one core (``KnobProfile.single_core``, left out of the
space): a warm replica of it (thin clones; full copies when the engine or the machine has
none, said), then for each optimizer seed the same search (``optimizer``, ``trials`` in all, no seed configurations)
with 1, 2, ... trials side by side (``parallel``), each slot on its own clone (``advisor.tuning.knobs.slots``: the
run's own path). Every trial's end is timestamped. Per seed and parallelism: the wall time, trials per hour, the best
gain over the run's own baseline trial as wall-clock time goes on, and the time until the run came within
``tolerance`` (a gain's points) of the serial run's final best gain, over the serial run's whole wall time
(``reach_ratio``, per seed). Per workload the means over seeds, and the issue's figure on them
(``reach_mean_curve``: when the seeds' mean best gain so far comes within ``tolerance`` of the serial seeds' mean
final best, over the serial runs' mean wall time); the target (issue 47): 2 parallel clones at most
``REACH_TARGET`` on every workload, with a final gain no worse (within ``tolerance``).

Then ``simulate.project`` takes the serial runs' measured trial times, seconds per ask and the clone time to project
the wall time and trials per hour of 16 and 64 workers (assumptions in the JSON). Nothing is asserted: the table
prints what was measured, ``scale.json`` and ``scale.png`` keep it. A run of parallel trials on a 2-core machine
shares its cores (statements that each use one core); the gains of a parallel run are measured under that load
against a baseline measured alone, which counts against it.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.bench.knobs import generated
from advisor.bench.scale.simulate import ASSUMPTIONS, project
from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from advisor.storage.store import Store, new_id
from advisor.tuning.knobs import slots
from advisor.tuning.knobs.pipeline import KnobPlan, leave_out_failing
from advisor.tuning.knobs.runners import ReplayRunner
from advisor.tuning.knobs.trials import ShadowTarget, TuningOptions, TuningRun
from advisor.tuning.shadows import Shadows
from connectors import factory
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.space import KnobSpace, SpaceOptions
from workloads.datasets import knob_suites, suites

REACH_TARGET = 0.65  # issue 47: 2 clones reach the serial best in at most 0.65x its wall time


@dataclass(frozen=True)
class ScaleOptions:
    engine: str = "postgres"
    workloads: tuple[str, ...] = ("planner", "multi-tpch.s1")
    seeds: tuple[int, ...] = (1, 2, 3)
    trials: int = 12
    parallel: tuple[int, ...] = (1, 2)
    optimizer: str = "hibo"
    statements: int = 8  # a generated workload's
    repeats: int = 1  # executions of each statement per trial
    tolerance: float = 0.05
    out_dir: str = "bench-results/scale"


@dataclass
class RunRecord:
    workload: str
    seed: int
    parallel: int
    wall_s: float
    clone_s: float  # making the run's extra clones (0 for one slot)
    ask_s: float  # seconds per optimizer ask, mean
    baseline: float | None
    trials: list[dict] = field(default_factory=list)  # {ended_s, objective, status, duration_s, source}

    def curve(self) -> list[tuple[float, float]]:
        """(ended_s, best gain so far over the run's baseline) per trial, in the order they ended."""
        best, out = 0.0, []
        for t in self.trials:
            if t["status"] == "measured" and self.baseline and t["objective"] is not None:
                best = max(best, 1.0 - t["objective"] / self.baseline)
            out.append((t["ended_s"], best))
        return out

    @property
    def best_gain(self) -> float:
        return self.curve()[-1][1] if self.trials else 0.0

    def reached(self, gain: float) -> float | None:
        """Seconds until the best gain so far was at least ``gain``; None when it never was."""
        return next((s for s, g in self.curve() if g >= gain), None)


def run(options: ScaleOptions = ScaleOptions(), say: Say = silent) -> dict:
    started = time.time()
    records: list[RunRecord] = []
    notes: list[str] = []
    with factory.sandbox(options.engine, "bench-scale") as sandbox, \
            tempfile.TemporaryDirectory(prefix="advisor-scale-") as tmp:
        store = Store(str(Path(tmp) / "advisor.duckdb"))
        try:
            for i, name in enumerate(options.workloads):
                try:
                    records += _workload(options, sandbox, store, Path(tmp), i, name, notes, say)
                except AdvisorError as e:
                    notes.append(f"{name}: left out: {e}")
                    say(f"[{name}] left out: {e}")
        finally:
            store.close()
    doc = summarize(options, records, notes)
    doc["seconds"] = round(time.time() - started, 1)
    out = Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(doc, indent=2))
    from advisor.bench.scale.report import plot

    plot(doc, out / "scale.png")
    return doc


def _workload(options: ScaleOptions, sandbox, store: Store, tmp: Path, i: int, name: str, notes: list[str],
              say: Say) -> list[RunRecord]:
    tag = f"[{name}]"
    dsn = sandbox.create_database(f"scale{i}")
    target = factory.connector(dsn)
    bound = _load(target, name, options, lambda m: say(f"{tag} {m}"))
    hw = detect()
    profile = target.knob_profile()
    if profile.single_core:  # each statement on one core (the condition), kept out of the search
        from advisor.core.domain import KnobChange

        target.apply([KnobChange(k, v) for k, v in profile.single_core.items()])
        say(f"{tag} one core per statement: {', '.join(f'{k} = {v}' for k, v in profile.single_core.items())}")
    space = KnobSpace.build(target.knob_catalog(), hw, profile,
                            SpaceOptions(exclude=tuple(profile.single_core)))
    try:
        replica = factory.build_replica(target, tmp / f"replica{i}", lambda m: say(f"{tag} {m}"))
        shadows = Shadows.of_replica(replica, target, say)
    except AdvisorError as e:
        replica, shadows = None, Shadows(unavailable=str(e))
        notes.append(f"{name}: full copies, no thin clones ({e})")
    say(f"{tag} shadows: {shadows.planned()['line']}")
    out = []
    try:
        for seed in options.seeds:
            for p in options.parallel:
                out.append(_search(options, store, target, shadows, space, bound, name, seed, p, say))
    finally:
        if replica is not None:
            replica.remove()
    return out


def _load(target, name: str, options: ScaleOptions, say: Say) -> list:
    parsed = generated.parse(name)
    if parsed is not None:
        generated.load(target, parsed.schema, None, say)
        bound = generated.statements(target, parsed, options.statements, say)
    else:
        suite = knob_suites.get(name)
        suites.prepare(target, suite, progress=say)
        bound = suite.statements(options.seeds[0], target.dialect)
    if not bound:
        raise AdvisorError("no statement could be drawn")
    return bound


def _search(options: ScaleOptions, store: Store, target, shadows: Shadows, space: KnobSpace, bound: list, name: str,
            seed: int, parallel: int, say: Say) -> RunRecord:
    tag = f"[{name} seed {seed} x{parallel}]"
    tell = (lambda m: say(f"{tag} {m}"))
    tuning = TuningOptions(optimizer=options.optimizer, trials=options.trials, seed=seed, use_seeds=False,
                           parallel=parallel)
    plan = KnobPlan(tuning, repeats=options.repeats)
    opt = registry.create("knobs", options.optimizer, KnobProblem(space, "dw"), seed=seed)
    asks: list[float] = []
    ask = opt.ask

    def timed(n=1, **kw):
        t = time.perf_counter()
        try:
            return ask(n, **kw)
        finally:
            asks.append(time.perf_counter() - t)

    opt.ask = timed
    with shadows.clone(target, say=tell) as shadow:
        kept, _ = leave_out_failing(shadow, bound, tell)
        trials = ShadowTarget(shadow, ReplayRunner(kept, repeats=options.repeats), space, say=tell)
        t_clone = time.monotonic()
        with slots.trial_executor(trials, plan, target, shadows, kept, tell) as executor:
            clone_s = time.monotonic() - t_clone
            run_id = new_id()
            store.add_run(run_id, f"bench:{name}", "knobs", options.optimizer, {"tuning": tuning.to_dict()})
            t0 = time.monotonic()
            ended: list[float] = []
            loop = TuningRun(store, run_id, f"bench:{name}", trials, opt, tuning, [], tell,
                             on_trial=lambda rec: ended.append(time.monotonic() - t0), executor=executor)
            records = loop.execute()
            wall = time.monotonic() - t0
    base = next((r.result.objective for r in records if r.source == "default"), None)
    rec = RunRecord(name, seed, parallel, round(wall, 2), round(clone_s if parallel > 1 else 0.0, 2),
                    round(statistics.mean(asks), 3) if asks else 0.0, base)
    rec.trials = [{"ended_s": round(s, 2), "objective": r.result.objective, "status": r.result.status,
                   "duration_s": round(r.duration_s, 3), "source": r.source} for s, r in zip(ended, records)]
    say(f"{tag} {len(records)} trials in {wall:.1f} s; best gain {rec.best_gain:+.1%}")
    return rec


def _mean_reach(runs: list[RunRecord], serial: list[RunRecord], tolerance: float) -> float | None:
    """The issue's figure, over seeds: the first wall-clock second at which ``runs``' best gain so far, averaged over
    their seeds, is within ``tolerance`` of the serial runs' final best gain averaged over theirs, over the serial
    runs' mean wall time; None when the average never gets there.

    >>> a, b = RunRecord("w", 1, 2, 10.0, 0, 0, 100.0), RunRecord("w", 1, 1, 20.0, 0, 0, 100.0)
    >>> a.trials = [{"ended_s": 3.0, "objective": 80.0, "status": "measured"}]
    >>> b.trials = [{"ended_s": 18.0, "objective": 79.0, "status": "measured"}]
    >>> _mean_reach([a], [b], 0.05)
    0.15
    """
    if not runs or not serial:
        return None
    goal = statistics.mean(r.best_gain for r in serial) - tolerance
    wall = statistics.mean(r.wall_s for r in serial)
    curves = [r.curve() for r in runs]
    for t in sorted({s for c in curves for s, _ in c}):
        mean = statistics.mean(max([g for s, g in c if s <= t], default=0.0) for c in curves)
        if mean >= goal:
            return round(t / wall, 3) if wall > 0 else None
    return None


def summarize(options: ScaleOptions, records: list[RunRecord], notes: list[str]) -> dict:
    """Per workload and parallelism: means over seeds of wall time, trials per hour, final best gain and the
    reach ratio; the target's verdict; the projection from the serial runs' costs."""
    rows = []
    for name in dict.fromkeys(r.workload for r in records):
        serial = {r.seed: r for r in records if r.workload == name and r.parallel == 1}
        for p in options.parallel:
            runs = [r for r in records if r.workload == name and r.parallel == p]
            reach = []
            for r in runs:
                s = serial.get(r.seed)
                if s is None or s.wall_s <= 0:
                    continue
                t = r.reached(s.best_gain - options.tolerance)
                reach.append(t / s.wall_s if t is not None else None)
            known = [x for x in reach if x is not None]
            mean_reach = _mean_reach(runs, list(serial.values()), options.tolerance)
            rows.append({"workload": name, "parallel": p, "seeds": len(runs), "reach_mean_curve": mean_reach,
                         "wall_s": round(statistics.mean(r.wall_s for r in runs), 1),
                         "trials_per_hour": round(statistics.mean(len(r.trials) * 3600 / r.wall_s for r in runs), 1),
                         "best_gain": round(statistics.mean(r.best_gain for r in runs), 4),
                         "reach_ratio": round(statistics.mean(known), 3) if known and len(known) == len(reach)
                         else None, "reach_each": [None if x is None else round(x, 3) for x in reach]})
    two = [r for r in rows if r["parallel"] == 2]
    ones = {r["workload"]: r for r in rows if r["parallel"] == 1}
    verdict = None
    if two:
        ratios = [r["reach_mean_curve"] for r in two]
        each = [r["reach_ratio"] for r in two]
        verdict = {"reach_ratio_mean": round(statistics.mean(ratios), 3) if None not in ratios else None,
                   "reach_ratio_worst": max(ratios) if None not in ratios else None,
                   "reach_ratio_per_seed_mean": round(statistics.mean(each), 3) if None not in each else None,
                   "wall_ratio_mean": round(statistics.mean(r["wall_s"] / ones[r["workload"]]["wall_s"]
                                                            for r in two if r["workload"] in ones), 3),
                   "quality_no_worse": all(r["best_gain"] >= ones[r["workload"]]["best_gain"] - options.tolerance
                                           for r in two if r["workload"] in ones),
                   "target": REACH_TARGET}
        verdict["met"] = bool(verdict["reach_ratio_worst"] is not None and verdict["reach_ratio_worst"] <= REACH_TARGET
                              and verdict["quality_no_worse"])
    serial_runs = [r for r in records if r.parallel == 1]
    trial_s = [t["duration_s"] for r in serial_runs for t in r.trials if t["source"] != "default"]
    ask_s = statistics.mean(r.ask_s for r in serial_runs) if serial_runs else 0.0
    clones = [r.clone_s for r in records if r.parallel > 1]
    clone_s = statistics.mean(clones) / max(1, max(options.parallel) - 1) if clones else 0.0
    return {"options": asdict(options), "machine": asdict(detect()), "runs": [asdict(r) for r in records],
            "rows": rows, "target": verdict, "notes": notes,
            "projection": {"assumptions": ASSUMPTIONS, "trial_s_median": round(statistics.median(trial_s), 3)
                           if trial_s else None, "ask_s": round(ask_s, 3), "clone_s": round(clone_s, 2),
                           "rows": project(trial_s, ask_s, clone_s)}}
