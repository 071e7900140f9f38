"""Which items to keep within a capacity: the exact 0/1 knapsack, solved with HiGHS (``highspy``, a MIP).

Every place that fits an index set to a storage budget after the fact calls ``best_within``: validation's repair
of a set that is over the budget once built (values: measured milliseconds saved; ``advisor.tuning.indexes.repair``),
Dexter's and the peers' final cut (values: what-if cost units saved, or uses). The ILP baseline
(``optimizers.indexes.ilp``) holds the same budget row inside its own model, with the same sizes
(``IndexProblem.size``), so it needs no second knapsack. Extend (``optimizers.indexes.baselines``) stays the
published greedy: its moves by benefit per byte are the algorithm the bench measures, not a fit after the fact.

Why exact: the greedy by value per byte (keep the best ratio while it fits) can drop the most valuable item. With
capacity 10 and items (value 9, size 10), (value 5, size 5), (value 4, size 6), the greedy keeps the 5/5 item (ratio
1.0 beats 0.9), then nothing else fits: value 5 kept, where the 9/10 item alone is worth 9.

>>> best_within([9.0, 5.0, 4.0], [10, 5, 6], 10)
[0]
>>> best_within([6.0, 5.0, 5.0], [10, 5, 5], 10)  # two that fit together beat the single best
[1, 2]

Items of no positive value are never kept (keeping them gains nothing and takes room). Units are the caller's:
sizes and capacity in one unit (bytes here), values in another (ms or cost units); of the subsets of the largest
value (equal within a billionth), the one of the smallest total size (a second solve).
"""

from __future__ import annotations

from collections.abc import Sequence


def best_within(values: Sequence[float], sizes: Sequence[float], capacity: float) -> list[int]:
    """The positions of the items to keep: the largest total value whose total size is at most ``capacity``
    (exact, HiGHS), in increasing order. Sizes must be non-negative."""
    if len(values) != len(sizes):
        raise ValueError(f"{len(values)} values for {len(sizes)} sizes")
    if any(s < 0 for s in sizes):
        raise ValueError("sizes must be non-negative")
    useful = [i for i, (v, s) in enumerate(zip(values, sizes)) if v > 0 and s <= capacity]
    if sum(sizes[i] for i in useful) <= capacity:  # everything worth keeping fits: nothing to choose
        return useful
    return sorted(useful[j] for j in _solve([float(values[i]) for i in useful], [float(sizes[i]) for i in useful],
                                            float(capacity)))


def _solve(values: list[float], sizes: list[float], capacity: float) -> list[int]:
    """max sum(v x) s.t. sum(s x) <= capacity, x binary; then, at that value, the smallest sum(s x). Positions
    into ``values``."""
    import highspy
    import numpy as np  # here, not at the top: the CLI lists this optimizer on every call

    n = len(values)
    idx = np.arange(n, dtype=np.int32)
    scale, top = max(values), max(max(sizes), 1.0)  # both objectives scaled to at most 1 per item
    v = np.array(values, dtype=float) / scale
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsIntegrality(n, idx, np.array([highspy.HighsVarType.kInteger] * n))
    h.addRow(-np.inf, capacity, n, idx, np.array(sizes, dtype=float))
    h.changeColsCost(n, idx, -v)
    best = _run(h, n, sizes, capacity)
    # the same value with the least storage: a second solve, its value held within a rounding of the first's
    h.addRow(float(v[best].sum()) - 1e-9 * n, np.inf, n, idx, v)
    h.changeColsCost(n, idx, np.array(sizes, dtype=float) / top)
    smaller = _run(h, n, sizes, capacity)
    return smaller if sum(values[i] for i in smaller) >= sum(values[i] for i in best) - 1e-9 * scale * n else best


def _run(h, n: int, sizes: list[float], capacity: float) -> list[int]:
    """Solve ``h`` (row 0: the capacity) and return the binaries at 1; a binary within the integrality tolerance
    of 1 may round over the capacity: the row is tightened and the model solved again."""
    import numpy as np

    for _ in range(3):
        h.run()
        if h.getInfo().primal_solution_status != 2:
            raise RuntimeError(f"knapsack not solved: {h.modelStatusToString(h.getModelStatus())}")
        x = h.getSolution().col_value
        kept = [i for i in range(n) if x[i] > 0.5]
        over = sum(sizes[i] for i in kept) - capacity
        if over <= 0:
            h.changeRowBounds(0, -np.inf, capacity)
            return kept
        h.changeRowBounds(0, -np.inf, capacity - over - 1)
    raise RuntimeError("knapsack not solved: its solution stays over the capacity")
