"""Search optimizers over a KnobSpace: ask for configurations, tell what they measured.

Inside, a search works on points of the unit cube (``KnobSpace.encode`` / ``decode``). The objective is
minimized (latency; throughput is negated by the trial runner). Search happens on log(objective) so gains are
relative. A failed trial is scored as a penalty: twice the worst objective seen (VLDB'22 found a finite penalty
better than infinity), so the model learns to stay out of that region.

The state of a search is its history (points, objectives, failures), its seed and whatever its model carries
from one ask to the next (``_model_state``): ``state()`` and ``restore()`` rebuild it exactly, which is how an
interrupted tuning run resumes asking what the uninterrupted run would have asked.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from optimizers.base import Config, Outcome
from optimizers.knobs.problem import KnobOptimizer
from optimizers.knobs.space import KnobSpace

PENALTY_FACTOR = 2.0


@dataclass(frozen=True)
class Observation:
    x: tuple[float, ...]
    objective: float | None  # None when the trial failed

    @property
    def failed(self) -> bool:
        return self.objective is None or not math.isfinite(self.objective)


class SearchOptimizer(KnobOptimizer):
    n_init = 5  # space-filling points before a model is trusted (seeds count)

    def _setup(self, **options) -> None:
        super()._setup(**options)
        self.history: list[Observation] = []

    @property
    def space(self) -> KnobSpace:
        return self.problem.space

    # --- the contract -----------------------------------------------------------------------------------

    def _ask(self, n: int, current: Config | None) -> list[Config]:
        here = self.space.encode(self.problem.config(current)) if current is not None else None
        points: list[np.ndarray] = []
        for _ in range(n):
            points.append(np.clip(self._ask_one(here, pending=points), 0.0, 1.0))
        return [tuple(self.space.changes(self.space.decode(x))) for x in points]

    def _tell(self, config: Config, outcome: Outcome) -> None:
        x = np.clip(self.space.encode(self.problem.config(config)), 0.0, 1.0)
        objective = outcome.objective if outcome.status == "measured" else None
        self.history.append(Observation(tuple(float(v) for v in x), objective))

    @abstractmethod
    def _ask_one(self, current: np.ndarray | None, pending: list[np.ndarray]) -> np.ndarray:
        """One point; ``current`` is the system's present point (or None), ``pending`` the points already chosen
        for this batch."""

    # --- data for models ------------------------------------------------------------------------------------

    def rng(self) -> np.random.Generator:
        return np.random.default_rng([self.seed, len(self.history)])

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) with y = log(objective), failures at log(PENALTY_FACTOR x worst)."""
        X = np.array([o.x for o in self.history], dtype=float).reshape(len(self.history), self.space.dim)
        ok = [math.log(max(o.objective, 1e-9)) for o in self.history if not o.failed]
        worst = max(ok) if ok else 0.0
        penalty = worst + math.log(PENALTY_FACTOR)
        y = np.array([penalty if o.failed else math.log(max(o.objective, 1e-9)) for o in self.history])
        return X, y

    def best(self) -> Observation | None:
        ok = [o for o in self.history if not o.failed]
        return min(ok, key=lambda o: o.objective) if ok else None

    # --- persistence ----------------------------------------------------------------------------------------

    def _state(self) -> dict:
        return {"history": [{"x": list(o.x), "objective": o.objective} for o in self.history],
                "model": self._model_state()}

    def _restore(self, state: dict) -> None:
        self.history = [Observation(tuple(h["x"]), h["objective"]) for h in state["history"]]
        self._restore_model(state.get("model") or {})

    def _model_state(self) -> dict:
        """What a model carries from one ask to the next (JSON-safe); nothing for model-free searches."""
        return {}

    def _restore_model(self, state: dict) -> None:
        return None


def sobol(d: int, n: int, seed: int) -> np.ndarray:
    from scipy.stats import qmc
    return qmc.Sobol(d, scramble=True, seed=seed).random(n)


class RandomSearch(SearchOptimizer):
    name = "random"
    description = "uniform random search over the knob space (the baseline every tuner must beat)"

    def _ask_one(self, current, pending):
        return self.rng().random(self.space.dim + len(pending))[len(pending):]


class TPESearch(SearchOptimizer):
    name = "tpe"
    description = "Optuna's Tree-structured Parzen Estimator (multivariate)"

    def _ask_one(self, current, pending):
        import optuna

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
