"""The workload mixes IA2 trains on (``optimizers.indexes.ia2`` per target, ``optimizers.indexes.ia2_shipped`` across
schemas): random subsets of a problem's statements with random frequencies and budgets (``mix_sampler``), mixes
unlike the workload (``held_out_sampler``), and the blend of those with the problem's own mix (``training_sampler``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from optimizers.indexes.problem import IndexProblem


def held_out_sampler(base: IndexProblem, templates: Sequence[str],
                     budgets: tuple[int, int]) -> Callable[[np.random.Generator], IndexProblem]:
    """Problems unlike the target's workload: 1 to a third of ``templates`` left out (none when there is only
    one), frequencies log-uniform in 1..10,000, budgets log-uniform from a quarter of ``budgets``' low end to twice
    its high end (bytes)."""
    templates = list(templates)
    lo, hi = max(1, budgets[0] // 4), max(budgets[1] * 2, 2)

    def sample(rng: np.random.Generator) -> IndexProblem:
        n = len(templates)
        out = int(rng.integers(1, max(1, n // 3) + 1)) if n > 1 else 0
        keep = rng.choice(n, size=n - out, replace=False)
        weights = {templates[i]: float(math.exp(rng.uniform(0.0, math.log(10_000)))) for i in keep}
        return base.with_weights(weights, int(math.exp(rng.uniform(math.log(lo), math.log(hi)))))

    return sample


def mix_sampler(base: IndexProblem, templates: Sequence[str], budgets: tuple[int, int], min_mix: int = 2,
                max_mix: int | None = None) -> Callable[[np.random.Generator], IndexProblem]:
    """Problems for training: a random subset of ``templates`` (query ids of ``base``) with frequencies drawn
    from 1..1000, and a budget drawn log-uniformly from ``budgets`` (bytes)."""
    templates = list(templates)
    lo, hi = budgets
    top = min(max_mix or len(templates), len(templates))

    def sample(rng: np.random.Generator) -> IndexProblem:
        k = int(rng.integers(min(min_mix, top), top + 1))
        chosen = rng.choice(len(templates), size=k, replace=False)
        weights = {templates[i]: float(rng.integers(1, 1001)) for i in chosen}
        budget = int(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        return base.with_weights(weights, budget)

    return sample


def training_sampler(problem: IndexProblem, templates: Sequence[str], budgets: tuple[int, int], own: float,
                     unlike: float) -> tuple[Callable[[np.random.Generator], IndexProblem],
                                             Callable[[np.random.Generator], IndexProblem]]:
    """(the training mixes, the sampler of mixes unlike the workload): a share ``own`` of the draws is ``problem``
    itself (the mix and budget it will be asked about), a share ``unlike`` comes from ``held_out_sampler``, the
    rest from ``mix_sampler``; budgets in ``budgets`` (bytes)."""
    usual, other = mix_sampler(problem, templates, budgets), held_out_sampler(problem, templates, budgets)

    def sample(rng: np.random.Generator) -> IndexProblem:
        u = rng.random()
        if u < own:
            return problem
        return other(rng) if unlike > 0 and u < own + unlike else usual(rng)

    return sample, other
