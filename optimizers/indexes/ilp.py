"""The exact index-selection ILP (CoPhy-style atomic configurations), solved with HiGHS, to measure how far the
heuristics are from the optimum.

Variables: ``x_i`` (index i is built) and, per query q, ``y_qa`` for each atomic configuration ``a`` of q: no
index, one relevant candidate, or (``pairs``) two relevant candidates on different tables. Constraints: each
query takes exactly one atom, an atom only if all its indexes are built, the sizes of the built indexes within
the budget. Objective: ``sum_q weight_q * sum_a cost(q, a) * y_qa`` plus the maintenance of the built indexes.
The model assumes a plan uses at most its atom's indexes, so callers judge the result by its real what-if cost.
"""

from __future__ import annotations

from itertools import combinations

from advisor.domain import IndexChange
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.problem import IndexProblem
from optimizers.registry import register


@register
class ExactILP(IndexOptimizer):
    name = "ilp"
    description = "exact ILP over atomic configurations (HiGHS), for instances small enough to solve"

    def __init__(self, seed: int = 0, pairs: bool = True, max_atoms: int = 20_000, max_candidates: int = 400,
                 time_limit_s: float = 60.0, **options):
        super().__init__(seed, **options)
        self.pairs, self.max_atoms, self.max_candidates, self.time_limit_s = pairs, max_atoms, max_candidates, time_limit_s
        self.last_status = ""
        self.last_objective: float | None = None
        self.last_gap: float | None = None

    def _atoms(self, problem: IndexProblem) -> dict[str, list[tuple[int, ...]]]:
        per_query: dict[str, list[int]] = {
            q.queryid: [i for i, c in enumerate(problem.candidates) if q.queryid in c.queries and c.table in q.tables]
            for q in problem.queries}
        singles = {qid: [()] + [(i,) for i in idx] for qid, idx in per_query.items()}
        if not self.pairs:
            return singles
        tables = [c.table for c in problem.candidates]
        withpairs = {qid: singles[qid] + [(i, j) for i, j in combinations(idx, 2) if tables[i] != tables[j]]
                     for qid, idx in per_query.items()}
        return withpairs if sum(map(len, withpairs.values())) <= self.max_atoms else singles

    def select(self, problem: IndexProblem) -> list[IndexChange]:
        import highspy

        n = len(problem.candidates)
        if n > self.max_candidates:
            raise ValueError(f"ILP instance too large: {n} candidates (at most {self.max_candidates})")
        w = problem.whatif
        sizes = [w.size(c.index) for c in problem.candidates]
        upkeep = dict(problem.maintenance)
        atoms = self._atoms(problem)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("time_limit", float(self.time_limit_s))
        h.setOptionValue("random_seed", int(self.seed))
        x = [h.addBinary() for _ in range(n)]
        objective = sum(upkeep.get(c.table, 0.0) * x[i] for i, c in enumerate(problem.candidates)) if upkeep else 0
        h.addConstr(sum(sizes[i] * x[i] for i in range(n)) <= problem.budget_bytes)
        for q in problem.queries:
            ys = []
            for atom in atoms[q.queryid]:
                y = h.addVariable(0.0, 1.0)
                ys.append(y)
                for i in atom:
                    h.addConstr(y - x[i] <= 0)
                cost = w.cost(q, frozenset(problem.candidates[i].index for i in atom)).total
                objective = objective + q.weight * cost * y
            h.addConstr(sum(ys) == 1)
        h.minimize(objective)
        status = h.getModelStatus()
        self.last_status = h.modelStatusToString(status).lower()
        info = h.getInfo()
        self.last_objective = float(info.objective_function_value)
        self.last_gap = float(info.mip_gap)
        if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
            raise ValueError(f"ILP not solved: {self.last_status}")
        values = h.vals(x)
        return [problem.candidates[i].index for i in range(n) if values[i] > 0.5]
