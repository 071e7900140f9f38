"""Search optimizers over a KnobSpace: ask for points of the unit cube, tell what they measured.

The objective is minimized (latency; throughput is negated by the trial runner). Search happens on
log(objective) so gains are relative. A failed trial is scored as a penalty: twice the worst objective seen
(VLDB'22 found a finite penalty better than infinity), so the model learns to stay out of that region.

The whole state of a search is its history (points, objectives, failures) and its seed: ``state()`` and
``restore()`` rebuild it exactly, which is how an interrupted tuning run resumes.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from advisor.core.domain import Change, Evidence, TrialResult
from optimizers.base import Optimizer, TuningContext
from optimizers.knobs.space import KnobSpace
from optimizers.registry import register

PENALTY_FACTOR = 2.0


@dataclass(frozen=True)
class Observation:
    x: tuple[float, ...]
    objective: float | None  # None when the trial failed
    source: str = ""

    @property
    def failed(self) -> bool:
        return self.objective is None or not math.isfinite(self.objective)


class SearchOptimizer(Optimizer):
    kind = "knobs"
    n_init = 5  # space-filling points before a model is trusted (seeds count)

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.space: KnobSpace | None = None
        self.history: list[Observation] = []

    # --- wiring ---------------------------------------------------------------------------------------------

    def bind(self, space: KnobSpace) -> "SearchOptimizer":
        self.space = space
        return self

    def _suggest(self, context: TuningContext, n: int) -> list[list[Change]]:
        if self.space is None:
            self.bind(KnobSpace.build(context.catalog, context.hardware))
        assert self.space is not None
        return [self.space.changes(self.space.decode(x)) for x in self.ask(n)]

    def _observe(self, config: list[Change], result: Evidence | TrialResult) -> None:
        assert self.space is not None, "bind a space (or suggest) before observing"
        values = {c.name: c.value for c in config if getattr(c, "kind", "") == "knob"}
        x = self.space.encode({**self.space.default_config(), **values})
        if isinstance(result, Evidence):
            objective = sum(s.candidate_ms * s.weight for s in result.statements)
        else:
            objective = result.objective if result.status == "measured" else None
        self.tell(x, objective)

    # --- ask / tell -----------------------------------------------------------------------------------------

    def tell(self, x, objective: float | None, source: str = "") -> None:
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        self.history.append(Observation(tuple(float(v) for v in x), objective, source))

    def ask(self, n: int = 1, current=None) -> list[np.ndarray]:
        """``n`` points to try next; ``current`` is the shadow's present point (restart-needing knobs that
        equal it cost less to try)."""
        assert self.space is not None, "bind a space before asking"
        out: list[np.ndarray] = []
        for _ in range(n):
            out.append(np.clip(self._ask_one(current, pending=out), 0.0, 1.0))
        return out

    @abstractmethod
    def _ask_one(self, current, pending: list[np.ndarray]) -> np.ndarray:
        """One point; ``pending`` are the points already chosen for this batch."""

    # --- data for models ------------------------------------------------------------------------------------

    def rng(self) -> np.random.Generator:
        return np.random.default_rng([self.seed, len(self.history)])

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) with y = log(objective), failures at log(PENALTY_FACTOR x worst)."""
        d = self.space.dim if self.space is not None else len(self.history[0].x) if self.history else 0
        X = np.array([o.x for o in self.history], dtype=float).reshape(len(self.history), d)
        ok = [math.log(max(o.objective, 1e-9)) for o in self.history if not o.failed]
        worst = max(ok) if ok else 0.0
        penalty = worst + math.log(PENALTY_FACTOR)
        y = np.array([penalty if o.failed else math.log(max(o.objective, 1e-9)) for o in self.history])
        return X, y

    def best(self) -> Observation | None:
        ok = [o for o in self.history if not o.failed]
        return min(ok, key=lambda o: o.objective) if ok else None

    # --- persistence ----------------------------------------------------------------------------------------

    def state(self) -> dict:
        return {"optimizer": self.name, "seed": self.seed,
                "history": [{"x": list(o.x), "objective": o.objective, "source": o.source} for o in self.history]}

    def restore(self, state: dict) -> None:
        if state.get("optimizer") not in (None, self.name):
            raise ValueError(f"state of {state.get('optimizer')!r} cannot restore a {self.name!r} optimizer")
        self.seed = int(state.get("seed", self.seed))
        self.history = [Observation(tuple(h["x"]), h["objective"], h.get("source", "")) for h in state["history"]]


def sobol(d: int, n: int, seed: int) -> np.ndarray:
    from scipy.stats import qmc
    return qmc.Sobol(d, scramble=True, seed=seed).random(n)


@register
class RandomSearch(SearchOptimizer):
    name = "random"
    description = "uniform random search over the knob space (the baseline every tuner must beat)"

    def _ask_one(self, current, pending):
        assert self.space is not None
        return self.rng().random(self.space.dim + len(pending))[len(pending):]


@register
class TPESearch(SearchOptimizer):
    name = "tpe"
    description = "Optuna's Tree-structured Parzen Estimator (multivariate)"

    def _ask_one(self, current, pending):
        import optuna

        assert self.space is not None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        dists = {f"x{i}": optuna.distributions.FloatDistribution(0.0, 1.0) for i in range(self.space.dim)}
        sampler = optuna.samplers.TPESampler(seed=self.seed + len(self.history) + len(pending), multivariate=True,
                                             n_startup_trials=self.n_init)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        X, y = self.data()
        for xi, yi in zip(X, y, strict=True):
            study.add_trial(optuna.trial.create_trial(params={f"x{i}": float(v) for i, v in enumerate(xi)},
                                                      distributions=dists, value=float(yi)))
        trial = study.ask(dists)
        return np.array([trial.params[f"x{i}"] for i in range(self.space.dim)])
