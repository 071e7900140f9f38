"""The index optimizers' base: a plugin's ``_select()`` returns a set of indexes for the problem, and ``ask``
(the one contract, see ``optimizers.base``) checks for every plugin that the set holds only candidates, once
each, within the budget (estimated sizes). Asked again, a plugin answers for the same problem again."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from advisor.core.domain import IndexChange
from optimizers.base import Config, ContractViolation, Optimizer
from optimizers.indexes.problem import IndexProblem


class BudgetExceeded(ContractViolation):
    """An index optimizer returned a configuration larger than the budget (a bug in the plugin)."""


class IndexOptimizer(Optimizer[IndexProblem]):
    kind = "indexes"
    change_types = (IndexChange,)
    # a learned optimizer's set is compared (what-if cost, same budget) with the baselines' and the pipeline
    # recommends the best of them, saying so; a baseline, an exact solver or a peer is answered as itself
    checked_against_baselines: ClassVar[bool] = False

    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]:
        return [tuple(dict.fromkeys(self._select()))]

    def _check(self, config: Config) -> None:
        problem = self.problem
        if len(set(config)) != len(config):
            raise ContractViolation(f"{self.name} chose an index twice")
        allowed = {c.index for c in problem.candidates}
        strangers = [i for i in config if i not in allowed]
        if strangers:
            raise ContractViolation(f"{self.name} chose indexes that are not candidates: {strangers[:3]}")
        used = problem.size(config)
        if used > problem.budget_bytes:
            raise BudgetExceeded(f"{self.name} chose {used} bytes of indexes for a budget of {problem.budget_bytes}")

    @abstractmethod
    def _select(self) -> list[IndexChange]:
        """The plugin's indexes for ``self.problem``."""
