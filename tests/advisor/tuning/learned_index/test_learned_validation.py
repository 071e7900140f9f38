"""A learned index's validation (``advisor.tuning.learned_index.validation``) on the real harness and the real index,
through the one measurement engine, decided on thread CPU time per operation: a clearly better configuration is
accepted, stopping early once the gain's interval clears the minimum; a configuration against itself is not accepted; the harness
records each run's CPU time beside its wall time, and the figures and the measured line carry both.

The clear case is ALEX on a balanced mix with its data nodes kept nearly full (every insert shifts, nodes expand
often) against nodes kept sparse: about half the CPU time per operation, on every machine we ran it on (a busy
one included); nothing here asserts a time."""

from __future__ import annotations

import pytest

from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.learned_index.validation import validate
from connectors import factory
from tests.advisor.items import alex_balanced

N = 20_000
DENSE = {"max_density": "0.99", "init_density": "0.95", "min_density": "0.9"}
SPARSE = {"max_density": "0.3", "init_density": "0.2", "min_density": "0.1"}


@pytest.fixture(scope="module")
def target() -> HarnessTarget:
    return alex_balanced(N)


def test_a_clearly_better_configuration_is_accepted_and_stops_early(target):
    said: list[str] = []
    evidence, default, tuned = validate(target, DENSE, SPARSE, 8, say=said.append)
    assert evidence.accepted and evidence.gain > 0.2
    # usually the engine's minimum of 3 (of at most 8); a busy machine's noisy baseline can take more rounds
    assert 3 <= evidence.rounds <= 8 and len(evidence.baseline_totals_ms) == evidence.rounds
    if evidence.rounds < 8:  # it stopped early, and says why
        assert evidence.measured.startswith(f"{evidence.rounds} rounds (the gain's interval clears the minimum)")
    assert "decided on thread CPU time" in evidence.measured and "wall-time throughput" in evidence.measured
    assert tuned["cpu_ns_per_op"] < default["cpu_ns_per_op"]
    assert [s.queryid for s in evidence.statements] == ["operations"]
    assert "CPU ns per operation" in evidence.statements[0].sql
    # the evidence carries its unit (its *_ms fields hold ns per operation here), and the store keeps it
    assert evidence.symbol == "ns" and evidence.unit.startswith("thread CPU time per operation")
    from advisor.storage.codec import evidence_from, plain

    assert (evidence_from(plain(evidence)).unit, evidence_from(plain(evidence)).symbol) == (evidence.unit, "ns")
    assert any("validation round 1 (at most 8), tuned:" in line and "ops/s" in line for line in said)


def test_the_same_configuration_against_itself_is_not_accepted(target):
    evidence, default, tuned = validate(target, {}, {}, 6)
    assert not evidence.accepted
    assert 3 <= evidence.rounds <= 6 and "decided on thread CPU time" in evidence.measured


def test_the_harness_records_cpu_time_beside_wall_time(target):
    target.apply({})
    (arm,) = target.measure(1)
    figures = target.last
    wall_ns_per_op = 1e9 / figures.throughput_ops
    # the thread's CPU time over the same span as the wall clock: recorded, and never more than the wall time
    assert 0 < figures.cpu_ns_per_op <= wall_ns_per_op * 1.01 + 1.0
    assert arm.samples == {"operations": [pytest.approx(figures.cpu_ns_per_op)]}
    assert figures.metrics()["cpu_ns_per_op"] == figures.cpu_ns_per_op  # a trial's objective, in its metrics
    from optimizers.learned_index.litune_agent import step_vector  # ... but not one of LITune's hashed statistics
    step = {"x": [0.5], "objective": 100.0, "unsafe": False, "status": "measured", "metrics": figures.metrics()}
    bare = {**step, "metrics": {k: v for k, v in figures.metrics().items() if k != "cpu_ns_per_op"}}
    assert (step_vector(step, step, 1) == step_vector(bare, bare, 1)).all()
    stream = target.streams[0]
    m = factory.learned_index("alex").build(target.initial_keys, target.space.default_config()).run(stream)
    assert m.cpu_ns > 0 and m.ops_done == len(stream)
    assert m.cpu_ns <= m.ops_done / m.throughput_ops * 1e9 * 1.01 + 1_000


def test_figures_are_medians_over_the_kept_rounds_with_cpu_time(target):
    evidence, default, tuned = validate(target, DENSE, SPARSE, 3)
    for figures in (default, tuned):
        assert set(figures) == {"throughput_ops", "cpu_ns_per_op", "p99_ns", "memory_bytes"}
        assert figures["cpu_ns_per_op"] > 0 and figures["throughput_ops"] > 0
    assert len(evidence.baseline_totals_ms) == evidence.rounds == 3
