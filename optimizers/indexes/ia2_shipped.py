"""IA2's agent trained ahead of time and shipped with the package (``optimizers/pretrained/ia2.pt``, its manifest
``ia2.json`` beside it), so that a first index question starts from a trained policy and only adapts it to the
target (``IA2.prepare``) instead of training from scratch.

The actor scores each candidate from its own features and the state's (``optimizers.indexes.env``), so its
weights depend on no schema and no number of candidates: ``TD3Agent.from_weights`` binds them to any target's
candidates. ``train_shared`` trains one agent across several problems (schemas and workloads: the caller,
``advisor train``, builds them on generated workloads), in turns: episode ``k`` is on problem ``k mod n``, each
problem with its own candidates, environment and replay buffer, the networks shared; exploration decays over all
episodes. On the CPU with one thread and what-if costs as rewards, the same problems and seed give the same
weights (``fingerprint``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from advisor.core.progress import Say, silent
from optimizers.indexes.mixes import training_sampler
from optimizers.indexes.problem import Candidate, IndexProblem

DIR = Path(__file__).resolve().parents[1] / "pretrained"
FILE = "ia2.pt"
OWN_MIX = 0.3  # share of a problem's episodes on its own mix and budget (as IA2 trains per target)
UNLIKE = 0.3  # share on mixes unlike it


def sampler(problem: IndexProblem, own: float = OWN_MIX, unlike: float = UNLIKE):
    """Training mixes of ``problem``'s statements as IA2 draws them on a target (``mixes.training_sampler``),
    budgets log-uniform from a quarter to twice the problem's."""
    budget = max(problem.budget_bytes, 4)
    return training_sampler(problem, [q.queryid for q in problem.queries], (budget // 4, budget * 2), own, unlike)[0]


def summary(manifest: dict) -> str:
    """The shipped model in a few words: what it was trained on, from which seed."""
    return (f"{manifest.get('episodes', '?')} episodes on {len(manifest.get('problems', []))} generated workloads, "
            f"seed {manifest.get('seed', '?')}")


def train_shared(problems: Sequence[IndexProblem], episodes: int, seed: int = 0, device: str = "cpu",
                 say: Say = silent):
    """One IA2 agent trained across ``problems`` in turns (``episodes`` in all); returns (the agent, bound to the
    first problem's candidates, and its statistics as a dict with per-problem mean relative costs)."""
    from optimizers.indexes.td3 import IA2Options, TD3Agent
    from optimizers.torch_runtime import cpu_threads

    if not problems:
        raise ValueError("no problem to train IA2's shared agent on")
    main = TD3Agent(problems[0].candidates, IA2Options(episodes=episodes), device, seed)
    agents = [main] + [main.bound(p.candidates) for p in problems[1:]]
    buffers = [a.new_buffer() for a in agents]
    samplers = [sampler(p) for p in problems]
    calls0 = [p.whatif.calls for p in problems]
    per_problem: list[list[float]] = [[] for _ in problems]
    o = main.options
    start = time.perf_counter()
    with cpu_threads(main.device):
        for ep in range(episodes):
            k = ep % len(problems)
            explore = o.explore_start + (o.explore_end - o.explore_start) * min(1.0, ep / max(1, 0.8 * episodes))
            agents[k].episode(samplers[k](main.rng), explore, buffers[k])
            per_problem[k].append(main.stats.final_rc[-1])
            if (ep + 1) % max(1, episodes // 10) == 0:
                say(f"IA2 (shared): episode {ep + 1}/{episodes}, mean relative cost "
                    f"{np.mean(main.stats.final_rc[-max(1, episodes // 10):]):.3f}, {time.perf_counter() - start:.0f}s")
    main.stats.seconds = time.perf_counter() - start
    main.stats.whatif_calls = sum(p.whatif.calls - c for p, c in zip(problems, calls0))
    stats = {**main.stats.to_dict(), "final_rc": None,
             "per_problem_rc": [round(float(np.mean(r[-max(1, len(r) // 5):])), 4) if r else None
                                for r in per_problem]}
    return main, stats


def fingerprint(weights: dict) -> str:
    """A short hash of the networks' weights (the same from the same seed and problems on the CPU)."""
    h = hashlib.sha256()
    for part in ("actor", "critics"):
        for name, tensor in sorted(weights[part].items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def save(agent, path: Path, manifest: dict) -> Path:
    """The weights (``.pt``, bound to no candidates) and the manifest (``.json``, with the weights' fingerprint)."""
    from optimizers.rl import persistence

    weights = agent.weights()
    manifest = {**manifest, "fingerprint": fingerprint(weights)}
    timed = {"seconds"}  # left out of the weights' file, so that the same seed writes the same bytes
    return persistence.save({**weights, "manifest": {k: v for k, v in manifest.items() if k not in timed}}, path,
                            manifest)


def load(path: Path | None = None) -> dict | None:
    """The shipped weights (with their ``manifest``), or None when there are none or they cannot be read."""
    from optimizers.rl import persistence

    blob = persistence.stored(path or DIR / FILE)
    return blob if isinstance(blob, dict) and {"actor", "critics", "options"} <= set(blob) else None


def shipped(candidates: Sequence[Candidate], device: str = "auto", seed: int | None = None,
            path: Path | None = None):
    """(the shipped agent bound to ``candidates``, its manifest), or None when no model is shipped."""
    from optimizers.indexes.td3 import TD3Agent

    blob = load(path)
    if blob is None:
        return None
    return TD3Agent.from_weights(blob, candidates, device, seed), dict(blob.get("manifest", {}))
