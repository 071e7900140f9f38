"""Drift for the learned-index bench: phases in which the key distribution and the mix change
(``workloads.datasets.learned.mixes.drifting``), and four ways to run through them.

Each phase runs on the keys the live index holds by then (the initial keys plus every earlier phase's inserts)
with that phase's stream. Per phase, validated throughput (ops/s, the pipeline's interleaved rounds) of:

- ``online`` (LITune O2): one LITune (the bench's meta-trained model) for the whole run; the first phase tuned
  with ``drift_budget`` evaluations, every later one with ``online_budget`` after ``online(features)``: the agent
  keeps its weights, replay buffer, unsafe region and incumbent, and adapts from the phase's observations;
- ``one_shot``: the configuration ``drift_tuner`` found on the first phase, kept unchanged;
- ``retuned``: ``drift_tuner`` from scratch on every phase with ``drift_budget`` evaluations;
- ``defaults``: the index's defaults.

Every tuning goes through ``tune_index`` (the pipeline's entry point, its own validation included); then the four
configurations of the phase are measured side by side (``measure``: rotating rounds in one time window),
which gives the phase's figures; ``ratio_online_retuned`` is the online throughput over the re-tuned one.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from advisor.core.params import ParamSpace
from advisor.core.progress import Say
from advisor.bench.learned.measure import side_by_side
from advisor.tuning.learned_index.pipeline import problem, tune_index
from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.learned_index.training import features
from connectors import factory
from optimizers import registry
from workloads.datasets.learned import mixes


def phase_keys(initial: np.ndarray, streams) -> list[np.ndarray]:
    """The keys the live index holds at the start of each phase (earlier phases' inserts stay in).

    >>> from connectors.factory import OpStream
    >>> s = OpStream(np.array([1, 0], np.uint8), np.array([9, 1], np.uint64), np.zeros(2, np.uint32))
    >>> [k.tolist() for k in phase_keys(np.array([1, 5], np.uint64), [s, s])]
    [[1, 5], [1, 5, 9]]
    """
    out, present = [], np.asarray(initial, dtype=np.uint64)
    for stream in streams:
        out.append(present)
        present = np.union1d(present, stream.keys[stream.ops == factory.INSERT])
    return out


def run_drift(o, model_dir: Path, say: Say) -> dict:
    """The drift part of the bench (see the module docstring): per phase, the four strategies' throughput."""
    index = o.indexes[0]
    engine = factory.learned_index(index)
    if engine.read_only:
        index, engine = "alex", factory.learned_index("alex")
    seed = o.seeds[0]
    start_mix, end_mix = mixes.parse_mix(o.drift_from), mixes.parse_mix(o.drift_to)
    initial, streams = mixes.drifting(o.drift_dataset, start_mix, end_mix, o.drift_phases, o.drift_ops, seed)
    space = ParamSpace(engine.parameters())
    started = time.perf_counter()
    online = None
    one_shot: dict[str, str] | None = None
    phases = []
    for p, (keys, stream) in enumerate(zip(phase_keys(initial, streams), streams)):
        mix = start_mix.toward(end_mix, p / max(o.drift_phases - 1, 1))
        feats = features(keys, mix)
        say(f"drift phase {p + 1}/{o.drift_phases}: {len(keys):,} keys, lookup {mix.lookup:.2f} insert "
            f"{mix.insert:.2f}")
        if online is None:
            online = registry.create("learned-index", "litune", problem(space, engine.name, feats), seed=seed,
                                     device=o.device, episodes=o.episodes)
            online.prepare(model_dir, say)
            budget = o.drift_budget
        else:
            online.online(feats)
            budget = o.online_budget
        lt = tune_index(engine, keys, [stream], online, budget, seed=seed, rounds=o.rounds,
                        finalists=o.finalists, finalist_rounds=o.finalist_rounds)
        fresh = registry.create("learned-index", o.drift_tuner, problem(space, engine.name, feats), seed=seed,
                                strict=False)
        rt = tune_index(engine, keys, [stream], fresh, o.drift_budget, seed=seed, rounds=o.rounds,
                        finalists=o.finalists, finalist_rounds=o.finalist_rounds)
        if one_shot is None:
            one_shot = dict(rt.best)
        configs = {"online": lt.best, "one_shot": one_shot, "retuned": rt.best, "defaults": space.default_config()}
        med = side_by_side({k: (HarnessTarget(engine, keys, [stream]), c) for k, c in configs.items()}, o.rounds)
        phase = {"phase": p + 1, "keys": int(len(keys)), "operations": int(len(stream.ops)),
                 "mix": {"lookup": mix.lookup, "insert": mix.insert, "range": mix.range},
                 **{k: med[k]["throughput_ops"] for k in configs},
                 **{f"{k}_p99_ns": med[k]["p99_ns"] for k in configs},
                 "online_evaluations": lt.evaluations, "online_unsafe": lt.unsafe_evaluations,
                 "retuned_evaluations": rt.evaluations, "retuned_unsafe": rt.unsafe_evaluations,
                 "online_trace": [float((t.result.metrics or {}).get("throughput_ops", 0.0))
                                  if t.result.status == "measured" else 0.0 for t in lt.trials]}
        phase["ratio_online_retuned"] = round(phase["online"] / phase["retuned"], 4) if phase["retuned"] else None
        phases.append(phase)
        say(f"  online {phase['online']:,.0f}, one-shot {phase['one_shot']:,.0f}, re-tuned {phase['retuned']:,.0f},"
            f" defaults {phase['defaults']:,.0f} ops/s")
    return {"index": engine.name, "dataset": o.drift_dataset, "from": o.drift_from, "to": o.drift_to,
            "phases": phases, "one_shot_config": one_shot, "retuned_by": o.drift_tuner,
            "seconds": round(time.perf_counter() - started, 1)}
