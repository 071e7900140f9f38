"""A peer: one single-column index per foreign-key column, the set a DBA builds without looking at costs. The
problem holds no foreign-key catalog, so the columns the statements join on (``ColumnUse`` of kind ``join``)
stand for the foreign keys. All of them when they fit the budget (bytes, the problem's sizes); otherwise those
with the most join uses in total that fit, an exact knapsack (``optimizers.indexes.knapsack``)."""

from __future__ import annotations

from collections import Counter

from advisor.core.domain import IndexChange
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.knapsack import best_within


class ForeignKeys(IndexOptimizer):
    name = "fkeys"
    description = "every join (foreign-key) column gets a single-column index, within the budget"

    def _select(self) -> list[IndexChange]:
        problem = self.problem
        singles = {(c.table, c.index.columns[0]): c.index for c in problem.candidates if c.width == 1}
        used_by = Counter((u.table, u.column) for _, u in problem.uses if u.kind == "join")
        uses: dict[IndexChange, int] = {}
        for key, n in sorted(used_by.items(), key=lambda kv: (-kv[1], kv[0])):
            index = singles.get(key)
            if index is not None:  # else a primary key covers it, or its table is too small to index
                uses[index] = uses.get(index, 0) + n
        picks = list(uses)
        keep = best_within([float(uses[ix]) for ix in picks], [problem.whatif.size(ix) for ix in picks],
                           problem.budget_bytes)
        return [picks[i] for i in keep]
