"""Operation mixes for learned indexes, and the streams they make.

``parse_mix`` reads a named mix (``MIXES``) or ``lookup=0.7,insert=0.2,range=0.1[,range_len=100]`` (shares that
sum to 1). ``workload(keys, mix, n_ops, seed)`` holds out random keys for the inserts and returns the initial keys
and one ``OpStream``: ops drawn with the mix's shares, lookups and range starts drawn from the keys present from
the start, inserts the held-out keys in random order. ``drifting(name, mix_from, mix_to, phases, n_ops, seed)``:
phases of ``n_ops`` each whose mix moves linearly from one mix to the other while the inserted keys move out of
the initial key range (phase p draws from the family ``name`` shifted by p/4 of the initial range), so the index
meets out-of-domain and append-like inserts as a real key space drifts.

>>> parse_mix("write-heavy")
Mix(lookup=0.2, insert=0.8, range=0.0, range_len=100)
>>> parse_mix("lookup=0.5, insert=0.4, range=0.1, range_len=20").range_len
20
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.errors import InvalidInput
from connectors.factory import INSERT, RANGE, OpStream
from workloads.datasets.learned.keysets import synthetic

MIXES = ("read-only", "read-heavy", "balanced", "write-heavy")


@dataclass(frozen=True)
class Mix:
    """Shares of lookups, inserts and range scans (summing to 1); ``range_len`` keys a scan."""

    lookup: float
    insert: float
    range: float
    range_len: int = 100

    def shares(self) -> np.ndarray:
        return np.array([self.lookup, self.insert, self.range], dtype=float)

    def toward(self, other: Mix, t: float) -> Mix:
        """The mix a fraction ``t`` of the way to ``other``."""
        a, b = self.shares(), other.shares()
        s = (1 - t) * a + t * b
        return Mix(float(s[0]), float(s[1]), float(s[2]), round((1 - t) * self.range_len + t * other.range_len))


NAMED = {"read-only": Mix(1.0, 0.0, 0.0), "read-heavy": Mix(0.9, 0.1, 0.0), "balanced": Mix(0.5, 0.5, 0.0),
         "write-heavy": Mix(0.2, 0.8, 0.0)}


def parse_mix(text: str) -> Mix:
    """A named mix or ``op=share,...``; InvalidInput in one line when it is neither."""
    raw = (text or "").strip()
    if raw.lower() in NAMED:
        return NAMED[raw.lower()]
    if "=" not in raw:
        raise InvalidInput(f"unknown mix {raw!r}: expected one of {', '.join(MIXES)} or "
                           "lookup=0.7,insert=0.2,range=0.1")
    values: dict[str, float] = {}
    for part in raw.split(","):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key not in ("lookup", "insert", "range", "range_len"):
            raise InvalidInput(f"mix {raw!r}: unknown part {key!r} (lookup, insert, range, range_len)")
        try:
            values[key] = float(value)
        except ValueError:
            raise InvalidInput(f"mix {raw!r}: {key} needs a number, got {value.strip()!r}") from None
        if not np.isfinite(values[key]) or values[key] < 0:
            raise InvalidInput(f"mix {raw!r}: {key} must be a non-negative number")
    shares = [values.get(k, 0.0) for k in ("lookup", "insert", "range")]
    if abs(sum(shares) - 1.0) > 1e-6:
        raise InvalidInput(f"mix {raw!r}: the shares of lookup, insert and range sum to {sum(shares):g}, not 1")
    length = values.get("range_len", 100.0)
    if length < 1 or length != int(length):
        raise InvalidInput(f"mix {raw!r}: range_len must be a whole number of keys >= 1")
    return Mix(*shares, range_len=int(length))


def _ops(mix: Mix, n_ops: int, rng: np.random.Generator) -> np.ndarray:
    return rng.choice(3, n_ops, p=mix.shares() / mix.shares().sum()).astype(np.uint8)


def _stream(ops, present, inserts, mix: Mix, rng) -> OpStream:
    keys = rng.choice(present, len(ops)) if len(present) else np.zeros(len(ops), np.uint64)
    keys[ops == INSERT] = inserts
    lengths = np.where(ops == RANGE, mix.range_len, 0)
    return OpStream.of(ops, keys, lengths)


def workload(keys: np.ndarray, mix: Mix, n_ops: int, seed: int) -> tuple[np.ndarray, OpStream]:
    """(initial keys, stream): the stream's inserts are keys held out of ``keys``."""
    keys = np.asarray(keys, dtype=np.uint64)
    rng = np.random.default_rng(seed)
    ops = _ops(mix, n_ops, rng)
    n_ins = int(np.count_nonzero(ops == INSERT))
    if n_ins > len(keys) // 2:
        raise InvalidInput(f"{n_ops} operations with {mix.insert:g} inserts need {n_ins} held-out keys, more than "
                           f"half of the {len(keys)} keys: use fewer operations or more keys")
    if len(keys) - n_ins < 1:
        raise InvalidInput("the key set is empty")
    held = rng.choice(len(keys), n_ins, replace=False)
    mask = np.ones(len(keys), bool)
    mask[held] = False
    initial = keys[mask]
    return initial, _stream(ops, initial, rng.permutation(keys[held]), mix, rng)


def drifting(name: str, mix_from: Mix, mix_to: Mix, phases: int, n_ops: int,
             seed: int) -> tuple[np.ndarray, list[OpStream]]:
    """(initial keys, one stream a phase); see the module docstring."""
    if phases < 1:
        raise InvalidInput(f"a drifting workload needs at least one phase (got {phases})")
    rng = np.random.default_rng(seed)
    initial = synthetic(name, max(1000, n_ops), seed)
    lo, hi = float(initial[0]), float(initial[-1])
    present = initial
    streams = []
    for p in range(phases):
        mix = mix_from.toward(mix_to, p / max(phases - 1, 1))
        ops = _ops(mix, n_ops, rng)
        n_ins = int(np.count_nonzero(ops == INSERT))
        fresh = synthetic(name, max(2 * n_ins, 16), seed + 1000 + p).astype(np.float64)
        shifted = np.clip(fresh - fresh.min() + lo + p * (hi - lo) / 4.0, 0, 2.0**63).astype(np.uint64)
        fresh = np.setdiff1d(np.unique(shifted), present)
        if len(fresh) < n_ins:
            raise InvalidInput(f"drifting {name}: phase {p} could not draw {n_ins} new keys")
        inserts = rng.permutation(fresh)[:n_ins]
        streams.append(_stream(ops, present, inserts, mix, rng))
        present = np.union1d(present, inserts)
    return initial, streams
