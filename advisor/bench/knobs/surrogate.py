"""The knob bench's surrogate: per-statement models fitted to real trials, on which every knob optimizer runs over
many seeds at equal budget (labelled SURROGATE wherever it is reported: it is not a database).

- **Fitting.** One random forest per statement on log(median ms) over the real trials' configurations (unit-cube
  coordinates); a configuration's objective is the weighted sum of the statements' predicted times, and its
  per-statement ratios are taken to the predicted times of the current settings, as a real run takes them to its
  baseline trial (``trials.statement_ratios``, the guard's 1 ms floor included). When the real trials had
  failures, a forest classifier predicts them and a configuration it calls a failure fails.
- **Design.** The real trials come either from the bench's real runs (pooled) or from a space-filling design
  measured for the surrogate alone (``measure_design``: the current settings, the rule seeds, Sobol points):
  the design is not steered by any optimizer.
- **Runs.** Each optimizer is told the current settings first (then the rule seeds when seeded), then asked
  until the budget is spent, exactly as ``TuningRun`` does; a configuration is repaired to the space's constraints
  first and is infeasible when it cannot be.
- **Scoring.** The reference is the pooled best *feasible* configuration (no statement 10% or more slower than
  at the current settings) over every configuration any run or the design touched. Per run: the best feasible
  gain over the current settings and its share of the reference; whether the run's best trial by total
  (what a guard-blind search would propose) regresses a statement.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.domain import TrialResult
from advisor.core.progress import Say, silent
from advisor.tuning.knobs.trials import TrialRunner
from advisor.tuning.trials import statement_ratios
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.search import MAX_SLOWDOWN, sobol
from optimizers.knobs.space import KnobSpace

MAX_RATIO = 1.0 + MAX_SLOWDOWN
REACHED = 0.90  # the share of the reference a run must reach (the target)


@dataclass(frozen=True)
class Observed:
    """One real trial as the surrogate learns it: the full configuration, each statement's median (ms)."""

    config: dict[str, str]
    statement_ms: dict[str, float] | None
    failed: bool = False

    def to_dict(self) -> dict:
        return {"config": self.config, "statement_ms": self.statement_ms, "failed": self.failed}


class Surrogate:
    def __init__(self, space: KnobSpace, weights: Mapping[str, float], observed: Sequence[Observed], seed: int = 0):
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        self.space, self.weights = space, dict(weights)
        ok = [o for o in observed if not o.failed and o.statement_ms and all(k in o.statement_ms for k in weights)]
        if len(ok) < 10:
            raise ValueError(f"the surrogate needs at least 10 measured trials with per-statement times, not {len(ok)}")
        X = np.array([space.encode(o.config) for o in ok])
        self.models = {k: RandomForestRegressor(n_estimators=100, min_samples_leaf=2, random_state=seed).fit(
            X, np.log([max(o.statement_ms[k], 1e-3) for o in ok])) for k in self.weights}  # type: ignore[index]
        failed = [o for o in observed if o.failed]
        self.failures = None
        if len(failed) >= 2:
            Xa = np.array([space.encode(o.config) for o in [*ok, *failed]])
            self.failures = RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=seed).fit(
                Xa, [0] * len(ok) + [1] * len(failed))
        self.trained_on = len(ok) + len(failed)
        self.baseline_ms = self.statement_ms(space.default_config())
        self.default_objective = self.objective(self.baseline_ms)

    def statement_ms(self, config: Mapping[str, str]) -> dict[str, float]:
        x = self.space.encode({**self.space.default_config(), **config})[None, :]
        return {k: float(math.exp(m.predict(x)[0])) for k, m in self.models.items()}

    def objective(self, statement_ms: Mapping[str, float]) -> float:
        return float(sum(w * statement_ms[k] for k, w in self.weights.items()))

    def outcome(self, config: Mapping[str, str]) -> TrialResult:
        """What a trial of ``config`` would measure (repaired first, as a tuning run does)."""
        fixed, _ = self.space.repair({**self.space.default_config(), **config})
        still = self.space.violations(fixed)
        if still:
            return TrialResult(None, "infeasible", "; ".join(v.message for v in still))
        if self.failures is not None and self.failures.predict(self.space.encode(fixed)[None, :])[0] == 1:
            return TrialResult(None, "failed", "the surrogate predicts a failure here")
        ms = self.statement_ms(fixed)
        return TrialResult(self.objective(ms), ratios=statement_ratios(ms, self.baseline_ms))


def feasible(result: TrialResult) -> bool:
    return result.objective is not None and (result.worst_ratio is None or result.worst_ratio < MAX_RATIO)


@dataclass
class SurrogateRun:
    label: str
    seed: int
    results: list[TrialResult]
    wall_s: float

    def best_feasible(self) -> float | None:
        values = [r.objective for r in self.results if feasible(r)]
        return min(values) if values else None  # type: ignore[type-var]

    def curve(self) -> list[float]:
        """Best feasible objective so far, per trial."""
        out, best = [], math.inf
        for r in self.results:
            if feasible(r):
                best = min(best, r.objective)  # type: ignore[arg-type]
            out.append(best)
        return out

    def best_total_regresses(self) -> bool:
        """Whether the best trial by total alone (the guard ignored) slows a statement by 10% or more."""
        measured = [r for r in self.results if r.objective is not None]
        best = min(measured, key=lambda r: r.objective) if measured else None  # type: ignore[arg-type, return-value]
        return best is not None and not feasible(best)


def run_on_surrogate(surrogate: Surrogate, optimizer: str, label: str, seed: int, trials: int,
                     seeds: Sequence[Mapping[str, str]] = (), kind: str = "mixed") -> SurrogateRun:
    """One tuning run on the surrogate: the current settings, then ``seeds``, then the optimizer's asks."""
    space = surrogate.space
    opt = registry.create("knobs", optimizer, KnobProblem(space, kind), seed=seed)
    results: list[TrialResult] = []
    t0 = time.time()

    def trial(config: Mapping[str, str]) -> None:
        full = {**space.default_config(), **config}
        result = surrogate.outcome(full)
        fixed, _ = space.repair(full)
        opt.tell(tuple(space.changes(fixed)), result)
        results.append(result)

    for config in [{}, *seeds][:trials]:
        trial(config)
    while len(results) < trials:
        trial({c.name: c.value for c in opt.ask(1, current=())[0]})
    return SurrogateRun(label, seed, results, round(time.time() - t0, 1))


def compare(surrogate: Surrogate, runs: Sequence[tuple[str, str, bool]], seeds: Sequence[Mapping[str, str]],
            n_seeds: int, trials: int, kind: str = "mixed", say: Say = silent,
            extra: Sequence[Mapping[str, str]] = ()) -> dict:
    """Every (label, optimizer, seeded) run ``n_seeds`` times on ``surrogate``; the table's numbers (see the module
    docstring). ``extra``: configurations (the real trials') that count toward the pooled reference too."""
    done: dict[str, list[SurrogateRun]] = {}
    for label, optimizer, seeded in runs:
        for s in range(n_seeds):
            done.setdefault(label, []).append(run_on_surrogate(surrogate, optimizer, label, 1000 + s, trials,
                                                               seeds if seeded else (), kind))
        say(f"{label}: {n_seeds} seeds x {trials} trials, {sum(r.wall_s for r in done[label]):.0f} s")
    default = surrogate.default_objective
    pooled = [b for runs_ in done.values() for r in runs_ if (b := r.best_feasible()) is not None]
    pooled += [o.objective for c in extra if feasible(o := surrogate.outcome(c))]  # type: ignore[misc]
    reference = min([default, *pooled])  # type: ignore[type-var]
    ref_gain = 1.0 - reference / default
    summary = {}
    for label, runs_ in done.items():
        gains = [1.0 - (r.best_feasible() or default) / default for r in runs_]
        shares = [g / ref_gain if ref_gain > 0 else 1.0 for g in gains]
        curves = [[1.0 - min(v, default) / default for v in r.curve()] for r in runs_]
        summary[label] = {
            "mean_share_of_reference": round(float(np.mean(shares)), 4),
            "min_share_of_reference": round(float(np.min(shares)), 4),
            "reached_90pct": sum(s >= REACHED - 1e-9 for s in shares),
            "mean_feasible_gain": round(float(np.mean(gains)), 4),
            "mean_trials_to_90pct": round(float(np.mean([_first(c, REACHED * ref_gain, trials) for c in curves])), 1),
            "best_total_regresses": sum(r.best_total_regresses() for r in runs_),
            "failed_trials": sum(1 for r in runs_ for x in r.results if x.objective is None),
            "wall_s": round(sum(r.wall_s for r in runs_), 1),
            "mean_curve": [round(float(v), 4) for v in np.mean(curves, axis=0)],
        }
    return {"reference_gain": round(ref_gain, 4), "default_objective": round(default, 2), "seeds": n_seeds,
            "trials": trials, "trained_on": surrogate.trained_on, "optimizers": summary}


def _first(curve: Sequence[float], target: float, cap: int) -> int:
    """First trial (1-based) whose best-so-far gain reaches ``target``; ``cap + 1`` when none does."""
    return next((i + 1 for i, g in enumerate(curve) if g >= target - 1e-12), cap + 1)


# --- a space-filling design measured on the real server --------------------------------------------------------


def measure_design(trials: TrialRunner, n: int, seeds: Sequence[Mapping[str, str]] = (), seed: int = 0,
                   say: Callable[[str], None] = silent) -> list[Observed]:
    """The current settings (twice: first and last), the rule seeds and ``n`` Sobol points, each run once on the
    shadow with per-statement times; configurations the constraints cannot repair are skipped."""
    space = trials.space
    base = space.default_config()
    configs = [base, *({**base, **s} for s in seeds), *(space.decode(x) for x in sobol(space.dim, n, seed)), base]
    out: list[Observed] = []
    for i, config in enumerate(configs):
        fixed, _ = space.repair(config)
        if space.violations(fixed):
            continue
        result, _, _ = trials.trial(fixed)
        out.append(Observed(fixed, trials.last_ms, result.objective is None))
        say(f"design {i + 1}/{len(configs)}: " + (f"{result.objective:.1f}" if result.objective is not None
                                                  else f"failed ({result.reason[:60]})"))
    trials.reset()
    return out
