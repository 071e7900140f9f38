"""LITune's meta-trained models: how one is meta-trained (``meta_trained``, used by a run that trains its own and by
``advisor train``), and the models shipped with the package (``optimizers/pretrained/litune-<index>-<space
key>.pt`` with a manifest beside it, ``.json``: seed, episodes, the tasks it was trained on), so that a first
learned-index question starts from a trained agent and only adapts it online (``LITune.tell``'s updates).

A shipped model is for one index and one parameter space (the space's key is in its name): a run over a narrowed
space finds none and meta-trains its own. To stay small, a shipped file keeps the agent's weights,
the last ``KEEP`` transitions of its buffer and the last ``PRIOR`` visits of the unsafe-region prior.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from advisor.core.params import ParamSpace
from advisor.core.progress import Say, silent
from optimizers.learned_index.problem import TrainingTask

DIR = Path(__file__).resolve().parents[1] / "pretrained"
KEEP = 128  # buffer transitions a shipped model keeps
PRIOR = 400  # unsafe-region prior visits a shipped model keeps


def space_key(space: ParamSpace) -> str:
    """A short hash of the space's parameters (names, ranges, scales, choices, defaults): the model file's key."""
    import hashlib

    text = json.dumps([[p.name, p.low, p.high, p.scale, p.integer, list(p.choices), p.default] for p in space.params])
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def file_name(index: str, space: ParamSpace) -> str:
    return f"litune-{index}-{space_key(space)}.pt"


def meta_trained(space: ParamSpace, tasks: Sequence[TrainingTask], episodes: int, steps: int, seed: int,
                 device: str, say: Say = silent, memory_limit_bytes: int | None = None, keep: int = 512,
                 prior: int = 1000):
    """(a LITune agent meta-trained on ``tasks`` from ``seed``, its statistics, the unsafe-region prior: the last
    ``prior`` visits as [x, unsafe]); the agent's buffer keeps its last ``keep`` transitions."""
    from optimizers.learned_index import litune_meta as meta
    from optimizers.learned_index.litune_agent import Agent, AgentOptions

    agent = Agent(space.dim, AgentOptions(), device, seed)
    visits: list = []
    stats = meta.meta_train(agent, space, tasks, meta.MetaOptions(episodes=episodes, steps=steps),
                            np.random.default_rng(seed + 1), say, memory_limit_bytes, visits)
    agent.buffer = agent.buffer.recent(keep)
    return agent, stats, [[list(x), bool(u)] for x, u in visits[-prior:]]


def save(agent, stats, prior: list, path: Path, manifest: dict, compact: bool = False) -> Path:
    """The model (``.pt``: agent, meta-training statistics, prior) and its manifest (``.json``). ``compact`` (a
    shipped model) leaves out the target networks (they restart equal to the weights) and the optimizer's moments
    (they restart at zero when the model adapts)."""
    from optimizers.rl import persistence

    blob = agent.to_blob()
    if compact:
        blob = {**blob, "targets": None, "opt_actor": None, "opt_critic": None}
    return persistence.save({"agent": blob, "meta": stats.to_dict(), "prior": prior, "manifest": manifest}, path,
                            {**manifest, "meta": stats.to_dict()})


def load(path: Path, device: str = "auto"):
    """(agent, the stored blob) from a model file, or None when there is none or it cannot be read."""
    from optimizers.learned_index.litune_agent import Agent, AgentOptions
    from optimizers.rl import persistence

    blob = persistence.stored(path)
    if blob is None:
        return None
    try:
        agent = dict(blob["agent"])
        if agent["targets"] is None:  # compact: fresh moments, targets equal to the weights
            fresh = Agent(int(agent["d"]), AgentOptions(**agent["options"]), "cpu", 0)
            agent.update(targets=agent["nets"], opt_actor=fresh.opt_actor.state_dict(),
                         opt_critic=fresh.opt_critic.state_dict())
        return Agent.from_blob(agent, device), blob
    except persistence.UNREADABLE:
        return None


def shipped(index: str, space: ParamSpace, device: str = "auto", directory: Path = DIR):
    """(agent, blob) of the model shipped for ``index`` over ``space``, or None."""
    return load(directory / file_name(index, space), device)
