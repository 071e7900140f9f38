"""Fuzzing alex: random points of its parameter space (``ParamSpace.decode`` of a random unit vector, so the
density chain and the out-of-domain pair stay in order) x every synthetic key set x every mix, at small sizes.
Each run either completes with every key it inserted (and every initial key) found, or reports ``failed``; none
hangs, because every compiled loop is bounded (a stuck loop ends the run as "the index stopped making progress").
The pool refuses to grow past a run's memory limit instead of eating the machine."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.core.params import ParamSpace
from connectors import factory
from connectors.learned.ops import INSERT, OpStream
from workloads.datasets.learned import keysets, mixes

KEYSETS = ("books", "fb", "osm", "uniform", "normal")
N_KEYS, N_OPS, CONFIGS = 20_000, 10_000, 4
ALEX = factory.learned_index("alex")
SPACE = ParamSpace(ALEX.parameters())


def _check(built, init: np.ndarray, stream: OpStream, m) -> None:
    if m.failed:
        assert m.failed.startswith(("the index stopped making progress: ", "memory bound exceeded: ")), m.failed
        return
    assert m.ops_done == len(stream) and not m.stopped_early
    inserted = stream.keys[stream.ops == INSERT]
    assert built.contains(init).all() and built.contains(inserted).all()
    assert m.stats["keys"] == len(np.union1d(init, inserted))


# the default run fuzzes each key set under one mix (each mix under one key set); the other 15 pairs with -m slow
PAIRS = [pytest.param(keyset, mix, marks=() if i % len(mixes.MIXES) == j else pytest.mark.slow)
         for i, keyset in enumerate(KEYSETS) for j, mix in enumerate(mixes.MIXES)]


@pytest.mark.parametrize("keyset,mix", PAIRS)
def test_random_parameters_either_run_with_every_key_found_or_fail(keyset, mix):
    seed = KEYSETS.index(keyset) * 100 + mixes.MIXES.index(mix)
    rng = np.random.default_rng(seed)
    keys = keysets.synthetic(keyset, N_KEYS, seed)
    init, stream = mixes.workload(keys, mixes.parse_mix(mix), N_OPS, seed)
    for _ in range(CONFIGS):
        config = SPACE.decode(rng.random(SPACE.dim))
        built = ALEX.build(init, config)
        _check(built, init, stream, built.run(stream, memory_limit_bytes=1 << 30))


def test_the_configuration_that_hung_runs():
    """books keys, balanced mix, fanout-tree splitting upwards with a small node size: ran forever once."""
    config = {"expected_insert_frac": "0.637", "max_node_size": "14038", "approximate_model_computation": "false",
              "approximate_cost_computation": "false", "fanout_selection_method": "fixed",
              "splitting_policy": "fanout-tree", "allow_splitting_upwards": "true", "min_out_of_domain_keys": "154",
              "max_out_of_domain_keys": "1495", "out_of_domain_tolerance": "44.65", "max_density": "0.8629",
              "init_density": "0.7859", "min_density": "0.2021", "append_mostly_threshold": "0.5168"}
    init, stream = mixes.workload(keysets.synthetic("books", 30_000, 2), mixes.parse_mix("balanced"), 20_000, 2)
    built = ALEX.build(init, config)
    m = built.run(stream)
    assert not m.failed and m.ops_done == len(stream)
    _check(built, init, stream, m)


def test_the_pool_refuses_to_grow_past_the_memory_limit():
    """Inserts that need more room than the limit allows end the run as failed instead of growing the pools; the
    same run without the limit grows past it."""
    init, stream = mixes.workload(keysets.synthetic("uniform", N_KEYS, 1), mixes.parse_mix("write-heavy"), N_OPS, 1)
    built = ALEX.build(init, {"max_density": "0.35", "init_density": "0.3", "min_density": "0.2"})
    free = built.copy()
    limit = built.memory_bytes() + 100_000
    m = built.run(stream, memory_limit_bytes=limit)
    assert m.failed.startswith("memory bound exceeded: the structure needs") and "at operation" in m.failed
    assert built.memory_bytes() <= limit and len(built.S[3]) * 9 <= 4 * limit
    unlimited = free.run(stream)
    assert not unlimited.failed and unlimited.memory_bytes > limit
