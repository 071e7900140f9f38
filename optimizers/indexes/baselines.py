"""Baseline index advisors behind the same plugin base as IA2: no index, Dexter's per-statement greedy, and
Extend (Schlosser, Kossmann, Boissier, ICDE 2019).

Units: costs are the problem's what-if costs (planner cost units, weighted by each query's weight, index
maintenance included, see ``IndexProblem.cost``); sizes are bytes (``WhatIf.size``, HypoPG's estimate).
"""

from __future__ import annotations

from collections import defaultdict

from advisor.core.domain import IndexChange
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.knapsack import best_within
from optimizers.indexes.problem import IndexProblem, Query, TableRef, prefetch, relevant


class NoIndex(IndexOptimizer):
    name = "noindex"
    description = "recommend nothing (the reference every relative cost is taken against)"

    def _select(self) -> list[IndexChange]:
        return []


class Dexter(IndexOptimizer):
    """Dexter-style per-statement greedy. Statements are visited heaviest first (weight x no-index cost, planner
    cost units); each gets the single relevant candidate that lowers *its* what-if cost most, provided the drop is
    at least ``min_gain`` (a fraction) of its cost under the indexes picked so far. Of the picks, those kept are
    the ones with the largest total workload benefit (cost units, each pick costed alone) that fit the budget
    (bytes): an exact knapsack (``optimizers.indexes.knapsack``), not a greedy by benefit per byte."""

    name = "dexter"
    description = "Dexter-style: per statement, the best single index; then the most benefit that fits the budget"

    def _setup(self, min_gain: float = 0.05) -> None:
        self.min_gain = min_gain

    def _select(self) -> list[IndexChange]:
        problem = self.problem
        w = problem.whatif
        picked: list[IndexChange] = []
        order = sorted(problem.queries, key=lambda q: -q.weight * w.cost(q, frozenset()).total)
        for q in order:
            current = frozenset(picked)
            now = w.cost(q, relevant(q, current)).total
            best, best_gain = None, 0.0
            tried = [cand for cand in problem.candidates
                     if q.queryid in cand.queries and cand.index not in current and cand.table in q.tables]
            prefetch(w, ((q, relevant(q, current | {cand.index})) for cand in tried))  # planned at once
            for cand in tried:
                gain = now - w.cost(q, relevant(q, current | {cand.index})).total
                if gain > best_gain:
                    best, best_gain = cand.index, gain
            if best is not None and best_gain >= self.min_gain * now:
                picked.append(best)
        base = problem.cost()
        keep = best_within([base - problem.cost([ix]) for ix in picked], [w.size(ix) for ix in picked],
                           problem.budget_bytes)
        return [picked[i] for i in keep]


class Extend(IndexOptimizer):
    """Extend (Schlosser et al., ICDE 2019). Start from no index; each step considers (a) adding a single-column
    candidate not chosen yet and (b) extending a chosen index by one trailing column, i.e. replacing it with the
    candidate whose columns are its columns plus one (same table; only candidates of the problem are allowed).
    It takes the move with the best benefit (planner cost units saved) per extra byte among the moves whose
    configuration fits the budget (bytes) and improves the workload cost by at least ``min_improvement``
    (relative); it stops when no move qualifies.

    A move on table T only changes the costs of the queries that read T (and T's maintenance), so each move is
    costed on those queries alone; the what-if cache makes repeated configurations free, and a step's moves are
    planned at once (``prefetch``: over several planner sessions where the coster has them)."""

    name = "extend"
    description = "Extend: grow indexes one attribute at a time, greedy on benefit per byte"

    def _setup(self, min_improvement: float = 0.001) -> None:
        self.min_improvement = min_improvement

    def _select(self) -> list[IndexChange]:
        return extend(self.problem, [], self.min_improvement)


def readers_of(problem: IndexProblem) -> dict[TableRef, list[Query]]:
    """Per table, the problem's queries that read it (a change on a table can only change their costs)."""
    readers: dict[TableRef, list[Query]] = defaultdict(list)
    for q in problem.queries:
        for t in q.tables:
            readers[t].append(q)
    return readers


def extend(problem: IndexProblem, start: list[IndexChange], min_improvement: float = 0.001) -> list[IndexChange]:
    """Extend's greedy moves from the configuration ``start`` (which must fit the budget) until none qualifies."""
    w = problem.whatif
    upkeep = problem.upkeep
    readers = readers_of(problem)
    singles = list(dict.fromkeys(c.index for c in problem.candidates if c.width == 1))
    longer: dict[tuple, list[IndexChange]] = defaultdict(list)  # (table, columns, method) -> one column more
    for c in dict.fromkeys(c.index for c in problem.candidates if c.width > 1):
        longer[_shape(c, c.columns[:-1])].append(c)

    config: list[IndexChange] = list(start)
    cost = problem.cost(config)
    used = problem.size(config)

    def table_cost(table: TableRef, cfg: frozenset[IndexChange]) -> float:
        return sum(q.weight * w.cost(q, relevant(q, cfg)).total for q in readers.get(table, ()))

    while True:
        chosen = frozenset(config)
        moves: list[tuple[list[IndexChange], IndexChange, int, bool]] = []  # (config, touched, extra, added)
        for ix in singles:
            if ix not in chosen:
                moves.append((config + [ix], ix, w.size(ix), True))
        for i, ix in enumerate(config):
            for ext in longer.get(_shape(ix, ix.columns), ()):
                if ext not in chosen:
                    moves.append((config[:i] + [ext] + config[i + 1:], ext, w.size(ext) - w.size(ix), False))
        best = None  # (ratio, new config, new size)
        before: dict[TableRef, float] = {}
        prefetch(w, ((q, relevant(q, cfg)) for new, touched, extra, _added in moves
                     if used + extra <= problem.budget_bytes
                     for cfg in (chosen, frozenset(new)) for q in readers.get((touched.schema, touched.table), ())))
        for new, touched, extra, added in moves:
            if used + extra > problem.budget_bytes:
                continue
            table = (touched.schema, touched.table)
            if table not in before:
                before[table] = table_cost(table, chosen)
            benefit = before[table] - table_cost(table, frozenset(new))
            benefit -= upkeep.get(table, 0.0) if added else 0.0
            if cost <= 0 or benefit <= 0 or benefit / cost < min_improvement:
                continue
            ratio = benefit / max(extra, 1)
            if best is None or ratio > best[0]:
                best = (ratio, new, used + extra)
        if best is None:
            return config
        _, config, used = best
        cost = problem.cost(config)


def _shape(index: IndexChange, columns: tuple[str, ...]) -> tuple:
    """What an index extended by one key column keeps: its table, method, INCLUDE columns and predicate."""
    return (index.schema, index.table, columns, index.method, index.include, index.where)
