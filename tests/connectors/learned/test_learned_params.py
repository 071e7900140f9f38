"""The learned index engines' parameters and measurements: ALEX's parameter list and defaults, clear one-line
errors for bad values and broken constraints, online parameter changes that really change the structure, the
safety cut, the memory bound, the read-only pgm, and what a Measurement holds."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.core.errors import AdvisorError, InvalidKnobValue, UnknownKnob
from advisor.core.params import ParamSpace
from connectors import factory
from connectors.factory import INSERT, LOOKUP, RANGE, OpStream

RNG = np.random.default_rng(11)
KEYS = np.unique(RNG.integers(0, 2**48, 30_000).astype(np.uint64))
INITIAL, EXTRA = KEYS[::2], KEYS[1::2]


def _alex(params=None):
    return factory.learned_index("alex").build(INITIAL, params or {})


def test_alex_offers_alexs_parameters_with_alexs_defaults():
    space = ParamSpace(factory.learned_index("alex").parameters())
    assert space.default_config() == {
        "expected_insert_frac": "1", "max_node_size": "16777216", "approximate_model_computation": "true",
        "approximate_cost_computation": "false", "fanout_selection_method": "bottom-up",
        "splitting_policy": "decide", "allow_splitting_upwards": "false", "min_out_of_domain_keys": "5",
        "max_out_of_domain_keys": "1000", "out_of_domain_tolerance": "2", "max_density": "0.8",
        "init_density": "0.7", "min_density": "0.6", "append_mostly_threshold": "0.9"}
    assert space.restart_mask().tolist().count(True) == 1  # fanout selection acts at bulk load only
    assert factory.learned_indexes() == ("alex", "pgm")


@pytest.mark.parametrize(("params", "error", "text"), [
    ({"max_density": "2"}, InvalidKnobValue, "max_density: 2 is outside [0.3, 0.99]"),
    ({"splitting_policy": "sometimes"}, InvalidKnobValue, "splitting_policy: 'sometimes' is not one of"),
    ({"min_density": "0.75"}, InvalidKnobValue, "min_density (0.75) must be below init_density (0.7)"),
    ({"min_out_of_domain_keys": "50", "max_out_of_domain_keys": "20"}, InvalidKnobValue,
     "min_out_of_domain_keys (50) must be below max_out_of_domain_keys (20)"),
    ({"fanout": "8"}, UnknownKnob, "unknown parameter 'fanout'"),
])
def test_bad_parameters_get_one_clear_line(params, error, text):
    with pytest.raises(error) as e:
        _alex(params)
    assert text in str(e.value) and "\n" not in str(e.value)


def test_unknown_engine_and_bad_keys_are_refused():
    with pytest.raises(AdvisorError, match="unknown learned index 'lipp': expected one of alex, pgm"):
        factory.learned_index("lipp")
    with pytest.raises(ValueError, match="sorted and unique"):
        factory.learned_index("alex").build(np.array([3, 1], dtype=np.uint64), {})


def test_online_parameters_change_future_node_operations():
    """Densities set on a built index apply to the nodes that grow afterwards: the same inserts leave the sparse
    copy emptier and bigger; a parameter that needs a rebuild is refused."""
    dense, sparse = _alex(), _alex()
    sparse.set_params({"max_density": "0.4", "init_density": "0.3", "min_density": "0.2"})
    stream = OpStream.of(np.full(len(EXTRA), INSERT), RNG.permutation(EXTRA))
    a, b = dense.run(stream), sparse.run(stream)
    assert b.stats["mean_fill"] < a.stats["mean_fill"] - 0.1 and b.memory_bytes > a.memory_bytes
    assert dense.contains(KEYS).all() and sparse.contains(KEYS).all()
    with pytest.raises(ValueError, match="fanout_selection_method takes effect only when the index is rebuilt"):
        dense.set_params({"fanout_selection_method": "top-down"})
    with pytest.raises(InvalidKnobValue, match=r"min_density \(0.79\) must be below init_density"):
        dense.set_params({"min_density": "0.79"})


def test_parameters_shape_the_structure():
    """Uniform keys fit one line: the defaults build one data node. A small node size bounds the leaves (128
    slots of 8 bytes) and deepens the tree; no expected inserts builds leaves without gaps. On curved keys the
    cost model splits the keys up while fixed fanout selection keeps one 16 MiB node."""
    big, small = _alex(), _alex({"max_node_size": "1024"})
    assert big.stats()["leaves"] == 1 and big.stats()["depth"] == 1
    assert small.stats()["largest_leaf"] <= 128 and small.stats()["depth"] > 1
    packed = _alex({"expected_insert_frac": "0"})
    assert packed.stats()["mean_fill"] > 0.9 > 0.75 > big.stats()["mean_fill"]
    curved = np.unique((np.random.default_rng(3).lognormal(0, 2, 20_000) * 2**40).astype(np.uint64))
    alex = factory.learned_index("alex")
    assert alex.build(curved, {}).stats()["leaves"] > 10
    assert alex.build(curved, {"fanout_selection_method": "fixed"}).stats()["leaves"] == 1


def test_a_run_measures_every_op_type():
    ops = RNG.choice([LOOKUP, INSERT, RANGE], 3000, p=[0.5, 0.4, 0.1]).astype(np.uint8)
    keys = np.where(ops == INSERT, EXTRA[:3000], RNG.choice(INITIAL, 3000))
    m = _alex().run(OpStream.of(ops, keys, np.where(ops == RANGE, 20, 0)))
    counts = {name: int(np.count_nonzero(ops == code)) for code, name in enumerate(("lookup", "insert", "range"))}
    assert {k: len(v) for k, v in m.samples_ns.items()} == counts
    assert m.ops_done == 3000 and m.throughput_ops > 0 and 0 < m.p99_ns < float("inf")
    assert all(np.all(v > 0) for v in m.samples_ns.values())
    assert m.stats["keys"] == len(INITIAL) + counts["insert"]
    assert {"depth", "nodes", "leaves", "mean_fill", "expansions", "splits", "retrains"} <= set(m.stats)


@pytest.mark.parametrize("engine", ["alex", "pgm", "sorted-array"])
def test_the_safety_cut_stops_a_run_over_the_cpu_time_bound(engine):
    built = (factory.binary_search_baseline() if engine == "sorted-array"
             else factory.learned_index(engine)).build(INITIAL, {})
    stream = OpStream.of(np.zeros(50_000), RNG.choice(KEYS, 50_000))
    m = built.run(stream, max_cpu_ns_per_op=1e-3)  # a thousandth of a ns of CPU per lookup: nothing is that fast
    assert m.stopped_early and 4096 <= m.ops_done < 50_000 and not m.failed
    assert m.cpu_ns > m.ops_done * 1e-3 and sum(len(v) for v in m.samples_ns.values()) == m.ops_done
    assert not built.run(stream, max_cpu_ns_per_op=1e9).stopped_early  # a second per lookup


def test_the_memory_bound_fails_a_run():
    built = _alex()
    m = built.run(OpStream.of([LOOKUP], [INITIAL[0]]), memory_limit_bytes=built.memory_bytes() - 1)
    assert m.failed.startswith("memory bound exceeded:") and m.memory_bytes == built.memory_bytes()
    ok = built.run(OpStream.of([LOOKUP], [INITIAL[0]]), memory_limit_bytes=built.memory_bytes())
    assert not ok.failed and ok.ops_done == 1


def test_pgm_is_read_only():
    pgm = factory.learned_index("pgm")
    assert pgm.read_only and [p.name for p in pgm.parameters()] == ["epsilon"]
    built = pgm.build(INITIAL, {"epsilon": "32"})
    m = built.run(OpStream.of([LOOKUP, INSERT], [INITIAL[0], EXTRA[0]]))
    assert m.failed == "read-only index: pgm cannot insert" and m.ops_done == 0
    with pytest.raises(ValueError, match="rebuilt"):
        built.set_params({"epsilon": "64"})
    with pytest.raises(InvalidKnobValue, match="epsilon: 2 is outside"):
        pgm.build(INITIAL, {"epsilon": "2"})
    coarse = pgm.build(INITIAL, {"epsilon": "4096"})
    assert coarse.stats()["leaves"] < built.stats()["leaves"]


class _Scripted:
    """A synthetic run loop for the driver (``connectors.learned.base.CompiledRun``) with a known answer: its first
    timed call waits 60 ms (``sleep``: wall time, no CPU) or computes 20 ms of its thread's CPU time, then returns
    at op 4096 as a compiled loop does when its clock is over the bound; the next call runs the rest."""

    def __new__(cls, spin: bool):
        from connectors.learned.base import DONE, STOPPED, WARM_OPS, CompiledRun

        class Loop(CompiledRun):
            def __init__(self):
                self.calls: list[int] = []  # the t_begin each timed call was given

            def _loop(self, stream, start, lat, t_begin, max_ticks_per_op):
                import time

                if start >= len(stream):  # the driver's compile call, before the clock
                    return start, DONE
                self.calls.append(int(t_begin))
                if len(self.calls) > 1:
                    return len(stream), DONE
                if spin:
                    end = time.thread_time_ns() + 20_000_000
                    while time.thread_time_ns() < end:
                        pass
                else:
                    time.sleep(0.06)
                return WARM_OPS, STOPPED

            def memory_bytes(self):
                return 0

            def stats(self):
                return {}

        return Loop()


def test_the_safety_cut_decides_on_cpu_time_not_on_a_wait_for_a_core():
    """4,096 ops under a bound of 1,000 CPU ns each may spend 4 ms of CPU: 60 ms asleep (a wait) is under it, and
    the loop resumes with its clock moved on by the wait; 20 ms of CPU is over it, and the run stops."""
    from connectors.learned.base import WARM_OPS
    from connectors.learned.timing import ns_per_tick

    stream = OpStream.of(np.zeros(8192), RNG.choice(KEYS, 8192))
    waited = _Scripted(spin=False)
    m = waited.run(stream, max_cpu_ns_per_op=1_000)
    assert not m.stopped_early and m.ops_done == 8192 and len(waited.calls) == 2
    assert (waited.calls[1] - waited.calls[0]) * ns_per_tick() > 40e6  # the clock moved on by the 60 ms wait
    busy = _Scripted(spin=True)
    m = busy.run(stream, max_cpu_ns_per_op=1_000)
    assert m.stopped_early and m.ops_done == WARM_OPS and len(busy.calls) == 1 and m.cpu_ns >= 20e6
