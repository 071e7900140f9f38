"""SMAC3 (``smac`` on PyPI, with ``pyrfr``'s random forest) behind the one contract: the strongest BO method on
large knob spaces in the VLDB'22 knob-tuning study (Zhang et al.), as a peer for HiBO.

Each ask builds SMAC's hyperparameter-optimization facade afresh over the unit cube (one float per knob, as TPE
sees it), seeded with ``seed + trials told``, tells it every trial so far, and asks it: the facade's random
forest settings (10 trees, all features, log-scaled costs) on pyrfr's forest (SMAC 2.4's own sklearn forest
takes over a second to fit 10 points here), log expected improvement, and its acquisition maximizer (local search
from the best configurations plus sorted random search, with SMAC's 20% of interleaved random configurations). The first
``n_init`` points are the same Sobol points the GP searches start with (SMAC's own initial design is left out,
so the budget is spent alike). Failed trials are told at the failure penalty (``search.PENALTY_FACTOR`` x the
worst objective), as the other searches score them. Rebuilding per ask keeps the state to the history, so a
restored SMAC asks exactly what the original would have; the facade's files go to a temporary directory.

SMAC is unconstrained here, as published: it does not read per-statement ratios.
"""

from __future__ import annotations

import math
import tempfile

import numpy as np

from optimizers.knobs.search import SearchOptimizer


class SMAC3Search(SearchOptimizer):
    name = "smac"
    description = "SMAC3 (HPO facade): random forest + log EI, local and sorted random search of the acquisition"

    def _setup(self, challengers: int = 10000, local_search_iterations: int = 10, n_trees: int = 10) -> None:
        super()._setup()
        self.challengers, self.local_search_iterations, self.n_trees = challengers, local_search_iterations, n_trees

    def _ask_one(self, current, pending):
        start = self.initial_point(pending)
        if start is not None:
            return start
        X, y = self.data()
        return self._smac_point(X, np.exp(y), len(pending))

    def _smac_point(self, X: np.ndarray, costs: np.ndarray, skip: int) -> np.ndarray:
        """SMAC's next configuration after (X, costs), skipping the ``skip`` it would propose first (a batch)."""
        from ConfigSpace import Configuration, ConfigurationSpace, Float
        from smac import HyperparameterOptimizationFacade as HPO
        from smac import Scenario
        from smac.model.random_forest.pyrfr.random_forest_pyrfr import PyrfrRandomForest
        from smac.runhistory.dataclasses import TrialInfo, TrialValue

        seed = (self.seed + len(self.history)) % (2**31 - 1)
        names = [f"x{i}" for i in range(self.space.dim)]
        cs = ConfigurationSpace(seed=seed)
        cs.add([Float(n, (0.0, 1.0)) for n in names])
        with tempfile.TemporaryDirectory(prefix="advisor-smac-") as tmp:
            scenario = Scenario(cs, deterministic=True, n_trials=10**6, seed=seed, output_directory=tmp)
            smac = HPO(scenario, _never_called,
                       model=PyrfrRandomForest(cs, log_y=True, n_trees=self.n_trees, ratio_features=1.0,
                                               min_samples_split=2, min_samples_leaf=1, max_depth=2**20, seed=seed),
                       initial_design=HPO.get_initial_design(scenario, n_configs=0, additional_configs=[]),
                       intensifier=HPO.get_intensifier(scenario, max_config_calls=1),
                       acquisition_maximizer=HPO.get_acquisition_maximizer(
                           scenario, challengers=self.challengers,
                           local_search_iterations=self.local_search_iterations),
                       overwrite=True, logging_level=40)
            for x, cost in zip(X, costs, strict=True):
                config = Configuration(cs, values={n: float(v) for n, v in zip(names, np.clip(x, 0, 1), strict=True)})
                cost = float(cost) if math.isfinite(cost) else float(np.nanmax(costs[np.isfinite(costs)]))
                smac.tell(TrialInfo(config, seed=0), TrialValue(cost=cost), save=False)
            for _ in range(skip + 1):
                info = smac.ask()
        return np.array([float(info.config[n]) for n in names])


def _never_called(config, seed: int = 0) -> float:  # the facade wants a target function; ask/tell never calls it
    raise AssertionError("SMAC's target function is not used: trials run outside it")
