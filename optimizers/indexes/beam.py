"""Beam decoding of IA2's policy: the policy proposes, the what-if coster judges.

A greedy rollout commits to the policy's first choice at every step; one misranked step (an index that is good
alone but blocks a better pair within the budget) is never undone, and sampled rollouts find the better path only
by chance. Beam decoding keeps the ``width`` cheapest partial configurations after each step, each expanded by the
policy's ``branch`` best-scored valid actions (the same masked actions a rollout may take), and returns the
cheapest configuration seen. The policy bounds the search to a few actions per step (``width x branch``
configurations a step, ``max_nodes`` in all, a bound that does not depend on what is cached, so the same state gives
the same answer); the costs are the problem's what-if costs, cached, so shared prefixes cost nothing again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from advisor.core.domain import IndexChange
from optimizers.indexes.problem import IndexProblem

if TYPE_CHECKING:
    from optimizers.indexes.td3 import TD3Agent

MAX_NODES = 600  # configurations a beam decoding costs at most


def decode(agent: "TD3Agent", problem: IndexProblem, width: int = 6, branch: int = 6,
           max_nodes: int = MAX_NODES) -> tuple[float, list[IndexChange]]:
    """(cost, configuration) of the cheapest configuration the beam reached (the empty one when no action is
    valid); see the module docstring."""
    env = agent.env

    def replay(actions: tuple[int, ...]) -> None:
        env.reset(problem)
        for a in actions:
            env.step(a)

    replay(())
    best: tuple[float, list[IndexChange]] = (env.cost, [])
    beams: list[tuple[float, tuple[int, ...]]] = [(env.cost, ())]
    seen: set[frozenset[int]] = {frozenset()}
    nodes = 0
    while beams and nodes < max_nodes:
        grown: list[tuple[float, tuple[int, ...]]] = []
        for _cost, actions in beams:
            replay(actions)
            mask = env.mask()
            if not mask.any():
                continue
            g, phi = env.features()
            valid = np.flatnonzero(mask)
            scores = agent._scores(g, phi, mask)
            for a in valid[np.argsort(-scores, kind="stable")[:branch]]:
                path = (*actions, int(a))
                if frozenset(path) in seen or nodes >= max_nodes:
                    continue
                seen.add(frozenset(path))
                replay(path)
                nodes += 1
                grown.append((env.cost, path))
                if env.cost < best[0] - 1e-9:
                    best = (env.cost, env.config())
        beams = sorted(grown)[:width]
    return best
