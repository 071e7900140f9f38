"""The shared replay buffer (optimizers.rl.replay): it wraps, keeps the last transitions, samples the same batches
from the same seed (half from the most recent ones when asked) and survives its blob."""

import numpy as np
import pytest

from optimizers.rl.replay import ReplayBuffer

SPEC = {"s": ((2,), np.float32), "a": ((), np.int64), "done": ((), np.float32)}


def filled(capacity, n):
    buf = ReplayBuffer(capacity, SPEC)
    for i in range(n):
        buf.add(np.array([i, -i]), i, i % 2 == 0)
    return buf


def test_the_buffer_wraps_over_its_oldest_transitions():
    buf = filled(4, 6)
    assert (buf.size, buf.pos) == (4, 2)
    assert buf.a.tolist() == [4, 5, 2, 3] and buf.s[1].tolist() == [5.0, -5.0] and buf.done.tolist() == [1, 0, 1, 0]
    assert buf.recent(3).a.tolist() == [3, 4, 5]


def test_recent_sampling_draws_half_from_the_last_transitions():
    buf = filled(50, 50)
    _, a, _ = buf.sample(40, np.random.default_rng(0), "cpu", recent=5)
    assert set(a[:20].tolist()) <= {45, 46, 47, 48, 49}
    assert set(a[20:].tolist()) - {45, 46, 47, 48, 49}  # the rest from anywhere
    again = buf.sample(40, np.random.default_rng(0), "cpu", recent=5)
    assert a.tolist() == again[1].tolist()


def test_a_blob_round_trip_keeps_the_transitions_and_the_position():
    buf = filled(4, 6)
    back = ReplayBuffer(4, SPEC)
    back.load_blob(buf.to_blob())
    assert (back.size, back.pos) == (buf.size, buf.pos)
    assert all(np.array_equal(getattr(back, f), getattr(buf, f)) for f in SPEC)


def test_a_transition_with_a_missing_field_is_refused():
    with pytest.raises(ValueError, match="3 fields"):
        ReplayBuffer(2, SPEC).add(np.zeros(2), 1)
