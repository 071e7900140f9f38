"""Budgets chosen exactly: the knapsack every budget fit uses (``optimizers.indexes.knapsack``) keeps the most
valuable subset that fits, where the greedy by value per byte can drop the most valuable item; the budget cuts of
Dexter and the peers use it. Units: sizes and capacities in bytes, values in ms or planner cost units."""

import itertools
import random

import pytest

from advisor.core.domain import Costed, IndexChange
from optimizers import registry
from optimizers.indexes.knapsack import best_within
from optimizers.indexes.problem import Candidate, ColumnUse, IndexProblem, Query

MB = 1 << 20


def greedy_by_ratio(values, sizes, capacity):
    """What the budget fits did before: the best value per byte first, while it fits."""
    kept, used = [], 0
    for i in sorted(range(len(values)), key=lambda i: -values[i] / max(sizes[i], 1)):
        if used + sizes[i] <= capacity:
            kept.append(i)
            used += sizes[i]
    return sorted(kept)


def test_golden_the_greedy_ratio_drops_the_most_valuable_index_and_the_exact_choice_keeps_it():
    # the shape: an index on the largest table saving most (a one-week range, 108 ms -> 2 ms a call), and
    # small indexes on small tables saving a few ms each but more per byte
    values = [318.0, 9.0, 7.5, 6.0, 5.0]  # ms per workload run
    sizes = [80 * MB, 2 * MB, 3 * MB // 2, 1 * MB, 1 * MB]  # per MB: 4.0, 4.5, 5.0, 6.0, 5.0 ms
    capacity = 82 * MB
    assert greedy_by_ratio(values, sizes, capacity) == [1, 2, 3, 4]  # 27.5 ms kept: the 318 ms index dropped
    assert best_within(values, sizes, capacity) == [0, 3, 4]  # 329 ms kept


def test_the_textbook_case_where_the_best_ratio_blocks_the_best_item():
    assert greedy_by_ratio([9.0, 5.0, 4.0], [10, 5, 6], 10) == [1]
    assert best_within([9.0, 5.0, 4.0], [10, 5, 6], 10) == [0]


@pytest.mark.parametrize("seed", range(40))
def test_the_choice_is_optimal_and_within_the_capacity(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 11)
    values = [rng.choice([0.0, -3.0, rng.uniform(0.1, 500), float(rng.randint(1, 9))]) for _ in range(n)]
    sizes = [rng.choice([rng.randint(8192, 400 * MB), rng.randint(1, 30)]) for _ in range(n)]
    capacity = rng.choice([sum(sizes) // 2, rng.randint(0, 40), sum(sizes)])
    kept = best_within(values, sizes, capacity)
    best = max(sum(values[i] for i in c) for k in range(n + 1) for c in itertools.combinations(range(n), k)
               if sum(sizes[i] for i in c) <= capacity)
    assert sum(sizes[i] for i in kept) <= capacity
    assert sum(values[i] for i in kept) == pytest.approx(max(best, 0.0), rel=1e-9, abs=1e-9)
    assert all(values[i] > 0 for i in kept)


def test_edges():
    assert best_within([], [], 10) == []
    assert best_within([5.0, 1.0], [3, 4], 100) == [0, 1]  # all fit: nothing to choose
    assert best_within([5.0], [3], 2) == []  # nothing fits
    assert best_within([0.0, -1.0, 2.0], [1, 1, 1], 5) == [2]  # nothing of no value is kept
    assert best_within([3.0, 3.0], [5, 4], 5) == [1]  # equal values: the smaller
    with pytest.raises(ValueError):
        best_within([1.0], [1, 2], 3)


class Stub:
    """What-if costs where each index saves a fixed amount on its own statement (cost units)."""

    calls = hits = 0

    def __init__(self, saves: dict[IndexChange, float], sizes: dict[IndexChange, int]):
        self.saves, self.sizes = saves, sizes

    def cost(self, q, cfg):
        return Costed(1000.0 - sum(s for ix, s in self.saves.items() if ix in cfg and ix.table == q.queryid))

    def size(self, ix):
        return self.sizes[ix]


def _problem(budget):
    big, mid, small = (IndexChange("public", t, ("k",)) for t in ("big", "mid", "small"))
    whatif = Stub({big: 900.0, mid: 500.0, small: 450.0}, {big: 10 * MB, mid: 5 * MB, small: 6 * MB})
    queries = tuple(Query(t, f"SELECT * FROM {t} WHERE k = 1", 1.0, frozenset({("public", t)}))
                    for t in ("big", "mid", "small"))
    cands = tuple(Candidate(ix, frozenset({ix.table})) for ix in (big, mid, small))
    uses = tuple((t, ColumnUse(("public", t), "k", "join")) for t in ("big", "big", "big", "mid", "mid", "small"))
    return IndexProblem(queries, cands, budget, whatif, uses), big, mid, small


def test_dexter_and_the_peers_keep_the_picks_worth_most_within_the_budget_not_the_best_per_byte():
    problem, big, mid, small = _problem(10 * MB)  # per byte mid (100 a MB) goes first, then nothing else fits
    assert registry.create("indexes", "dexter", problem).ask(1)[0] == (big,)  # 900 kept, not 500
    problem, big, mid, small = _problem(11 * MB)  # the heaviest statement's pick first would keep big alone
    assert set(registry.create("indexes", "dexter", problem).ask(1)[0]) == {mid, small}  # 950 > 900
    assert set(registry.create("indexes", "supabase", problem).ask(1)[0]) == {mid, small}
    assert registry.create("indexes", "fkeys", _problem(10 * MB)[0]).ask(1)[0] == (big,)  # 3 join uses of 6
