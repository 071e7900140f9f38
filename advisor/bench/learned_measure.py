"""Side-by-side measurement for the learned-index bench: several (harness, configuration) arms measured in the
same time window, one round each in turn, the order rotating every round (A B C, B C A, ...), each arm warmed up
first; per arm the median figures (``validation.median_figures``: ops/s, CPU ns per op, p99 ns, bytes). On a
shared machine whose speed drifts, only figures measured this way are compared with each other."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.tuning.learned.validation import median_figures
from advisor.tuning.learned.target import HarnessTarget


def side_by_side(arms: Mapping[str, tuple[HarnessTarget, Mapping[str, str]]], rounds: int) -> dict[str, dict]:
    """Median figures per arm over ``rounds`` rotating rounds; TrialFailed when an arm's configuration fails."""
    names = list(arms)
    for target, config in arms.values():
        target.max_cpu_ns_per_op = None
        target.warm_up(config)
    figures: dict[str, list] = {name: [] for name in names}
    for i in range(rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            target, config = arms[name]
            target.apply(config)
            target.measure(1)
            figures[name].append(target.last)
    return {name: median_figures(f) for name, f in figures.items()}
