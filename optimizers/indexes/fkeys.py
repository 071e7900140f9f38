"""A peer: one single-column index per foreign-key column, the set a DBA builds without looking at costs. The
problem holds no foreign-key catalog, so the columns the statements join on (``ColumnUse`` of kind ``join``)
stand for the foreign keys. All of them, most used first, while they fit the budget (bytes, HypoPG's sizes)."""

from __future__ import annotations

from collections import Counter

from advisor.core.domain import IndexChange
from optimizers.indexes.base import IndexOptimizer


class ForeignKeys(IndexOptimizer):
    name = "fkeys"
    description = "every join (foreign-key) column gets a single-column index, within the budget"

    def _select(self) -> list[IndexChange]:
        problem = self.problem
        singles = {(c.table, c.index.columns[0]): c.index for c in problem.candidates if c.width == 1}
        used_by = Counter((u.table, u.column) for _, u in problem.uses if u.kind == "join")
        out: list[IndexChange] = []
        used = 0
        for key, _ in sorted(used_by.items(), key=lambda kv: (-kv[1], kv[0])):
            index = singles.get(key)
            if index is None or index in out:
                continue  # a primary key covers it, or its table is too small to index
            size = problem.whatif.size(index)
            if used + size <= problem.budget_bytes:
                out.append(index)
                used += size
        return out
