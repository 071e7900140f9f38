"""Side-by-side measurement for the learned-index bench: several (harness, configuration) arms measured in the
same time window through the one measurement engine (``advisor.tuning.measure.interleave``, the learned-index
validation's ``Arms``): each arm warmed up first, then ``rounds`` rounds, one pass of every arm each, the order
rotating every round (A B C, B C A, ...), a round slower for every arm at once (machine noise) run again; per arm
the median figures over the kept rounds (``validation.median_figures``: ops/s, CPU ns per op, p99 ns, bytes). On
a shared machine whose speed drifts, only figures measured this way are compared with each other."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.learned_index.validation import Arms, deciding
from advisor.tuning.measure import StopRule, interleave


def side_by_side(arms: Mapping[str, tuple[HarnessTarget, Mapping[str, str]]], rounds: int) -> dict[str, dict]:
    """Median figures per arm (two or more, the first the engine's baseline) over ``rounds`` rotating rounds;
    TrialFailed when an arm's configuration fails."""
    names = list(arms)
    runner = Arms(arms, {name: name for name in names}, lambda i: f"side by side, round {i + 1} of {rounds}")
    decide = deciding(arms[names[0]][0], names[0])  # each arm against the first (the engine asks; unused here)
    measured = interleave(runner.run, names, StopRule(min_rounds=rounds, max_rounds=rounds, stop_on=()),
                          lambda kept: [decide(kept, name) for name in names[1:]], order="rotate")
    return runner.medians(measured)
