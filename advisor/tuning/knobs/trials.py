"""Knob tuning on a shadow: the trial target (``ShadowTarget``, the shadow with its workload runner behind the
``advisor.tuning.target.TrialTarget`` protocol; ``TrialRunner`` is its older name) and the tuning loop (the
workload runners are in ``runners``).

A trial sets a configuration on the shadow (only what differs from the shadow's present one, with a restart
only when a restart-needing knob differs), restores the data if the workload writes, warms up, runs the workload
and turns it into one objective (lower is better). Failures are trials too:

- *infeasible*: the configuration breaks a hard constraint even after repair; it is never run.
- *failed*: the server did not start, crashed or lost connections during the run (out of memory, a crash),
  or the run went past its time limit (``timeout_factor`` x the best run so far, at least ``min_timeout_s``).

A failed trial is stored with its reason, scored for the optimizer as a penalty (``search.PENALTY_FACTOR`` x the
worst objective), and the shadow is brought back to the last configuration that worked. Every trial is in the
store as soon as it ends, with the optimizer's state, so ``resume`` continues an interrupted run.

A replayed workload's trial also keeps each statement's median (ms); the optimizer is told each statement's ratio
to the run's baseline trial (``TrialResult.ratios``, the first trial, the current settings), so a constraint-aware
search learns which configurations slow a statement down as the guard would see it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from advisor.core.domain import KnobChange, TrialResult
from advisor.core.errors import AdvisorError, SandboxError, TargetUnreachable
from advisor.core.progress import Say, silent
from advisor.storage.store import Store
from advisor.tuning.evidence import ArmRound
# the workload runners live in runners.py; importing them from here keeps working
from advisor.tuning.knobs.runners import (MIN_ABS_MS, Measured, PgbenchRunner, ReplayRunner,  # noqa: F401
                                          TrialTimeout, WorkloadRunner, statement_ratios)
from advisor.tuning.target import TrialFailed
from connectors.base import Shadow
from optimizers.base import Optimizer
from optimizers.knobs.search import MAX_SLOWDOWN
from optimizers.knobs.seeding import Seed
from optimizers.knobs.space import KnobSpace


# --- trials ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TuningOptions:
    optimizer: str = "hibo"
    trials: int = 30  # including the baseline and the seeds
    seeds: int = 3
    seed: int = 0
    timeout_factor: float = 3.0
    min_timeout_s: float = 5.0
    use_seeds: bool = True
    objective: str = "latency"  # latency | throughput

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrialRecord:
    number: int
    config: dict[str, str]
    source: str
    result: TrialResult
    duration_s: float
    restarted: bool = False
    statement_ms: dict[str, float] | None = None  # each statement's median in this trial (a replay's trials)

    def slows_a_statement(self, max_slowdown: float = MAX_SLOWDOWN) -> bool:
        """Whether some statement ran ``max_slowdown`` or more slower than at baseline in this trial's pass."""
        worst = self.result.worst_ratio
        return worst is not None and worst >= 1.0 + max_slowdown


@dataclass
class ShadowTarget:
    """The knob trials' ``TrialTarget`` (``advisor.tuning.target``): configurations run on one shadow with its
    workload runner, keeping track of what the shadow has and the last config that worked. ``trial`` is one
    trial over the protocol: apply, one measured pass, the objective (``measured``) as a ``TrialResult``."""

    shadow: Shadow
    runner: WorkloadRunner
    space: KnobSpace
    timeout_factor: float = 3.0
    min_timeout_s: float = 5.0
    say: Say = silent
    current: dict[str, str] = field(default_factory=dict)
    good: dict[str, str] = field(default_factory=dict)
    best_s: float | None = None  # wall time of the fastest successful pass
    last_ms: dict[str, float] | None = None  # per-statement medians of the last trial (None when it failed)
    measured: list[Measured] = field(default_factory=list)  # the last ``measure``'s passes
    restarted: bool = False  # whether the last ``apply`` took a restart

    def __post_init__(self) -> None:
        self.base = self.space.default_config()
        self.current = dict(self.base)
        self.good = dict(self.base)

    def timeout_s(self) -> float:
        """Per-statement limit for the pass: relative to the best pass so far."""
        if self.best_s is None:
            return 600.0
        return max(self.min_timeout_s, self.timeout_factor * self.best_s)

    def _set(self, config: Mapping[str, str]) -> bool:
        """Set ``config`` on the shadow; True when that took a restart."""
        delta = [KnobChange(n, v) for n, v in config.items()
                 if not self.space.units.same_value(self.space.catalog[n], self.current.get(n, ""), v)]
        if not delta:
            return False
        applied = self.shadow.connector.apply(delta)
        self.current = dict(config)
        return applied.restarted

    def recover(self) -> None:
        """Restart the shadow with the last configuration that worked."""
        overrides = {n: v for n, v in self.good.items()
                     if not self.space.units.same_value(self.space.catalog[n], self.base[n], v)}
        self.say("bringing the shadow back with the last working configuration")
        self.shadow.sandbox.recover(overrides)
        self.shadow.sandbox.wait_ready()
        self.current = dict(self.good)

    def apply(self, config: Mapping[str, str]) -> None:
        """Set ``config`` (only what differs; a restart only when a restart-needing knob differs); TrialFailed
        when the server did not come back (the shadow is recovered) or the change was refused."""
        self.restarted = False
        try:
            self.restarted = self._set(config)
        except (SandboxError, TargetUnreachable) as e:
            self.recover()
            raise TrialFailed(f"the server did not come back with this configuration: {e}", True,
                              error=type(e).__name__) from None
        except AdvisorError as e:
            raise TrialFailed(f"could not apply: {e}", error=type(e).__name__) from None

    def measure(self, rounds: int = 1) -> list[ArmRound]:
        """``rounds`` passes (data restored before each): per statement, its median (ms) as the pass's sample;
        each pass's ``Measured`` in ``measured``. TrialFailed on a timeout, a crash (the shadow is recovered when
        it went down) or a failed statement."""
        self.measured = []
        out = []
        for _ in range(rounds):
            try:
                self.runner.restore(self.shadow.connector)
                run_start = time.perf_counter()
                measured = self.runner.run(self.shadow.connector, self.timeout_s())
                wall = time.perf_counter() - run_start
            except TrialTimeout as e:
                raise TrialFailed(f"timeout: {e}", self.restarted, error=type(e).__name__) from None
            except TargetUnreachable as e:
                alive = self.shadow.sandbox.is_running()
                if alive:
                    try:
                        self.shadow.sandbox.wait_ready(30)
                    except AdvisorError:
                        alive = False
                if not alive:
                    self.recover()
                why = "the server crashed during the run (killed, or out of memory)" if not alive \
                    else "the server lost connections"
                raise TrialFailed(f"{why}: {e}", self.restarted, error=type(e).__name__) from None
            except AdvisorError as e:
                raise TrialFailed(str(e), self.restarted, error=type(e).__name__) from None
            if not isinstance(measured, Measured):
                measured = Measured(float(measured))
            self.good = dict(self.current)
            self.best_s = wall if self.best_s is None else min(self.best_s, wall)
            self.measured.append(measured)
            out.append(ArmRound({k: [v] for k, v in (measured.statement_ms or {}).items()}, {}))
        return out

    def trial(self, config: Mapping[str, str]) -> tuple[TrialResult, float, bool]:
        """Run ``config``: (result, seconds, whether it restarted); ``last_ms`` holds its per-statement medians."""
        start = time.perf_counter()
        self.last_ms = None
        try:
            self.apply(config)
            self.measure(1)
        except TrialFailed as e:
            return TrialResult(None, "failed", e.message, error=e.error), time.perf_counter() - start, e.restarted
        measured = self.measured[-1]
        self.last_ms = measured.statement_ms
        return TrialResult(measured.objective), time.perf_counter() - start, self.restarted

    def reset(self) -> None:
        """Put the shadow back to its own configuration."""
        try:
            self._set(self.base)
        except AdvisorError:
            self.good = dict(self.base)
            self.recover()


TrialRunner = ShadowTarget  # its name before the trial target protocol (benches and tests use it)


# --- the tuning loop ------------------------------------------------------------------------------------------


@dataclass
class TuningRun:
    """One tuning run: the baseline first, then the seeds, then the optimizer's asks, each trial stored as it ends
    with the optimizer's state. The optimizer is told every trial (baseline and seeds too). The run ends when the
    budget of trials is spent, or early when the optimizer asks again what it asked last time (it has nothing new
    to try: a one-shot optimizer such as the rules, or a search that converged)."""

    store: Store
    run_id: str
    target_id: str
    trials: TrialRunner
    optimizer: Optimizer
    options: TuningOptions
    seeds: list[Seed] = field(default_factory=list)
    say: Say = silent
    records: list[TrialRecord] = field(default_factory=list)
    on_trial: Callable[[TrialRecord], None] | None = None

    @property
    def space(self) -> KnobSpace:
        return self.trials.space

    def resume_from_store(self) -> None:
        """Load the trials already stored for this run; the optimizer continues from its stored state when that
        state covers every stored trial (exactly where it stopped), else it is told the trials again."""
        saved = self.store.run(self.run_id).get("optimizer_state") or {}
        told: list[TrialRecord] = []
        for row in self.store.trials(self.run_id):
            if row.get("config") is None:
                continue
            status = row["status"]
            result = TrialResult(row["objective"], status, row.get("reason") or "")
            rec = TrialRecord(int(row["number"]), dict(row["config"]), row.get("source") or "", result,
                              row.get("duration_s") or 0.0, statement_ms=row.get("statements"))
            self.records.append(rec)
            told.append(rec)
        reference = self.reference_ms()
        for rec in told:  # ratios to the baseline trial (none for trials stored before per-statement times were)
            if rec.result.status == "measured":
                rec.result = replace(rec.result, ratios=statement_ratios(rec.statement_ms, reference))
        if saved and saved.get("trials") == len(told):
            self.optimizer.restore(saved)
        else:
            for rec in told:
                self.optimizer.tell(tuple(self.space.changes(rec.config)), rec.result)
        if self.records:
            self.say(f"resuming run {self.run_id}: {len(self.records)} trial(s) already done")

    def reference_ms(self) -> dict[str, float] | None:
        """Per-statement medians of the run's baseline trial (the current settings), which ratios are taken to."""
        base = self.baseline()
        return base.statement_ms if base else None

    def _record(self, config: dict[str, str], source: str, result: TrialResult, duration: float,
                restarted: bool, statement_ms: dict[str, float] | None = None) -> TrialRecord:
        if result.status == "measured" and statement_ms:
            reference = self.reference_ms() or (statement_ms if source == "default" else None)
            result = replace(result, ratios=statement_ratios(statement_ms, reference))
        rec = TrialRecord(len(self.records), config, source, result, duration, restarted, statement_ms)
        self.records.append(rec)
        self.optimizer.tell(tuple(self.space.changes(config)), result)
        self.store.add_trial(self.target_id, self.run_id, self.optimizer.name, self.space.changes(config), None,
                             result.status, result.reason or None, number=rec.number, config=config,
                             objective=result.objective, source=source, duration_s=duration,
                             statements=statement_ms, error=result.error or None)
        self.store.update_run(self.run_id, optimizer_state={**self.optimizer.state(), "trials": len(self.records)})
        best = self.best()
        status = (self.trials.runner.display(result.objective) if result.objective is not None
                  else f"{result.status}: {result.reason}")
        self.say(f"trial {rec.number + 1}/{self.options.trials} [{source}] {status}"
                 + (f"; best {self.trials.runner.display(best.result.objective)}" if best else "")
                 + (" (restart)" if restarted else ""))
        if self.on_trial:
            self.on_trial(rec)
        return rec

    def run_config(self, config: dict[str, str], source: str) -> TrialRecord:
        fixed, notes = self.space.repair(config)
        still = self.space.violations(fixed)
        if still:
            return self._record(fixed, source, TrialResult(None, "infeasible", "; ".join(v.message for v in still)),
                                0.0, False)
        if notes:
            self.say(f"adjusted to fit the constraints: {'; '.join(notes)}")
        result, duration, restarted = self.trials.trial(fixed)
        return self._record(fixed, source, result, duration, restarted, self.trials.last_ms)

    def execute(self) -> list[TrialRecord]:
        """Run trials until the budget is spent; returns every trial of the run (resumed ones included)."""
        done_sources = [r.source for r in self.records]
        if "default" not in done_sources and len(self.records) < self.options.trials:
            self.run_config(self.space.default_config(), "default")
        for i, seed in enumerate(self.seeds):
            tag = f"seed:{seed.source}"
            if len(self.records) >= self.options.trials:
                break
            if sum(1 for s in done_sources if s.startswith("seed:")) > i:
                continue
            self.run_config({**self.space.default_config(), **seed.config}, tag)
        last = None
        while len(self.records) < self.options.trials:
            config = self.optimizer.ask(1, current=tuple(self.space.changes(self.trials.current)))[0]
            if config == last:
                self.say(f"{self.optimizer.name} asks again what it asked last: nothing new to try, the run ends "
                         f"after {len(self.records)} of {self.options.trials} trials")
                break
            last = config
            self.run_config({**self.space.default_config(), **{c.name: c.value for c in config}},
                            self.optimizer.name)
        return self.records

    def best(self) -> TrialRecord | None:
        ok = [r for r in self.records if r.result.status == "measured" and r.result.objective is not None]
        return min(ok, key=lambda r: r.result.objective) if ok else None  # type: ignore[arg-type, return-value]

    def baseline(self) -> TrialRecord | None:
        return next((r for r in self.records if r.source == "default" and r.result.status == "measured"), None)


# --- comparing two configurations on the shadow --------------------------------------------------------------


@dataclass(frozen=True)
class ObjectiveComparison:
    baseline: list[float]
    candidate: list[float]
    gain: float  # 1 - candidate/baseline, on medians
    ci: tuple[float, float]

    @property
    def significant_loss(self) -> bool:
        return self.ci[1] < 0


def compare_configs(trials: TrialRunner, baseline: Mapping[str, str], candidate: Mapping[str, str], rounds: int = 4,
                    say: Say = silent, seed: int = 0) -> ObjectiveComparison:
    """ABBA-interleaved passes of two configurations; gain with a paired bootstrap 95% interval over rounds."""
    a: list[float] = []
    b: list[float] = []
    for i in range(rounds):
        for arm in (("A", "B") if i % 2 == 0 else ("B", "A")):
            config = baseline if arm == "A" else candidate
            result, _, _ = trials.trial(config)
            if result.objective is None:
                raise AdvisorError(f"the {'baseline' if arm == 'A' else 'candidate'} failed while validating: "
                                   f"{result.reason}")
            (a if arm == "A" else b).append(result.objective)
        say(f"validation round {i + 1}/{rounds}: baseline {trials.runner.display(a[-1])}, "
            f"candidate {trials.runner.display(b[-1])}")
    A, B = np.array(a), np.array(b)
    gain = 1.0 - statistics.median(b) / statistics.median(a)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, rounds, size=(2000, rounds))
    boots = 1.0 - np.median(B[idx], axis=1) / np.median(A[idx], axis=1)
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return ObjectiveComparison(a, b, gain, (float(lo), float(hi)))


def best_so_far(records: Sequence[TrialRecord]) -> list[float]:
    out: list[float] = []
    best = math.inf
    for r in records:
        if r.result.objective is not None and r.result.status == "measured":
            best = min(best, r.result.objective)
        out.append(best)
    return out
