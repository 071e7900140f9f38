"""LITune's steps and meta-training (``optimizers.learned_index.litune``).

A *step* is one told trial as a JSON-safe dict: ``x`` (the configuration in the unit cube), ``objective`` (ns per
operation, None when failed or infeasible), ``status``, ``unsafe`` (``litune_safety.is_unsafe``), ``avoid`` (unsafe,
or infeasible: parameters the engine refuses together; the unsafe-region model learns both), ``metrics`` and
``config``. A step without an objective is rewarded ``unsafe_reward``. The optimizer's
tells and the training episodes build them with the same ``make_step``, so the agent sees one kind of state.

Meta-training (offline, across ``problem.training()`` tasks, each a dataset x workload): episodes of ``steps``
trials, each episode on the next task in turn and starting from the task's defaults (measured once per task: the
reference of its rewards), actions from the policy plus Gaussian noise decaying from ``noise_start`` to
``noise_end`` (the first ``warmup`` transitions uniform at random), TD3 updates after each step. The task's
descriptor is part of the state, so one policy learns where good parameters lie for each kind of data and mix.
Then each task's ``elites`` best safe configurations are measured ``remeasure`` times more and the one with the
lowest median is the task's best; the actor is cloned onto those (``clone_steps`` steps of ``Agent.clone``, TD3+BC's
term) from every state the task's episodes passed through, so its first point on a new key set is the best
configuration of the tasks whose shape and mix it resembles, which the online updates and the search around the
best safe point refine. The tasks' descriptors and best configurations are kept with the model (``elites``): after
the policy's point LITune tries the best configurations of the training tasks nearest in shape and mix.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from advisor.core.domain import TrialResult
from advisor.core.params import ParamSpace
from advisor.core.progress import Say
from optimizers.learned_index.litune_agent import Agent, context, feature_vector, reward
from optimizers.learned_index.litune_safety import is_unsafe
from optimizers.learned_index.problem import TrainingTask
from optimizers.torch_runtime import cpu_threads


@dataclass(frozen=True)
class MetaOptions:
    episodes: int = 60
    steps: int = 8  # trials per episode
    updates_per_step: int = 4
    warmup: int = 48  # transitions drawn uniformly before the policy acts
    noise_start: float = 0.3
    noise_end: float = 0.05
    elites: int = 3  # best configurations per task re-measured ...
    remeasure: int = 2  # ... this many more times each, for the task's best
    clone_steps: int = 400  # behaviour-cloning steps onto the tasks' best (0: none)
    states: int = 64  # states kept per task for the cloning


@dataclass
class MetaStats:
    episodes: int = 0
    evaluations: int = 0
    unsafe: int = 0
    updates: int = 0
    seconds: float = 0.0
    device: str = "cpu"
    tasks: list[str] = field(default_factory=list)
    # per task: the best ns/op the last episode on it found over its default's (lower is better)
    final_ratio: dict[str, float | None] = field(default_factory=dict)
    # per task: its best configuration's median ns/op (re-measured) over the default's; the cloning's last loss
    best_ratio: dict[str, float | None] = field(default_factory=dict)
    clone_loss: float | None = None
    # per task: [its descriptor (``feature_vector``), its best configuration in the unit cube]: LITune's portfolio
    elites: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 3)}


def make_step(x: Sequence[float], outcome: TrialResult, memory_limit_bytes: int | None,
              config: Mapping[str, str] | None = None) -> dict:
    metrics = {k: float(v) for k, v in (outcome.metrics or {}).items()}
    measured = outcome.status == "measured" and outcome.objective is not None
    unsafe = is_unsafe(outcome, memory_limit_bytes)
    return {"x": [float(v) for v in x], "objective": float(outcome.objective) if measured else None,
            "status": outcome.status, "unsafe": unsafe, "avoid": unsafe or outcome.status == "infeasible",
            "metrics": metrics, "config": dict(config or {})}


def meta_train(agent: Agent, space: ParamSpace, tasks: Sequence[TrainingTask], options: MetaOptions,
               rng: np.random.Generator, say: Say, memory_limit_bytes: int | None = None,
               visits: list | None = None) -> MetaStats:
    """Train ``agent`` on ``tasks``; returns what it cost and how the last episodes ended. Every visited point
    and whether it was unsafe is appended to ``visits`` (the unsafe-region model's prior)."""
    visits = visits if visits is not None else []
    stats = MetaStats(device=str(agent.device), tasks=[t.name for t in tasks])
    start = time.perf_counter()
    k, d = agent.options.context, agent.d
    references: dict[str, dict | None] = {}
    found_by: dict[str, list[dict]] = {}  # per task: its safe steps
    states: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}  # per task: (context, features) seen
    total = max(1, options.episodes)
    with cpu_threads(agent.device):
        for ep in range(options.episodes):
            task = tasks[ep % len(tasks)]
            if task.name not in references:
                x0 = space.encode(space.default_config())
                ref = make_step(x0, task.evaluate(space.default_config()), memory_limit_bytes)
                stats.evaluations += 1
                references[task.name] = None if ref["objective"] is None else ref
                if ref["objective"] is None:
                    say(f"LITune meta-training: task {task.name} left out (its defaults did not run)")
            ref = references[task.name]
            if ref is None:
                continue
            feats = feature_vector(task.features)
            steps: list[dict] = [ref]
            sigma = options.noise_start + (options.noise_end - options.noise_start) * min(1.0, ep / (0.8 * total))
            for t in range(options.steps):
                ctx = context(steps, ref, d, k)
                if agent.buffer.size < options.warmup:
                    a = rng.random(d)
                else:
                    a = np.clip(agent.act(ctx, feats) + rng.normal(0.0, sigma, d), 0.0, 1.0)
                config = space.decode(a)
                x = space.encode(config)
                step = make_step(x, task.evaluate(config), memory_limit_bytes)
                stats.evaluations += 1
                stats.unsafe += int(step["unsafe"])
                visits.append((step["x"], step["avoid"]))
                steps.append(step)
                if step["objective"] is not None and not step["unsafe"]:
                    found_by.setdefault(task.name, []).append(step | {"config": dict(config)})
                seen = states.setdefault(task.name, [])
                if len(seen) < options.states:
                    seen.append((ctx, feats))
                agent.buffer.add(ctx, feats, x, reward(step, ref, agent.options), context(steps, ref, d, k), feats,
                                 t == options.steps - 1)
                if agent.buffer.size >= min(options.warmup, agent.options.batch):
                    for _ in range(options.updates_per_step):
                        agent.update(rng)
            found = [s["objective"] for s in steps[1:] if s["objective"] is not None and not s["unsafe"]]
            stats.final_ratio[task.name] = round(min(found) / ref["objective"], 4) if found else None
            stats.episodes += 1
            if (ep + 1) % max(1, total // 10) == 0:
                ratios = [v for v in stats.final_ratio.values() if v is not None]
                say(f"LITune meta-training: episode {ep + 1}/{total}, mean best ns/op over defaults "
                    f"{np.mean(ratios) if ratios else float('nan'):.3f}, {time.perf_counter() - start:.0f}s")
        if options.clone_steps > 0:
            ctxs, featss, targets = [], [], []
            for task in tasks:
                best = _best_of(task, found_by.get(task.name, []), references.get(task.name), space, options,
                                memory_limit_bytes, stats)
                if best is None:
                    continue
                stats.elites.append([[round(float(v), 5) for v in feature_vector(task.features)],
                                     [round(float(v), 5) for v in best]])
                for ctx, feats in states.get(task.name, []):
                    ctxs.append(ctx), featss.append(feats), targets.append(best)
            if targets:
                stats.clone_loss = round(agent.clone(np.stack(ctxs), np.stack(featss), np.stack(targets),
                                                     options.clone_steps, rng), 5)
                say(f"LITune meta-training: actor cloned onto the best of {len(stats.best_ratio)} tasks (loss "
                    f"{stats.clone_loss:.4f}), {time.perf_counter() - start:.0f}s")
    stats.updates = agent.updates
    stats.seconds = time.perf_counter() - start
    return stats


def _best_of(task: TrainingTask, found: list[dict], ref: dict | None, space: ParamSpace, options: MetaOptions,
             memory_limit_bytes: int | None, stats: MetaStats) -> np.ndarray | None:
    """The task's best configuration in the unit cube: its ``elites`` best safe steps, each measured ``remeasure``
    more times, the lowest median (a single lucky round is not a best); None when it had no safe step."""
    if ref is None or not found:
        return None
    unique: dict[str, dict] = {}
    for s in sorted(found, key=lambda s: s["objective"]):
        unique.setdefault(repr(sorted(s["config"].items())), s)
    medians = []
    for s in list(unique.values())[: options.elites]:
        runs = [s["objective"]]
        for _ in range(options.remeasure):
            again = make_step(s["x"], task.evaluate(s["config"]), memory_limit_bytes)
            stats.evaluations += 1
            runs.append(again["objective"] if again["objective"] is not None and not again["unsafe"] else np.inf)
        medians.append((float(np.median(runs)), s["x"]))
    value, x = min(medians, key=lambda m: m[0])
    if not np.isfinite(value):
        return None
    stats.best_ratio[task.name] = round(value / ref["objective"], 4)
    return np.asarray(x, np.float32)


def stats_from(data: Mapping) -> MetaStats:
    return MetaStats(**{k: v for k, v in data.items() if k in MetaStats.__dataclass_fields__})
