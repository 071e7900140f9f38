"""Meta-training environments for a learned tuner (``LearnedIndexProblem.training``): small generated key sets of
many families (``TRAINING_SETS``; ``HELD_OUT_SETS`` are never trained on, so a bench can measure a tuner on shapes it
has not seen) x workload mixes, each a ``TrainingTask`` whose ``evaluate`` runs one configuration on its own harness (objective:
thread CPU ns per operation, as a trial's, the reward LITune trains on; metrics as a trial's). Built only when a
tuner asks (LITune's ``prepare``)."""

from __future__ import annotations

from advisor.tuning.learned_index.pipeline import evaluate, operations
from advisor.tuning.learned_index.target import HarnessTarget
from optimizers.learned_index.problem import TrainingTask

TRAINING_SETS = ("books", "fb", "osm", "uniform", "lognormal", "piecewise", "sequential", "mixture")
HELD_OUT_SETS = ("normal", "zipf-clustered", "bursty")  # shapes no shipped model is trained on
TRAINING_MIXES = ("read-only", "read-heavy", "balanced", "write-heavy")
TRAINING_KEYS = 20_000
TRAINING_OPS = 20_000


def features(keys, mix) -> tuple[float, ...]:
    """A dataset + workload descriptor: the key set's shape (``keysets.describe``: gaps' quantiles, the CDF's fit
    error at several scales, runs, burstiness, ...), then the mix's read, insert and range fractions."""
    from workloads.datasets.learned.keysets import describe

    return tuple(float(v) for v in describe(keys).values()) + (float(mix.lookup), float(mix.insert),
                                                                float(mix.range))


def training_tasks(engine, seed: int = 0, sets=TRAINING_SETS, mixes=TRAINING_MIXES,
                   n_keys: int = TRAINING_KEYS, n_ops: int = TRAINING_OPS) -> list[TrainingTask]:
    from workloads.datasets.learned import keysets
    from workloads.datasets.learned import mixes as mix_lib

    tasks = []
    for i, name in enumerate(sets):
        keys = keysets.synthetic(name, n_keys, seed + i)
        for mix_name in mixes:
            mix = mix_lib.parse_mix(mix_name)
            if engine.read_only and mix.insert > 0:
                continue
            initial, stream = mix_lib.workload(keys, mix, min(n_ops, operations(n_keys, mix.insert)), seed + i)
            target = HarnessTarget(engine, initial, [stream])
            tasks.append(TrainingTask(f"{name}/{mix_name}", features(keys, mix),
                                      lambda config, t=target: evaluate(t, config)))
    return tasks
