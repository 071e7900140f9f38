"""Search strategies over a statement's e-graph (``optimizers.rewrites.search.egraph.Search``): each decides which rule
runs next and when to stop, under the same node budget, and is measured by the best cost it reaches and the
e-nodes it took. The baselines Aurora is compared with:

- ``saturate``: every rule in listed order, round after round, until nothing changes or ``rounds`` is reached;
- ``random_order``: a seeded random rule each step, ``steps`` steps;
- ``greedy``: each step tries every rule (undoing each), keeps the one that lowered the cost most (ties: the one
  that added fewest nodes), stops when none lowers it.

>>> from optimizers.rewrites.sql.lower import lower
>>> low = lower("SELECT 1 FROM t JOIN u ON t.a = u.c WHERE t.b > 1 AND u.d > 2", {"t": {"a": "int", "b": "int"},
...             "u": {"c": "int", "d": "int"}}, dialect="postgres")
>>> results = [s(Search(low, {"t": 1e5, "u": 1e5}, lambda a: 1e-5 if len(a.refs) > 1 else 0.1))
...            for s in (saturate, random_order, greedy)]
>>> [r.cost < r.initial_cost for r in results[::2]], results[1].cost <= results[1].initial_cost
([True, True], True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizers.rewrites.search.egraph import Search


@dataclass(frozen=True)
class Result:
    strategy: str
    initial_cost: int
    cost: int
    nodes: int
    steps: int
    rules: tuple[str, ...]  # the rules that matched, in order


def _result(name: str, search: Search) -> Result:
    used = tuple(s.rule for s in search.steps if s.matches and not s.undone)
    return Result(name, search.initial_cost, search.cost(), search.nodes(), len(search.steps), used)


def saturate(search: Search, rounds: int = 6) -> Result:
    for _ in range(rounds):
        changed = False
        for rule in search.rules:
            step = search.run(rule)
            changed |= bool(step.matches) and not step.undone
        if not changed:
            break
    return _result("saturate", search)


def random_order(search: Search, steps: int = 30, seed: int = 0) -> Result:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        search.run(search.rules[int(rng.integers(len(search.rules)))])
    return _result("random", search)


def greedy(search: Search, steps: int = 30) -> Result:
    for _ in range(steps):
        now, nodes = search.cost(), search.nodes()
        best = None  # (cost, added nodes, rule)
        for rule in search.rules:
            step = search.trial(rule)
            if step.matches and not step.undone and step.cost < now:
                key = (step.cost, step.nodes - nodes)
                if best is None or key < best[:2]:
                    best = (*key, rule)
        if best is None:
            break
        search.run(best[2])
    return _result("greedy", search)


STRATEGIES = {"saturate": saturate, "random": random_order, "greedy": greedy}
