"""The index-selection environment IA2 learns in: one episode builds one configuration for one workload mix
and budget, one index per step.

- Actions are the candidates of the target (a fixed list). **Adaptive masking**: a candidate is valid only when
  it is relevant to a query of the current mix, is not chosen yet (nor a prefix of a chosen index), fits the remaining budget, and is either a
  single column or extends a chosen index by one trailing column (the extension replaces that index).
- Each state is described per candidate (what IA2 calls the workload representation, made from the current
  plans): the share of the workload's cost in the queries that can use it, their sequential-scan cost on its
  table, how they use its leading and trailing columns (equality, range, join, group, order), its size against
  the budget and the remaining budget, its width; its what-if benefit alone (one call per (query, candidate),
  cached), that benefit scaled by how much of those queries' cost is left, and per unit of storage; plus global
  features: storage used, cost left, step.
- Reward: the relative what-if cost reduction ``(C_prev - C_new) / C_0`` (``Step.relative``; an episode's return
  is then its total reduction), and IA2's reward, that reduction per unit of storage
  ``/ (extra bytes / budget)`` with the storage term floored at 1% of the budget (``Step.reward``). The agent
  trains on either (``IA2Options.reward``); the bench measured the first better on TPC-H.

Costs come from the problem's what-if coster (cached), so revisiting a configuration is free; a step's statements
(and the solo benefits) are planned at once (``prefetch``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.domain import IndexChange
from optimizers.indexes.problem import Candidate, IndexProblem, prefetch, relevant

KINDS = ("equality", "range", "join", "group", "order")
CANDIDATE_FEATURES = 18
GLOBAL_FEATURES = 4
MIN_STORAGE_SHARE = 0.01
MAX_STEPS = 32  # indexes an episode may add (16 capped IA2 below Extend's 19 on 33 JOB joins: RC 0.159 -> 0.143)


@dataclass
class Step:
    reward: float  # relative cost reduction per unit of storage (IA2's reward)
    done: bool
    relative: float = 0.0  # relative cost reduction alone, (C_prev - C_new) / C_0


class IndexEnv:
    """Episodes over ``candidates`` (the action list, fixed per target) for one problem at a time."""

    def __init__(self, candidates: tuple[Candidate, ...], max_steps: int = MAX_STEPS):
        self.candidates = candidates
        self.max_steps = max_steps
        self._by_index = {c.index: i for i, c in enumerate(candidates)}
        # _covers[i]: the candidates that are proper prefixes of candidate i (a chosen index covers them; a
        # partial index covers only its own rows, so nothing)
        self._covers = [[self._by_index[p] for k in range(1, c.width)
                         if (p := IndexChange(c.index.schema, c.index.table, c.index.columns[:k], c.index.method))
                         in self._by_index] if not c.index.where else [] for c in candidates]
        # _prefix[i]: the candidate that candidate i extends by one key column (the same variant), -1 if none
        self._prefix = np.array([self._by_index.get(IndexChange(c.index.schema, c.index.table, c.index.columns[:-1],
                                                                c.index.method, include=c.index.include,
                                                                where=c.index.where), -1) if c.width > 1 else -1
                                 for c in candidates])

    # --- episode ------------------------------------------------------------------------------------------------

    def reset(self, problem: IndexProblem) -> None:
        self.problem = problem
        self.queries = problem.queries
        active = {q.queryid for q in self.queries}
        offered = {c.index for c in problem.candidates}  # the problem may offer a subset of the action space
        self.relevant = np.array([bool(c.queries & active) and c.index in offered for c in self.candidates])
        self.sizes = np.array([problem.whatif.size(c.index) if r else 0 for c, r in zip(self.candidates, self.relevant)],
                              dtype=float)
        self.budget = float(problem.budget_bytes)
        self.chosen: set[int] = set()
        self.used = 0.0
        self.steps = 0
        self._uses = self._use_table(problem)
        self._costs = self._query_costs(frozenset())
        self._empty = {qid: c.total for qid, c in self._costs.items()}
        self.cost0 = self.cost = self._total(self._costs)
        self._solo = self._solo_benefits(problem)
        self._incidence()

    def config(self) -> list[IndexChange]:
        return [self.candidates[i].index for i in sorted(self.chosen)]

    def added_bytes(self) -> np.ndarray:
        """Bytes each action adds: its size, less the size of the index it replaces when it extends one."""
        prefix_size = np.where(self._prefix >= 0, self.sizes[np.maximum(self._prefix, 0)], 0.0)
        extends = np.array([p in self.chosen for p in self._prefix])
        return self.sizes - np.where(extends, prefix_size, 0.0)

    def mask(self) -> np.ndarray:
        if self.steps >= self.max_steps:
            return np.zeros(len(self.candidates), dtype=bool)
        chosen = np.zeros(len(self.candidates), dtype=bool)
        chosen[list(self.chosen)] = True
        for i in self.chosen:  # a chosen index already serves its prefixes
            chosen[self._covers[i]] = True
        prefix_ok = (self._prefix < 0) | np.array([p in self.chosen for p in self._prefix])
        fits = self.added_bytes() <= self.budget - self.used + 1e-6
        return self.relevant & ~chosen & prefix_ok & fits

    def step(self, action: int) -> Step:
        if not self.mask()[action]:
            raise ValueError(f"action {action} ({self.candidates[action].index}) is masked")
        extra = float(self.added_bytes()[action])
        prefix = int(self._prefix[action])
        if prefix in self.chosen:
            self.chosen.discard(prefix)
        self.chosen.add(action)
        self.used += extra
        self.steps += 1
        self._costs = self._query_costs(frozenset(self.config()))
        new = self._total(self._costs) + self._upkeep()
        share = max(extra / self.budget, MIN_STORAGE_SHARE) if self.budget > 0 else 1.0
        relative = (self.cost - new) / self.cost0 if self.cost0 > 0 else 0.0
        self.cost = new
        return Step(float(relative / share), not self.mask().any(), float(relative))

    # --- features -----------------------------------------------------------------------------------------------

    def features(self) -> tuple[np.ndarray, np.ndarray]:
        """(global features [GLOBAL_FEATURES], per-candidate features [n_candidates, CANDIDATE_FEATURES]).
        Vectorized over the incidence matrices built in ``reset``."""
        c0 = self.cost0 or 1.0
        costs = np.array([self._costs[q.queryid].total for q in self.queries])
        per_query = self._weights * costs / c0
        n = len(self.candidates)
        added = self.added_bytes()
        budget = max(self.budget, 1.0)
        remaining = max(self.budget - self.used, 1.0)
        scan = np.zeros(n)
        for table, idx in self._by_table.items():
            s_t = self._weights * np.array([self._costs[q.queryid].seq_scans.get(table, 0.0) for q in self.queries])
            scan[idx] = self._R[idx] @ s_t / c0
        left = self._S @ np.minimum(1.0, costs / np.maximum(self._empty_vec, 1e-9)) / c0
        chosen = np.zeros(n, dtype=bool)
        chosen[list(self.chosen)] = True
        per_table = np.array([chosen[idx].sum() for idx in self._table_of_members])[self._table_index]
        out = np.column_stack([
            self._R @ per_query, scan, *(self._LK @ per_query), self._LA @ per_query,
            np.minimum(self.sizes / budget, 2.0), np.minimum(added / remaining, 2.0), self._width / 3.0,
            (self._prefix >= 0).astype(float), np.isin(self._prefix, list(self.chosen)).astype(float),
            np.minimum(per_table / 3.0, 1.0), np.ones(n), self._S.sum(1) / c0, left,
            np.minimum(left / np.maximum(added / budget, MIN_STORAGE_SHARE), 10.0) / 10.0,
        ]).astype(np.float32)
        out[~self.relevant] = 0.0
        g = np.array([self.used / budget, self.cost / c0, self.steps / self.max_steps,
                      float(np.log10(budget) / 12.0)], dtype=np.float32)
        return g, out

    # --- helpers ------------------------------------------------------------------------------------------------

    def _use_table(self, problem: IndexProblem) -> dict:
        """(table, column) -> kind -> query positions in this mix that use the column that way."""
        pos = {q.queryid: k for k, q in enumerate(self.queries)}
        table: dict = {}
        for qid, use in problem.uses:
            if qid in pos:
                table.setdefault((use.table, use.column), {}).setdefault(use.kind, set()).add(pos[qid])
        return table

    def _incidence(self) -> None:
        """Matrices [candidate, query] of this episode's mix: relevance, how the leading column is used (one
        matrix per kind), whether the last column is used, and each candidate's solo benefit."""
        n, m = len(self.candidates), len(self.queries)
        pos = {q.queryid: k for k, q in enumerate(self.queries)}
        self._weights = np.array([q.weight for q in self.queries])
        self._empty_vec = np.array([self._empty[q.queryid] for q in self.queries])
        self._R = np.zeros((n, m))
        self._LK = np.zeros((len(KINDS), n, m))
        self._LA = np.zeros((n, m))
        self._S = np.zeros((n, m))
        for i, cand in enumerate(self.candidates):
            if not self.relevant[i]:
                continue
            for qid in cand.queries:
                if qid in pos:
                    self._R[i, pos[qid]] = 1.0
            lead = self._uses.get((cand.table, cand.index.columns[0]), {})
            for j, kind in enumerate(KINDS):
                for k in lead.get(kind, ()):
                    self._LK[j, i, k] = 1.0
            for k in set().union(*self._uses.get((cand.table, cand.index.columns[-1]), {}).values()):
                self._LA[i, k] = 1.0
            for qid, b in self._solo.get(i, {}).items():
                self._S[i, pos[qid]] = b
        self._width = np.array([c.width for c in self.candidates], dtype=float)
        names = sorted({c.index.table for c in self.candidates})
        self._by_table = {t: np.array([i for i, c in enumerate(self.candidates) if c.index.table == t]) for t in names}
        tables = sorted({c.table for c in self.candidates})
        self._table_index = np.array([tables.index(c.table) for c in self.candidates])
        self._table_of_members = [np.flatnonzero(self._table_index == t) for t in range(len(tables))]

    def _solo_benefits(self, problem: IndexProblem) -> dict[int, dict[str, float]]:
        """Per relevant candidate, per query it serves: weight x (cost without indexes - cost with it alone).
        What-if calls happen once per (query, candidate) for the target; later episodes hit the cache."""
        out: dict[int, dict[str, float]] = {}
        by_id = {q.queryid: q for q in self.queries}
        prefetch(problem.whatif, ((q, frozenset({cand.index})) for i, cand in enumerate(self.candidates)
                                  if self.relevant[i] for qid in cand.queries
                                  if (q := by_id.get(qid)) is not None and cand.table in q.tables))
        for i, cand in enumerate(self.candidates):
            if not self.relevant[i]:
                continue
            gains = {}
            for qid in cand.queries:
                q = by_id.get(qid)
                if q is not None and cand.table in q.tables:
                    alone = problem.whatif.cost(q, frozenset({cand.index})).total
                    gains[qid] = q.weight * max(0.0, self._empty[qid] - alone)
            out[i] = gains
        return out

    def _query_costs(self, config: frozenset[IndexChange]):
        prefetch(self.problem.whatif, ((q, relevant(q, config)) for q in self.queries))  # planned at once
        return {q.queryid: self.problem.whatif.cost(q, relevant(q, config)) for q in self.queries}

    def _upkeep(self) -> float:
        """Index maintenance (cost units) of the chosen indexes on written tables."""
        per_table = self.problem.upkeep
        return sum(per_table.get(self.candidates[i].table, 0.0) for i in self.chosen)

    def _total(self, costs) -> float:
        return sum(q.weight * costs[q.queryid].total for q in self.queries)
