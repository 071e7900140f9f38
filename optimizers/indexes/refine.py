"""Local refinement of a chosen index set, as DBAs prune an advisor's list: drop the indexes the others make
(almost) redundant, then spend the freed budget with Extend's moves (``optimizers.indexes.baselines.extend``).

An index is redundant when removing it raises the workload's what-if cost by less than ``min_loss`` of it: e.g. a
plain ``orders(o_orderdate)`` next to ``orders(o_orderdate) INCLUDE (...)``, which serves the same statements
almost as cheaply. Removals go one at a time, the least loss per byte first, each re-costed against what is left
(two near-duplicates never both leave). The result never costs more than the input, and at equal cost takes less
storage: a refinement that would not is undone.

>>> from advisor.core.domain import Costed, IndexChange
>>> from optimizers.indexes.problem import Candidate, IndexProblem, Query
>>> a, ab = IndexChange("public", "t", ("a",)), IndexChange("public", "t", ("a", "b"))
>>> class W:
...     calls = 0
...     def cost(self, q, cfg): return Costed(10.0 if ab in cfg else 11.0 if a in cfg else 100.0)
...     def size(self, i): return 100 * len(i.columns)
>>> q = Query("q", "SELECT 1 FROM t WHERE a = 1 AND b = 2", 1.0, frozenset({("public", "t")}))
>>> cands = tuple(Candidate(i, frozenset({"q"})) for i in (a, ab))
>>> out, report = refine(IndexProblem((q,), cands, 300, W()), [a, ab])
>>> [i.label() for i in out], report["dropped"]
(['t(a, b)'], ['t(a)'])
"""

from __future__ import annotations

from advisor.core.domain import IndexChange
from optimizers.indexes.baselines import extend, readers_of
from optimizers.indexes.problem import IndexProblem, prefetch, relevant

MIN_LOSS = 0.001  # Extend's own threshold: a move worth less than 0.1% of the workload cost is not made


def refine(problem: IndexProblem, chosen: list[IndexChange] | tuple[IndexChange, ...],
           min_loss: float = MIN_LOSS) -> tuple[list[IndexChange], dict]:
    """(the refined set, {"dropped", "added", "cost": [before, after]}); index names as ``table(columns)``."""
    before = problem.cost(chosen)
    kept = prune(problem, list(chosen), min_loss)
    out = extend(problem, kept, min_loss)
    after = problem.cost(out)
    if after > before or (after == before and problem.size(out) >= problem.size(chosen)):  # the input stands
        return list(chosen), {"dropped": [], "added": [], "cost": [before, before]}
    dropped = [ix.label() for ix in chosen if ix not in out]
    added = [ix.label() for ix in out if ix not in chosen]
    return out, {"dropped": dropped, "added": added, "cost": [before, after]}


def prune(problem: IndexProblem, config: list[IndexChange], min_loss: float = MIN_LOSS) -> list[IndexChange]:
    """``config`` less its redundant indexes (see the module), removed one at a time."""
    w, upkeep, readers = problem.whatif, problem.upkeep, readers_of(problem)
    total = problem.cost(config)

    def table_cost(table, cfg: frozenset[IndexChange]) -> float:
        return sum(q.weight * w.cost(q, relevant(q, cfg)).total for q in readers.get(table, ())) + \
            upkeep.get(table, 0.0) * sum((i.schema, i.table) == table for i in cfg)

    while config:
        current = frozenset(config)
        best = None  # (loss per byte, index)
        prefetch(w, ((q, relevant(q, current - {ix})) for ix in config for q in readers.get((ix.schema, ix.table), ())))
        for ix in config:
            table = (ix.schema, ix.table)
            loss = table_cost(table, current - {ix}) - table_cost(table, current)
            if loss < min_loss * total:
                ratio = loss / max(w.size(ix), 1)
                if best is None or ratio < best[0]:
                    best = (ratio, ix)
        if best is None:
            return config
        config = [i for i in config if i != best[1]]
        total = problem.cost(config)
    return config
