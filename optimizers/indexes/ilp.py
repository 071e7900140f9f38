"""The exact index-selection ILP (CoPhy-style atomic configurations), solved with HiGHS, to measure how far the
heuristics are from the optimum.

Variables: binary ``x_i`` (candidate i is built) and, per query q, ``y_qa`` in [0, 1] for each atomic
configuration ``a`` of q: no index, one relevant candidate, or (``pairs``) two relevant candidates on different
tables. Constraints: each query takes exactly one atom (``sum_a y_qa = 1``); an atom only if its indexes are built
(``sum_{a containing i} y_qa <= x_i``, the aggregated and tighter form of ``y_qa <= x_i``); the built indexes'
sizes within the budget (bytes). Objective (planner cost units): ``sum_q weight_q * sum_a cost(q, a) * y_qa``
plus the maintenance of the built indexes (``IndexProblem.maintenance``).

Exact reductions keep the model small: a candidate larger than the budget is never built (and never costed),
nor is a pair larger than the budget; an atom that costs no less than one of its sub-atoms is dropped.

The model assumes a plan uses at most its atom's indexes (so it overestimates queries that would use three
indexes, or two on one table): callers judge the result by its true what-if cost, ``problem.cost(chosen)``.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from advisor.core.domain import IndexChange
from advisor.core.errors import AdvisorError
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.problem import IndexProblem, prefetch

Atom = tuple[int, ...]  # candidate positions; () is "no index"


class NotSolved(AdvisorError):
    """The ILP refused an instance too large for it, or HiGHS found no solution within its limits."""


class ExactILP(IndexOptimizer):
    """After ``ask``: ``last_status`` ("optimal", "time_limit", ...), ``last_objective`` (the model's workload
    cost of the returned configuration, planner cost units), ``last_gap`` (HiGHS's relative MIP gap) and
    ``last_atoms`` (atomic configurations in the model)."""

    name = "ilp"
    description = "exact ILP over atomic configurations (HiGHS), for instances small enough to solve"

    def _setup(self, pairs: bool = True, max_atoms: int = 20_000, max_candidates: int = 400,
               time_limit_s: float = 60.0, max_nodes: int | None = None) -> None:
        self.pairs, self.max_atoms, self.max_candidates = pairs, max_atoms, max_candidates
        self.time_limit_s = time_limit_s
        self.max_nodes = max_nodes  # branch-and-bound nodes at most: a bound that, unlike time, any machine meets alike
        self.last_status = ""
        self.last_objective: float | None = None
        self.last_gap: float | None = None
        self.last_atoms = 0

    def _atoms(self, problem: IndexProblem, sizes: list[int]) -> dict[str, list[Atom]]:
        """Per query, its atoms (before the cost-dominance pruning): pairs only if they all stay under
        ``max_atoms``."""
        fits = [s <= problem.budget_bytes for s in sizes]
        per_query = {q.queryid: [i for i, c in enumerate(problem.candidates)
                                 if fits[i] and q.queryid in c.queries and c.table in q.tables]
                     for q in problem.queries}
        singles: dict[str, list[Atom]] = {qid: [()] + [(i,) for i in idx] for qid, idx in per_query.items()}
        if not self.pairs:
            return singles
        tables = [c.table for c in problem.candidates]
        both = {qid: singles[qid] + [(i, j) for i, j in combinations(idx, 2)
                                     if tables[i] != tables[j] and sizes[i] + sizes[j] <= problem.budget_bytes]
                for qid, idx in per_query.items()}
        return both if sum(map(len, both.values())) < self.max_atoms else singles

    def explain(self) -> dict[str, str]:
        if not self.last_status:
            return {}
        return {"status": self.last_status, "objective": f"{self.last_objective}", "gap": f"{self.last_gap}",
                "atoms": str(self.last_atoms)}

    def _select(self) -> list[IndexChange]:
        import highspy

        problem = self.problem

        n = len(problem.candidates)
        if n > self.max_candidates:
            raise NotSolved(f"ILP instance too large: {n} candidates (at most {self.max_candidates})")
        if n == 0:  # nothing to choose: the model is its constant
            self.last_status, self.last_objective, self.last_gap, self.last_atoms = "optimal", problem.cost(), 0.0, 0
            return []
        w = problem.whatif
        indexes = [c.index for c in problem.candidates]
        sizes = [w.size(ix) for ix in indexes]
        upkeep = problem.upkeep
        atoms = self._atoms(problem, sizes)

        # columns: x_0..x_{n-1}, then the y's; rows: budget, one "exactly one atom" per query, one link per (q, i)
        costs = [upkeep.get(c.table, 0.0) for c in problem.candidates]
        rows: list[tuple[float, float, list[int], list[float]]] = [(-np.inf, float(problem.budget_bytes),
                                                                   list(range(n)), [float(s) for s in sizes])]
        serves: dict[int, list[int]] = {}  # candidate -> the y's of the atoms it is part of
        prefetch(w, ((q, frozenset(indexes[i] for i in atom)) for q in problem.queries for atom in atoms[q.queryid]))
        for q in problem.queries:
            priced: dict[Atom, float] = {}
            for atom in atoms[q.queryid]:
                c = w.cost(q, frozenset(indexes[i] for i in atom)).total
                if all(priced.get(sub, np.inf) > c for sub in _subsets(atom)):
                    priced[atom] = c
            ys = list(range(len(costs), len(costs) + len(priced)))
            costs.extend(q.weight * c for c in priced.values())
            rows.append((1.0, 1.0, ys, [1.0] * len(ys)))
            links: dict[int, list[int]] = {}
            for y, atom in zip(ys, priced):
                for i in atom:
                    links.setdefault(i, []).append(y)
            for i, linked in links.items():
                serves.setdefault(i, []).extend(linked)
                rows.append((-np.inf, 0.0, linked + [i], [1.0] * len(linked) + [-1.0]))
        self.last_atoms = len(costs) - n

        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("time_limit", float(self.time_limit_s))
        if self.max_nodes is not None:
            h.setOptionValue("mip_max_nodes", int(self.max_nodes))
        h.setOptionValue("random_seed", int(self.seed))
        m = len(costs)
        h.addVars(m, np.zeros(m), np.ones(m))
        h.changeColsCost(m, np.arange(m, dtype=np.int32), np.array(costs, dtype=float))
        h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * n))
        starts = np.cumsum([0] + [len(r[2]) for r in rows[:-1]]).astype(np.int32)
        h.addRows(len(rows), np.array([r[0] for r in rows], dtype=float), np.array([r[1] for r in rows], dtype=float),
                  int(sum(len(r[2]) for r in rows)), starts,
                  np.array([j for r in rows for j in r[2]], dtype=np.int32),
                  np.array([v for r in rows for v in r[3]], dtype=float))

        for _ in range(3):  # a binary within the integrality tolerance of 1 may round over the budget: tighten, redo
            h.run()
            status = h.getModelStatus()
            self.last_status = _STATUS.get(status.name, h.modelStatusToString(status).lower().replace(" ", "_"))
            info = h.getInfo()
            if info.primal_solution_status != 2:  # no feasible solution (time ran out first, or infeasible)
                raise NotSolved(f"ILP not solved: {self.last_status}")
            self.last_gap = float(info.mip_gap)
            values = h.getSolution().col_value
            # an index no chosen atom uses costs nothing in the model (without maintenance), so it may be on: drop it
            chosen = [i for i in range(n) if values[i] > 0.5 and any(values[y] > 1e-6 for y in serves.get(i, ()))]
            self.last_objective = float(sum(costs[i] for i in chosen) + np.dot(costs[n:], values[n:]))
            over = sum(sizes[i] for i in chosen) - problem.budget_bytes
            if over <= 0:
                return [indexes[i] for i in chosen]
            h.changeRowBounds(0, -np.inf, float(problem.budget_bytes - over - 1))
        raise NotSolved(f"ILP not solved: its solution stays over the budget ({self.last_status})")


_STATUS = {"kOptimal": "optimal", "kTimeLimit": "time_limit", "kInfeasible": "infeasible",
           "kInterrupt": "interrupted", "kSolutionLimit": "solution_limit", "kIterationLimit": "iteration_limit"}


def _subsets(atom: Atom) -> list[Atom]:
    """The atoms strictly inside ``atom`` (all of them are in the model when ``atom`` is)."""
    return [()] if len(atom) == 1 else [(), atom[:1], atom[1:]] if len(atom) == 2 else []
