"""The learned-index searches: the knob searches' own algorithms (``optimizers.knobs.search`` / ``bo`` /
``hibo``, which work over any space) under the learned-index base, plus two of this kind's own: ``Defaults``
(asks the defaults: the baseline every tuner must beat) and ``Grid`` (a deterministic grid, coarse per
dimension, ordered so that any prefix covers the space)."""

from __future__ import annotations

import itertools

import numpy as np

from optimizers.base import Config
from optimizers.knobs.bo import GPSpaceSearch
from optimizers.knobs.hibo import HiBOSpaceSearch
from optimizers.knobs.search import RandomSpaceSearch, SpaceSearch, TPESpaceSearch
from optimizers.learned_index.problem import LearnedIndexOptimizer


class Defaults(LearnedIndexOptimizer):
    name = "defaults"
    description = "the index's default parameters (asks them every time: the baseline)"

    def _ask(self, n: int, current: Config | None) -> list[Config]:
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
    """The first ``count`` points of a ``levels``-per-dimension grid of the unit cube (cell centres), in
    farthest-first order: the centre, then each next point the grid point farthest from those already taken (the
    lowest index among ties), so any prefix spreads over the whole space. Past the grid's size it starts over.

    >>> grid_points(2, 3, 3).round(3).tolist()
    [[0.5, 0.5], [0.167, 0.167], [0.167, 0.833]]
    >>> len({tuple(p) for p in grid_points(2, 3, 9)})
    9
    """
    axis = (np.arange(levels) + 0.5) / levels
    cells = np.array(list(itertools.product(axis, repeat=dim)), dtype=float) if dim else np.zeros((1, 0))
    order = [len(cells) // 2]  # the centre (an odd number of levels)
    nearest = np.linalg.norm(cells - cells[order[0]], axis=1)
    while len(order) < min(count, len(cells)):
        i = int(np.argmax(nearest))
        order.append(i)
        nearest = np.minimum(nearest, np.linalg.norm(cells - cells[i], axis=1))
    return cells[[order[k % len(order)] for k in range(count)]]


class Grid(LearnedIndexOptimizer, SpaceSearch):
    name = "grid"
    description = "a deterministic grid over the parameters (3 levels per dimension), any prefix spread out"

    def _setup(self, levels: int = 3) -> None:
        super()._setup()
        self.levels = int(levels)

    def _ask_one(self, current, pending):
        k = len(self.history) + len(pending)  # the grid's next point: the state is the history's length
        return grid_points(self.space.dim, self.levels, k + 1)[k]
