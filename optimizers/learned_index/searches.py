"""The learned-index searches: the knob searches' own algorithms (``optimizers.knobs.search`` / ``bo`` /
``hibo``, which work over any space) under the learned-index base, plus two of this kind's own: ``Defaults``
(asks the defaults: the baseline every tuner must beat) and ``Grid`` (a deterministic grid, coarse per
dimension, ordered so that any prefix covers the space)."""

from __future__ import annotations

import numpy as np

from optimizers.base import Config
from optimizers.knobs.bo import GPSpaceSearch
from optimizers.knobs.hibo import HiBOSpaceSearch
from optimizers.knobs.search import RandomSpaceSearch, SpaceSearch, TPESpaceSearch
from optimizers.learned_index.problem import LearnedIndexOptimizer


class Defaults(LearnedIndexOptimizer):
    name = "defaults"
    description = "the index's default parameters (asks them every time: the baseline)"

    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]:
        return [()]


class RandomSearch(LearnedIndexOptimizer, RandomSpaceSearch):
    description = "uniform random search over the index's parameters"


class TPESearch(LearnedIndexOptimizer, TPESpaceSearch):
    description = "Optuna's TPE (multivariate) over the index's parameters"


class GPSearch(LearnedIndexOptimizer, GPSpaceSearch):
    description = "BoTorch GP-BO (SingleTaskGP + qLogEI, Sobol start) over the index's parameters"


class HiBO(LearnedIndexOptimizer, HiBOSpaceSearch):
    description = "HiBO (search-tree partitioning weighting a GP's qLogEI) over the index's parameters"


def grid_points(dim: int, levels: int = 3, count: int = 1) -> np.ndarray:
    """The first ``count`` points of a ``levels``-per-dimension grid of the unit cube (cell centres), never
    materialized (3 levels of 14 parameters are millions of cells): the centre first, then the cells an
    unscrambled Halton sequence falls in, each once, so any prefix spreads over the whole space (a
    low-discrepancy order). Past the grid's size the order starts over.

    >>> grid_points(2, 3, 4).round(3).tolist()
    [[0.5, 0.5], [0.167, 0.167], [0.167, 0.833], [0.833, 0.167]]
    >>> len({tuple(p) for p in grid_points(2, 3, 9)})
    9
    """
    from scipy.stats import qmc

    if dim == 0:
        return np.zeros((count, 0))
    total = levels ** dim
    cells = [tuple([levels // 2] * dim)]
    seen = set(cells)
    halton = qmc.Halton(dim, scramble=False)
    while len(cells) < min(count, total):
        for u in halton.random(256):
            cell = tuple(int(min(int(x * levels), levels - 1)) for x in u)
            if cell not in seen:
                seen.add(cell)
                cells.append(cell)
    centres = (np.arange(levels) + 0.5) / levels
    return np.array([[centres[c] for c in cells[k % len(cells)]] for k in range(count)], dtype=float)


class Grid(LearnedIndexOptimizer, SpaceSearch):
    name = "grid"
    description = "a deterministic grid over the parameters (3 levels per dimension), any prefix spread out"

    def _setup(self, levels: int = 3) -> None:
        super()._setup()
        self.levels = int(levels)

    def _ask_one(self, current, pending):
        k = len(self.history) + len(pending)  # the grid's next point: the state is the history's length
        return grid_points(self.space.dim, self.levels, k + 1)[k]
