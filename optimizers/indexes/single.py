"""A peer in the style of Supabase's index_advisor: every statement on its own, the single-column index that
lowers its what-if cost most (HypoPG), whatever the others need. index_advisor has no budget: of the picks, those
kept are the ones whose statements' what-if savings (weighted, summed where one index is the pick of several) are
largest in total within the budget, an exact knapsack (``optimizers.indexes.knapsack``).

Units: costs are the problem's what-if costs (planner cost units), sizes bytes (HypoPG's estimate)."""

from __future__ import annotations

from advisor.core.domain import IndexChange
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.knapsack import best_within
from optimizers.indexes.problem import relevant


class SingleColumn(IndexOptimizer):
    name = "supabase"
    description = "Supabase index_advisor style: per statement, the single-column index with the best what-if gain"

    def _setup(self, min_gain: float = 0.0) -> None:
        self.min_gain = min_gain  # fraction of the statement's cost a pick must save (index_advisor: any saving)

    def _select(self) -> list[IndexChange]:
        problem = self.problem
        w = problem.whatif
        singles = [c for c in problem.candidates if c.width == 1]
        order = sorted(problem.queries, key=lambda q: -q.weight * w.cost(q, frozenset()).total)
        gains: dict[IndexChange, float] = {}  # pick -> weighted what-if saving of the statements it is the pick of
        for q in order:
            alone = w.cost(q, frozenset()).total  # each statement is advised alone, as if no other index existed
            best, best_gain = None, 0.0
            for cand in singles:
                if cand.table not in q.tables or q.queryid not in cand.queries:
                    continue
                gain = alone - w.cost(q, relevant(q, {cand.index})).total
                if gain > best_gain:
                    best, best_gain = cand.index, gain
            if best is None or best_gain <= self.min_gain * alone:
                continue
            gains[best] = gains.get(best, 0.0) + q.weight * best_gain
        picks = list(gains)
        keep = best_within([gains[ix] for ix in picks], [w.size(ix) for ix in picks], problem.budget_bytes)
        return [picks[i] for i in keep]
