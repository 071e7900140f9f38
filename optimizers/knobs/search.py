"""Search optimizers over a space: ask for configurations, tell what they measured.

The algorithms are kind-neutral (``SpaceSearch`` and its subclasses): they read only ``problem.space`` (``dim``,
``encode``/``decode`` of the unit cube, ``default_config``, ``changes``, ``restart_mask``: a ``KnobSpace`` or an
``advisor.core.params.ParamSpace``) and ``problem.config(changes)``. A kind's optimizer is the algorithm under
that kind's base (its ``kind``, ``change_types`` and ``_check``), e.g. ``class RandomSearch(KnobOptimizer,
RandomSpaceSearch)``; ``optimizers.learned_index`` lists the same algorithms under its own base.

Inside, a search works on points of the unit cube (``space.encode`` / ``decode``). The objective is
minimized (latency; throughput is negated by the trial runner). Search happens on log(objective) so gains are
relative. A failed trial is scored as a penalty: twice the worst objective seen (VLDB'22 found a finite penalty
better than infinity), so the model learns to stay out of that region.

Besides the objective, an outcome may carry per-statement ratios to the run's baseline trial (``TrialResult.ratios``).
A search keeps the worst of them: a trial whose worst ratio reaches ``1 + max_slowdown`` slowed some statement by
10% or more (the guard's regression), and a failed or infeasible trial is a regressing one too. Model searches
(``bo.ModelSearch``) learn that constraint; random search and TPE keep it only for the record.

The state of a search is its history (points, objectives, failures), its seed and whatever its model carries
from one ask to the next (``_model_state``): ``state()`` and ``restore()`` rebuild it exactly, which is how an
interrupted tuning run resumes asking what the uninterrupted run would have asked.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from optimizers.base import Config, Optimizer, Outcome
from optimizers.knobs.problem import KnobOptimizer

PENALTY_FACTOR = 2.0
MAX_SLOWDOWN = 0.10  # a statement this much slower than at baseline is a regression (the guard's threshold)
FAILED_RATIO = 2.0  # the worst ratio a failed trial counts as, at least (a failure is a regression)


@dataclass(frozen=True)
class Observation:
    x: tuple[float, ...]
    objective: float | None  # None when the trial failed
    worst: float | None = None  # the worst per-statement ratio to the baseline; None when unknown

    @property
    def failed(self) -> bool:
        return self.objective is None or not math.isfinite(self.objective)

    def feasible(self, max_ratio: float) -> bool:
        """Measured, and no statement slower than ``max_ratio`` x its baseline time (unknown ratios count as fine)."""
        return not self.failed and (self.worst is None or self.worst < max_ratio)


class SpaceSearch(Optimizer):
    """A search over ``problem.space`` (any kind: the kind's base class, listed first, gives kind and checks)."""

    n_init = 5  # space-filling points before a model is trusted (seeds count)

    def _setup(self, **options) -> None:
        super()._setup(**options)
        self.history: list[Observation] = []
        self.max_ratio = 1.0 + MAX_SLOWDOWN

    @property
    def space(self):
        """The searched space (a KnobSpace, a ParamSpace: anything with the unit-cube coordinates)."""
        return self.problem.space

    # --- the contract -----------------------------------------------------------------------------------

    batches = True

    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]:
        here = self.space.encode(self.problem.config(current)) if current is not None else None
        running = [np.clip(self.space.encode(self.problem.config(c)), 0.0, 1.0) for c in pending]
        taken = {frozenset(c) for c in pending}
        points: list[np.ndarray] = []
        for i in range(n):
            x = np.clip(self._ask_one(here, pending=running + points), 0.0, 1.0)
            x = self._fresh(x, taken, np.random.default_rng([self.seed, len(self.history), len(pending), i]))
            taken.add(frozenset(self._changes(x)))
            points.append(x)
        return [self._changes(x) for x in points]

    def _changes(self, x: np.ndarray) -> Config:
        return tuple(self.space.changes(self.space.decode(x)))

    def _fresh(self, x: np.ndarray, taken: set, rng: np.random.Generator) -> np.ndarray:
        """``x``, or where its configuration is running or already in the batch (a model may rank a pending
        point's neighbourhood first, and a space's steps round nearby points to one configuration), the nearest
        of some widening random steps from it whose configuration is new; ``x`` when none is."""
        if not taken or frozenset(self._changes(x)) not in taken:
            return x
        for scale in (0.02, 0.05, 0.1, 0.2, 0.4):
            for _ in range(8):
                step = np.clip(x + rng.normal(0.0, scale, len(x)), 0.0, 1.0)
                if frozenset(self._changes(step)) not in taken:
                    return step
        return x

    def _tell(self, config: Config, outcome: Outcome) -> None:
        x = np.clip(self.space.encode(self.problem.config(config)), 0.0, 1.0)
        objective = outcome.objective if outcome.status == "measured" else None
        worst = outcome.worst_ratio if objective is not None else None
        self.history.append(Observation(tuple(float(v) for v in x), objective,
                                        None if worst is None else float(worst)))

    @abstractmethod
    def _ask_one(self, current: np.ndarray | None, pending: list[np.ndarray]) -> np.ndarray:
        """One point; ``current`` is the system's present point (or None), ``pending`` the points whose trials run
        now and those already chosen for this batch (the search's batch mode takes them into account)."""

    # --- data for models ------------------------------------------------------------------------------------

    def initial_point(self, pending) -> np.ndarray | None:
        """A Sobol point while fewer than ``n_init`` trials are in (the model searches' space-filling start)."""
        if len(self.history) + len(pending) >= self.n_init:
            return None
        return sobol(self.space.dim, 8, self.seed + len(self.history) + len(pending))[len(self.history) % 8]

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

    def constraint_data(self) -> tuple[np.ndarray, np.ndarray]:
        """(X, c) with c = log(worst per-statement ratio) where it is known; failed and infeasible trials at
        log(``FAILED_RATIO``) or above the worst ratio seen, so their region is learned as regressing."""
        known = [math.log(max(o.worst, 1e-6)) for o in self.history if not o.failed and o.worst is not None]
        fail = max([math.log(FAILED_RATIO), *known]) if known else math.log(FAILED_RATIO)
        rows = [(o.x, fail if o.failed else math.log(max(o.worst, 1e-6))) for o in self.history
                if o.failed or o.worst is not None]
        X = np.array([r[0] for r in rows], dtype=float).reshape(len(rows), self.space.dim)
        return X, np.array([r[1] for r in rows], dtype=float)

    def feasible_mask(self) -> np.ndarray:
        return np.array([o.feasible(self.max_ratio) for o in self.history], dtype=bool)

    def best(self) -> Observation | None:
        """The best trial that slowed no statement (the best measured one when none did)."""
        ok = [o for o in self.history if o.feasible(self.max_ratio)] or [o for o in self.history if not o.failed]
        return min(ok, key=lambda o: o.objective) if ok else None

    # --- persistence ----------------------------------------------------------------------------------------

    def _state(self) -> dict:
        return {"history": [{"x": list(o.x), "objective": o.objective, "worst": o.worst} for o in self.history],
                "model": self._model_state()}

    def _restore(self, state: dict) -> None:
        self.history = [Observation(tuple(h["x"]), h["objective"], h.get("worst")) for h in state["history"]]
        self._restore_model(state.get("model") or {})

    def _model_state(self) -> dict:
        """What a model carries from one ask to the next (JSON-safe); nothing for model-free searches."""
        return {}

    def _restore_model(self, state: dict) -> None:
        return None


def sobol(d: int, n: int, seed: int) -> np.ndarray:
    from scipy.stats import qmc
    return qmc.Sobol(d, scramble=True, seed=seed).random(n)


class SearchOptimizer(KnobOptimizer, SpaceSearch):
    """A knob search: a space search under the knob optimizers' base (SMAC3 builds on it)."""


class RandomSpaceSearch(SpaceSearch):
    name = "random"
    description = "uniform random search over the space (the baseline every tuner must beat)"

    def _ask_one(self, current, pending):
        return self.rng().random(self.space.dim + len(pending))[len(pending):]


class TPESpaceSearch(SpaceSearch):
    name = "tpe"
    description = "Optuna's Tree-structured Parzen Estimator (multivariate)"

    def _ask_one(self, current, pending):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        dists = {f"x{i}": optuna.distributions.FloatDistribution(0.0, 1.0) for i in range(self.space.dim)}
        # the running trials (pending) enter as Optuna's RUNNING trials, which its constant liar scores as the
        # worst so far: a batch spreads out instead of asking one point N times
        sampler = optuna.samplers.TPESampler(seed=self.seed + len(self.history) + len(pending), multivariate=True,
                                             n_startup_trials=self.n_init, constant_liar=True)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        X, y = self.data()
        for xi, yi in zip(X, y, strict=True):
            study.add_trial(optuna.trial.create_trial(params={f"x{i}": float(v) for i, v in enumerate(xi)},
                                                      distributions=dists, value=float(yi)))
        for p in pending:
            study.add_trial(optuna.trial.create_trial(params={f"x{i}": float(v) for i, v in enumerate(p)},
                                                      distributions=dists,
                                                      state=optuna.trial.TrialState.RUNNING))
        trial = study.ask(dists)
        return np.array([trial.params[f"x{i}"] for i in range(self.space.dim)])


class RandomSearch(KnobOptimizer, RandomSpaceSearch):
    description = "uniform random search over the knob space (the baseline every tuner must beat)"


class TPESearch(KnobOptimizer, TPESpaceSearch):
    pass
