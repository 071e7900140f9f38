"""Knob tuning on a shadow: the trial target (``ShadowTarget``, the shadow with its workload runner behind the
``advisor.tuning.target.TrialTarget`` protocol; ``TrialRunner`` is its older name) and the tuning loop (the
workload runners are in ``runners``; the loop itself is the one every searching kind shares,
``advisor.tuning.trials.TrialLoop``), and the comparison of two configurations on the shadow (``compare_configs``:
through the measurement engine, ``advisor.tuning.measure``, into Evidence on the objective).

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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from advisor.core.domain import Evidence, TrialResult
from advisor.core.errors import AdvisorError, SandboxError, TargetUnreachable
from advisor.core.progress import Say, silent
from advisor.storage.store import Store
from advisor.tuning.evidence import ArmRound, compare
# the workload runners live in runners.py; importing them from here keeps working
from advisor.tuning.knobs.runners import (Measured, PgbenchRunner, ReplayRunner,  # noqa: F401
                                          TrialTimeout, WorkloadRunner)
from advisor.tuning.measure import Measured as MeasuredRounds
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.target import TrialFailed
from advisor.tuning.trials import TrialLoop, TrialRecord  # noqa: F401  (the trial record: imported from here too)
from connectors.base import Shadow
from optimizers.base import Optimizer
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
    parallel: int = 1  # trials side by side, each on a thin clone of its own
    ray: str | None = None  # a Ray cluster's address (or auto) the trials run on; None: the ADVISOR_RAY setting

    def to_dict(self) -> dict:
        return asdict(self)


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
    current: Mapping[str, str] = field(default_factory=dict)  # a KnobConfig once built
    good: Mapping[str, str] = field(default_factory=dict)
    best_s: float | None = None  # wall time of the fastest successful pass
    last_ms: dict[str, float] | None = None  # per-statement medians of the last trial (None when it failed)
    measured: list[Measured] = field(default_factory=list)  # the last ``measure``'s passes
    restarted: bool = False  # whether the last ``apply`` took a restart

    def __post_init__(self) -> None:
        self.base = self.space.default_config()
        self.current = self.base
        self.good = self.base

    def display(self, objective: float) -> str:
        """An objective in words (``123.4 workload ms``)."""
        return self.runner.display(objective)

    def timeout_s(self) -> float:
        """Per-statement limit for the pass: relative to the best pass so far."""
        if self.best_s is None:
            return 600.0
        return max(self.min_timeout_s, self.timeout_factor * self.best_s)

    def _set(self, config: Mapping[str, str]) -> bool:
        """Set ``config`` on the shadow; True when that took a restart."""
        config = self.space.config(config)
        delta = config.delta(self.current)
        if not delta:
            return False
        applied = self.shadow.connector.apply(list(delta))
        self.current = config
        return applied.restarted

    def recover(self) -> None:
        """Restart the shadow with the last configuration that worked."""
        overrides = {c.name: c.value for c in self.space.config(self.good).changes()}
        self.say("bringing the shadow back with the last working configuration")
        self.shadow.sandbox.recover(overrides)
        self.shadow.sandbox.wait_ready()
        self.current = self.good

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

    def _alive(self, timeout_s: float = 30.0) -> bool:
        """Whether the shadow's server still runs after a lost connection: it accepts connections again (within
        ``timeout_s``), or its process is gone, checked every second (a server killed a moment ago still counts as
        running for a few milliseconds: waiting for it to answer for the whole timeout took 30 s per crash)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.shadow.sandbox.is_running():
                return False
            try:
                self.shadow.sandbox.wait_ready(min(1.0, max(0.1, deadline - time.monotonic())))
                return True
            except AdvisorError:
                continue
        return False

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
                alive = self._alive()
                if not alive:
                    self.recover()
                why = "the server crashed during the run (killed, or out of memory)" if not alive \
                    else "the server lost connections"
                raise TrialFailed(f"{why}: {e}", self.restarted, error=type(e).__name__) from None
            except AdvisorError as e:
                raise TrialFailed(str(e), self.restarted, error=type(e).__name__) from None
            if not isinstance(measured, Measured):
                measured = Measured(float(measured))
            self.good = self.current
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

    def close(self) -> None:
        """Stop the shadow's server (a target that owns its shadow: a Ray worker's clone)."""
        self.shadow.close()

    def reset(self) -> None:
        """Put the shadow back to its own configuration."""
        try:
            self._set(self.base)
        except AdvisorError:
            self.good = self.base
            self.recover()


TrialRunner = ShadowTarget  # its name before the trial target protocol (benches and tests use it)


# --- the tuning loop ------------------------------------------------------------------------------------------


def TuningRun(store: Store, run_id: str, target_id: str, trials: ShadowTarget, optimizer: Optimizer,  # noqa: N802
              options: TuningOptions, seeds: Sequence[Seed] = (), say: Say = silent,
              on_trial: Callable[[TrialRecord], None] | None = None, executor=None) -> TrialLoop:
    """A knob tuning run: the one trial loop (``advisor.tuning.trials.TrialLoop``) over the shadow (or the slots
    of ``executor``), within ``options.trials`` trials (baseline and seeds included), each stored as it ends,
    resumable."""
    return TrialLoop(store, run_id, target_id, trials, optimizer, options.trials, list(seeds), say, on_trial=on_trial,
                     executor=executor)


# --- comparing two configurations on the shadow --------------------------------------------------------------


OBJECTIVE = "objective"  # the one "statement" of a knob comparison's Evidence: the runner's objective per pass


@dataclass(frozen=True)
class ObjectiveComparison:
    """Two configurations compared on the knob objective (lower is better): a view over the measurement engine's
    Evidence, whose one statement is the objective (each round's total is that round's objective) and whose
    ``measured`` is how the measurement went, and the engine's ``Measured`` (None where built from Evidence
    alone)."""

    evidence: Evidence
    measured: MeasuredRounds | None = None

    @property
    def baseline(self) -> list[float]:
        """The baseline's objective, round by round (the rounds kept)."""
        return list(self.evidence.baseline_totals_ms)

    @property
    def candidate(self) -> list[float]:
        return list(self.evidence.candidate_totals_ms)

    @property
    def gain(self) -> float:
        """1 - candidate / baseline, on the medians over rounds."""
        return self.evidence.gain

    @property
    def ci(self) -> tuple[float, float]:
        """The gain's 95% interval (the Evidence's paired bootstrap over rounds)."""
        return self.evidence.gain_ci

    @property
    def significant_loss(self) -> bool:
        return self.ci[1] < 0

    @property
    def line(self) -> str:
        """How the measurement went (``advisor.tuning.measure.Measured.line``)."""
        return self.evidence.measured


def compare_configs(trials: TrialRunner, baseline: Mapping[str, str], candidate: Mapping[str, str], rounds: int = 4,
                    say: Say = silent, seed: int = 0, min_gain: float = 0.02) -> ObjectiveComparison:
    """Two configurations measured by the measurement engine (``advisor.tuning.measure.interleave``): ABBA rounds
    of one pass each, noise rounds run again, from ``min(3, rounds)`` rounds until the gain's interval settles
    against ``min_gain`` (it clears it, or cannot), at most ``rounds``; each round's load recorded. The passes
    become Evidence (``advisor.tuning.evidence.compare``) on the objective. AdvisorError when an arm's pass
    fails."""
    arms = {"A": ("baseline", baseline), "B": ("candidate", candidate)}

    def run(arm: str, i: int) -> ArmRound:
        name, config = arms[arm]
        result, _, _ = trials.trial(config)
        if result.objective is None:
            raise AdvisorError(f"the {name} failed while validating: {result.reason}")
        say(f"round {i + 1} (at most {rounds}) {name}: {trials.runner.display(result.objective)}")
        return ArmRound({OBJECTIVE: [result.objective]}, {})

    def decide(by_arm: dict[str, list[ArmRound]]) -> Evidence:
        return compare(by_arm["A"], by_arm["B"], {OBJECTIVE: 1.0}, min_gain=min_gain, seed=seed, min_time_share=0.0, min_call_share=0.0)

    rule = StopRule(min_rounds=min(3, rounds), max_rounds=rounds, min_gain=min_gain)
    measured = interleave(run, ("A", "B"), rule, decide, order="abba", seed=seed, say=say)
    return ObjectiveComparison(replace(measured.evidence, measured=measured.line()), measured)


def best_so_far(records: Sequence[TrialRecord]) -> list[float]:
    out: list[float] = []
    best = math.inf
    for r in records:
        if r.result.objective is not None and r.result.status == "measured":
            best = min(best, r.result.objective)
        out.append(best)
    return out
