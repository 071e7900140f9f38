"""The index-optimizer plugin base: ``select(problem)`` returns a set of indexes whose estimated size fits the
budget. The public ``choose`` checks that invariant (and that every index is a candidate) for every plugin."""

from __future__ import annotations

from abc import abstractmethod

from advisor.core.domain import Change, IndexChange
from optimizers.base import Optimizer, TuningContext
from optimizers.indexes.problem import IndexProblem


class BudgetExceeded(AssertionError):
    """An index optimizer returned a configuration larger than the budget (a bug in the plugin)."""


class IndexOptimizer(Optimizer):
    kind = "indexes"

    def __init__(self, seed: int = 0, **options):
        self.seed = seed
        self.options = options

    def choose(self, problem: IndexProblem) -> list[IndexChange]:
        """The plugin's configuration for ``problem``, checked: only candidates, no duplicates, within budget."""
        config = list(dict.fromkeys(self.select(problem)))
        allowed = {c.index for c in problem.candidates}
        strangers = [i for i in config if i not in allowed]
        if strangers:
            raise ValueError(f"{self.name} chose indexes that are not candidates: {strangers[:3]}")
        used = problem.size(config)
        if used > problem.budget_bytes:
            raise BudgetExceeded(f"{self.name} chose {used} bytes of indexes for a budget of {problem.budget_bytes}")
        return config

    @abstractmethod
    def select(self, problem: IndexProblem) -> list[IndexChange]: ...

    def _suggest(self, context: TuningContext, n: int) -> list[list[Change]]:
        if context.indexes is None:
            raise ValueError(f"{self.name} needs an index problem in the tuning context")
        return [list(self.choose(context.indexes))]
