"""The learned index engines keep every key: random operation sequences (lookups, inserts, range scans, keys at
the low end, the middle and the top of the uint64 range, out-of-domain on both sides) run through the compiled
loops and are checked against a Python set, for ALEX under default and extreme parameters, for the sorted-array
baseline, and (read-only) for pgm."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors import factory
from connectors.factory import INSERT, LOOKUP, RANGE, OpStream

SETTINGS = {
    "defaults": {},
    "tiny-nodes-upwards": {"max_node_size": "1024", "allow_splitting_upwards": "true",
                           "splitting_policy": "fanout-tree", "approximate_cost_computation": "true"},
    "sparse-fixed": {"fanout_selection_method": "fixed", "max_density": "0.3", "init_density": "0.2",
                     "min_density": "0.1", "min_out_of_domain_keys": "1", "max_out_of_domain_keys": "10",
                     "out_of_domain_tolerance": "0.25"},
    "dense-no-gaps": {"expected_insert_frac": "0", "max_density": "0.99", "init_density": "0.95",
                      "min_density": "0.9", "splitting_policy": "always-two", "max_node_size": "2048",
                      "approximate_model_computation": "false", "append_mostly_threshold": "0.5"},
    "top-down": {"fanout_selection_method": "top-down", "max_node_size": "4096"},
}
BASES = (0, 2**40, 2**64 - 2**14)  # keys near 0, in the middle, and just under the reserved 2**64-1


@st.composite
def scenarios(draw):
    base = draw(st.sampled_from(BASES))
    offsets = st.integers(0, 2**13)
    initial = draw(st.sets(offsets, max_size=400))
    n = draw(st.integers(1, 600))
    ops = draw(st.lists(st.sampled_from((LOOKUP, INSERT, INSERT, RANGE)), min_size=n, max_size=n))
    # inserts: random keys, or a run of ascending keys past the current maximum (appends) in some examples
    appending = draw(st.booleans())
    keys = draw(st.lists(offsets, min_size=n, max_size=n))
    if appending:
        top = max(initial, default=0)
        keys = [top + 1 + 3 * i if op == INSERT else k for i, (op, k) in enumerate(zip(ops, keys, strict=True))]
    lengths = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    return base, sorted(initial), ops, keys, lengths


def _check(built, base, initial, ops, keys, lengths, writes=True):
    keys = [min(base + k, 2**64 - 2) for k in keys]
    initial_keys = [min(base + k, 2**64 - 2) for k in initial]
    stream = OpStream.of(ops, keys, [ln if op == RANGE else 0 for op, ln in zip(ops, lengths, strict=True)])
    m = built.run(stream)
    assert m.ops_done == len(ops) and not m.failed and not m.stopped_early
    present = set(initial_keys) | ({k for op, k in zip(ops, keys, strict=True) if op == INSERT} if writes else set())
    probe = sorted(present | {k + 1 for k in present if k + 1 < 2**64 - 1} | {base, 2**64 - 2})
    found = built.contains(np.array(probe, dtype=np.uint64))
    assert [k for k, f in zip(probe, found, strict=True) if f] == sorted(present)
    ordered = sorted(present)
    for start, length in zip(keys[:25], lengths[:25], strict=False):
        got = built.range(start, length).tolist()
        i = np.searchsorted(np.array(ordered, dtype=np.uint64), np.uint64(start)) if ordered else 0
        assert got == ordered[i:i + length]
    assert all(np.isfinite(v) for v in m.stats.values())
    assert m.memory_bytes > 0 or not present
    return m


@pytest.mark.parametrize("name", SETTINGS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_alex_keeps_every_key(name, scenario):
    base, initial, ops, keys, lengths = scenario
    built = factory.learned_index("alex").build(np.array([base + k for k in initial], dtype=np.uint64),
                                                SETTINGS[name])
    _check(built, base, initial, ops, keys, lengths)


@settings(max_examples=30, deadline=None)
@given(scenario=scenarios())
def test_sorted_array_keeps_every_key(scenario):
    base, initial, ops, keys, lengths = scenario
    built = factory.binary_search_baseline().build(np.array([base + k for k in initial], dtype=np.uint64), {})
    _check(built, base, initial, ops, keys, lengths)


@settings(max_examples=30, deadline=None)
@given(scenario=scenarios(), epsilon=st.sampled_from(["8", "64", "4096"]))
def test_pgm_finds_every_key_read_only(scenario, epsilon):
    base, initial, ops, keys, lengths = scenario
    if not initial:
        initial = [7]
    ops = [LOOKUP if op == INSERT else op for op in ops]
    built = factory.learned_index("pgm").build(np.array([base + k for k in initial], dtype=np.uint64),
                                               {"epsilon": epsilon})
    _check(built, base, initial, ops, keys, lengths, writes=False)


def test_alex_grows_through_many_inserts_and_copies_are_independent():
    """Enough inserts to expand, split and grow the memory pools several times; a copy taken before a run is
    unchanged by it (a snapshot to rerun from)."""
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 2**50, 60_000).astype(np.uint64))
    initial, extra = keys[::3], np.setdiff1d(keys, keys[::3])
    built = factory.learned_index("alex").build(initial, {"max_node_size": "1024"})
    before = built.copy()
    m = built.run(OpStream.of(np.full(len(extra), INSERT), rng.permutation(extra)))
    assert m.stats["expansions"] > 0 and m.stats["splits"] > 0 and m.stats["keys"] == len(keys)
    assert built.contains(keys).all()
    assert before.contains(initial).all() and not before.contains(extra).any()
    assert built.memory_bytes() > before.memory_bytes()


@pytest.mark.parametrize("node_size", ["1024", "1048576"])  # a new root above a full one / the root doubling
@pytest.mark.parametrize("side", ["left", "right"])
def test_out_of_domain_inserts_expand_the_root(node_size, side):
    """Keys arriving below (descending) or above (ascending) the bulk-loaded range expand the root's domain once
    enough of them came, and every key stays reachable."""
    initial = np.arange(1_000_000, 1_020_000, 4, dtype=np.uint64)
    step = np.arange(1, 4001, dtype=np.uint64) * np.uint64(4)
    arriving = initial[0] - step if side == "left" else initial[-1] + step
    params = {"max_node_size": node_size, "min_out_of_domain_keys": "1", "max_out_of_domain_keys": "10"}
    built = factory.learned_index("alex").build(initial, params)
    if built.stats()["model_nodes"] == 0:  # the keys fit one data node: no root domain to expand
        built = factory.learned_index("alex").build(initial, {**params, "fanout_selection_method": "fixed",
                                                              "max_node_size": "16384"})
    m = built.run(OpStream.of(np.full(len(arriving), INSERT), arriving))
    assert m.stats["root_expansions"] > 0
    assert built.contains(initial).all() and built.contains(arriving).all()
    everything = np.union1d(initial, arriving)
    assert built.range(int(everything[0]), len(everything)).tolist() == everything.tolist()
