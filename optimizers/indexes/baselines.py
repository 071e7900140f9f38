"""Baseline index advisors behind the same plugin base as IA2: no index, Dexter's per-statement greedy, and
Extend (Schlosser, Kossmann, Boissier, ICDE 2019). Costs are the problem's what-if costs (planner cost units,
index maintenance included); sizes are bytes."""

from __future__ import annotations

from advisor.domain import IndexChange
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.problem import IndexProblem, relevant
from optimizers.registry import register


@register
class NoIndex(IndexOptimizer):
    name = "noindex"
    description = "recommend nothing (the reference every relative cost is taken against)"

    def select(self, problem: IndexProblem) -> list[IndexChange]:
        return []


@register
class Dexter(IndexOptimizer):
    """Per statement, heaviest first: the single candidate that lowers that statement's cost most (by at least
    ``min_gain`` of it, under the indexes picked so far); then the picks by workload benefit per byte while they
    fit the budget."""

    name = "dexter"
    description = "Dexter-style: per statement, the best single index; then by benefit per byte within budget"

    def __init__(self, seed: int = 0, min_gain: float = 0.05, **options):
        super().__init__(seed, **options)
        self.min_gain = min_gain

    def select(self, problem: IndexProblem) -> list[IndexChange]:
        w = problem.whatif
        picked: list[IndexChange] = []
        order = sorted(problem.queries, key=lambda q: -q.weight * w.cost(q, frozenset()).total)
        for q in order:
            current = frozenset(picked)
            now = w.cost(q, relevant(q, current)).total
            best, best_cost = None, now * (1.0 - self.min_gain)
            for cand in problem.candidates:
                if q.queryid not in cand.queries or cand.index in current:
                    continue
                cost = w.cost(q, relevant(q, current | {cand.index})).total
                if cost < best_cost:
                    best, best_cost = cand.index, cost
            if best is not None:
                picked.append(best)
        base = problem.cost()
        ranked = sorted(picked, key=lambda ix: -(base - problem.cost([ix])) / max(w.size(ix), 1))
        out: list[IndexChange] = []
        used = 0
        for ix in ranked:
            if used + w.size(ix) <= problem.budget_bytes:
                out.append(ix)
                used += w.size(ix)
        return out


@register
class Extend(IndexOptimizer):
    """Start empty; each step takes the move with the best benefit per extra byte among: add a single-column
    candidate, or extend a chosen index by one trailing column (the extension replaces it). Stops when no move
    that fits the budget improves the workload cost by at least ``min_improvement`` (relative)."""

    name = "extend"
    description = "Extend: grow indexes one attribute at a time, greedy on benefit per byte"

    def __init__(self, seed: int = 0, min_improvement: float = 0.001, **options):
        super().__init__(seed, **options)
        self.min_improvement = min_improvement

    def select(self, problem: IndexProblem) -> list[IndexChange]:
        w = problem.whatif
        by_key = {(c.index.schema, c.index.table, c.index.columns): c.index for c in problem.candidates}
        singles = [c.index for c in problem.candidates if c.width == 1]
        config: list[IndexChange] = []
        cost = problem.cost(config)
        used = 0
        while True:
            best = None  # (ratio, new config, new cost, new size)
            moves: list[tuple[list[IndexChange], int]] = []
            for ix in singles:
                if ix not in config:
                    moves.append((config + [ix], w.size(ix)))
            for i, ix in enumerate(config):
                for (schema, table, cols), longer in by_key.items():
                    if (schema, table) == (ix.schema, ix.table) and len(cols) == len(ix.columns) + 1 \
                            and cols[:-1] == ix.columns and longer not in config:
                        moves.append((config[:i] + [longer] + config[i + 1:], w.size(longer) - w.size(ix)))
            for new, extra in moves:
                if used + extra > problem.budget_bytes:
                    continue
                new_cost = problem.cost(new)
                benefit = cost - new_cost
                if cost <= 0 or benefit / cost < self.min_improvement:
                    continue
                ratio = benefit / max(extra, 1)
                if best is None or ratio > best[0]:
                    best = (ratio, new, new_cost, used + extra)
            if best is None:
                return config
            _, config, cost, used = best
