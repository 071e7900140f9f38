"""What the knob bench keeps of each run and workload (``RunSummary``, ``WorkloadReport``, ``Validated``) and the
small functions that make them from a run's trials: best-so-far curves, trials to a share of the best, the trial
the pipeline would validate first."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.bench.knobs.surrogate import Observed
from advisor.tuning.knobs.trials import TrialRecord, best_so_far


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
    seed: int = 0  # the optimizer's
    # the run's pick (its best trial that slowed no statement, else its best) measured again against the defaults
    # in interleaved rounds: the gain a user of this optimizer would see, not a lucky pass; None: not re-measured
    remeasured_gain: float | None = None
    remeasured_ci: tuple[float, float] | None = None
    remeasure_cut: bool = False  # its pick was not re-measured: the bench's time limit had passed


@dataclass
class Validated:
    """A run's recommendation reduced by ablation to the knobs that carry its gain (at most 5) and validated as
    the pipeline validates it (interleaved rounds, the per-statement guard)."""

    label: str
    seed: int
    knobs: dict[str, str]  # what it changes, as recommended
    gain: float | None
    ci: tuple[float, float] | None
    accepted: bool
    regressed: list[str] = field(default_factory=list)  # statements the guard found slower
    verdict: str = ""


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
    engine: str = "postgres"
    statements: int = 0
    validated: list[Validated] = field(default_factory=list)  # every validated recommendation


def gain_over(default: float, value: float | None) -> float | None:
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


def summarize(default_obj: float, gstar: float, label: str, optimizer: str, seeded: bool, seed: int,
              records: list[TrialRecord], wall: float, remeasured=None) -> RunSummary:
    """One run in figures, its gains over ``default_obj`` and its share of ``gstar``; ``remeasured``: its pick's
    comparison with the defaults (an ``ObjectiveComparison``), when made."""
    curve = [max(gain_over(default_obj, b) or 0.0, 0.0) if math.isfinite(b) else 0.0 for b in best_so_far(records)]
    measured = [r for r in records if r.result.objective is not None and r.result.status == "measured"]
    best = min(measured, key=lambda r: r.result.objective, default=None)  # type: ignore[arg-type]
    fine = [r.result.objective for r in measured if not r.slows_a_statement()]
    final = curve[-1] if curve else 0.0
    return RunSummary(label, optimizer, seeded, len(records), sum(r.result.status != "measured" for r in records),
                      best.result.objective if best else None, best.config if best else {}, final,
                      final / gstar if gstar > 0 else None, trials_to_fraction(curve, final), round(wall, 1),
                      curve, max(gain_over(default_obj, min(fine)) or 0.0, 0.0) if fine else None, seed,
                      None if remeasured is None else remeasured.gain, None if remeasured is None else remeasured.ci)


def recommendation(records: list[TrialRecord]) -> TrialRecord | None:
    """What the pipeline would validate first: the best trial better than the baseline, those that slowed no
    statement first (``pipeline.candidates``'s order); None when no trial beat the baseline."""
    base = next((r for r in records if r.source == "default" and r.result.objective is not None), None)
    better = [r for r in records if r.result.status == "measured" and r.result.objective is not None
              and r.source != "default" and base is not None and r.result.objective < base.result.objective]
    return min(better, key=lambda r: (r.slows_a_statement(), r.result.objective), default=None)  # type: ignore
