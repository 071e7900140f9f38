"""LITune on the real compiled learned index (``connectors.factory.learned_index("alex")``): meta-trained on small
synthetic key sets x mixes (the house's ``advisor.tuning.learned_index.training.training_tasks``: 20k keys, 10k-op
streams), then tuning keys and a mix it was not trained on through the pipeline's own loop (``pipeline.search``,
the safety cut included), and the O2 online phase when the data and the mix drift. CPU only; slow (the index's
first compile, meta-training).

The key sets are ``uniform`` and ``normal``: with the index as merged, ``fb`` and ``books`` at the defaults grow
the index's pools past 20 GB and ``osm`` fails its bulk load (reported to the index's owner). The address space
is bounded while these tests run, so a runaway configuration fails as a trial (MemoryError) and not the machine.
"""

import resource
import time

import pytest

from advisor.core.params import ParamSpace
from advisor.tuning.learned_index.pipeline import evaluate, problem, search
from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.learned_index.training import features, training_tasks
from connectors import factory
from optimizers.learned_index.litune import LITune
from workloads.datasets.learned import keysets, mixes

pytestmark = pytest.mark.slow

N_KEYS, N_OPS = 20_000, 10_000
TRAIN_SETS, TRAIN_MIXES = ("uniform", "normal"), ("read-heavy", "write-heavy")
HELD_OUT = ("normal", "balanced")  # other keys (another seed) and a mix it was not trained on
EPISODES, STEPS, BUDGET = 24, 6, 16
ADDRESS_SPACE = 8 << 30  # bytes


@pytest.fixture(scope="module")
def engine():
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    bound = ADDRESS_SPACE if hard == resource.RLIM_INFINITY else min(ADDRESS_SPACE, hard)
    resource.setrlimit(resource.RLIMIT_AS, (bound, hard))
    yield factory.learned_index("alex")
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(scope="module")
def model_dir(engine, tmp_path_factory):
    """LITune's model, meta-trained once on the training tasks and stored where ``prepare`` stores it."""
    path = tmp_path_factory.mktemp("litune-index")
    tasks = training_tasks(engine, seed=0, sets=TRAIN_SETS, mixes=TRAIN_MIXES, n_keys=N_KEYS, n_ops=N_OPS)
    prob = problem(ParamSpace(engine.parameters()), engine.name, features(*held_out()[::2]),
                   training=lambda: tasks)
    start = time.perf_counter()
    info = LITune(prob, seed=0, device="cpu", episodes=EPISODES, steps=STEPS, retrain=True).prepare(path, print)
    print(f"LITune meta-training on CPU: {info['seconds']:.1f}s ({time.perf_counter() - start:.1f}s with the "
          f"defaults' runs), {info['meta']['evaluations']} evaluations, {len(tasks)} tasks")
    assert info["trained"] and info["device"] == "cpu"
    return path


def held_out(name=HELD_OUT[0], mix_name=HELD_OUT[1], seed=11):
    keys = keysets.synthetic(name, N_KEYS, seed)
    mix = mixes.parse_mix(mix_name)
    initial, stream = mixes.workload(keys, mix, N_OPS, seed)
    return keys, (initial, stream), mix


def test_meta_trained_litune_beats_the_defaults_on_a_held_out_dataset_and_mix(engine, model_dir):
    keys, (initial, stream), mix = held_out()
    prob = problem(ParamSpace(engine.parameters()), engine.name, features(keys, mix))
    opt = LITune(prob, seed=1, device="cpu")
    assert opt.prepare(model_dir, print)["loaded"]
    # the pipeline's loop, then the best safe configuration against the defaults in interleaved rounds (medians),
    # judged as the validation judges: on thread CPU time per operation (wall time swings with the machine's load)
    found = search(HarnessTarget(engine, initial, [stream]), opt, BUDGET, rounds=5)
    gain = found.default["cpu_ns_per_op"] / found.tuned["cpu_ns_per_op"]
    wall = found.tuned["throughput_ops"] / found.default["throughput_ops"]
    print(f"held-out {HELD_OUT}: {gain:.2f}x less CPU time per operation than the defaults ({wall:.2f}x their "
          f"wall-time throughput), {found.unsafe_evaluations} unsafe of {found.evaluations}")
    assert found.evaluations > BUDGET // 2 and found.changes
    assert gain > 1.2


def test_online_mode_adapts_to_a_drifted_phase_without_retraining(engine, model_dir):
    """Phase 1 on one key set and mix, then the data and the mix drift: ``online`` keeps the agent (no retraining),
    re-measures the incumbent, and tuning goes on from the new observations to beat phase 2's defaults."""
    keys, (initial, stream), mix = held_out("uniform", "read-heavy", seed=21)
    space = ParamSpace(engine.parameters())
    opt = LITune(problem(space, engine.name, features(keys, mix)), seed=2, device="cpu")
    training = opt.prepare(model_dir, print)
    search(HarnessTarget(engine, initial, [stream]), opt, 10, rounds=0)
    incumbent = opt._best()["config"]
    keys2, (initial2, stream2), mix2 = held_out("normal", "write-heavy", seed=22)
    second = HarnessTarget(engine, initial2, [stream2])
    opt.online(features(keys2, mix2))
    updates, buffered = opt.agent.updates, opt.agent.buffer.size
    first = opt.ask(1)[0]
    assert opt.problem.config(first) == space.full(incumbent)  # the incumbent, re-measured as the reference
    seen = []
    for config in [first] + [None] * 9:
        config = config if config is not None else opt.ask(1)[0]
        outcome = evaluate(second, opt.problem.config(config))
        opt.tell(config, outcome)
        seen.append(outcome.objective)
    assert opt.agent.updates > updates and opt.agent.buffer.size >= buffered and opt.training is training
    defaults = min(evaluate(second, space.default_config()).objective for _ in range(3))
    print(f"phase 2: defaults {defaults:.0f} ns/op, online best {min(s for s in seen if s):.0f} ns/op")
    assert min(s for s in seen if s is not None) < defaults
