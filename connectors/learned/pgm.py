"""``pgm``: the PGM-index (Ferragina & Vinciguerra) through pygm, read-only, one parameter ``epsilon``.

What is measured, honestly: pygm builds the index (its piecewise-linear segments with the epsilon guarantee, in
C++), but it has no batch lookup and a per-key Python call measures the interpreter (~400 ns), not the index. So
the segments pygm built are read out once (``SortedList.segment(level, i)``) and the lookups run in the same kind
of compiled loop as the other engines, as PGM's C++ does them: from the root segment down, each level predicts a
position and searches +-(epsilon_recursive + 1) around it; in the data, +-(epsilon + 1) around the leaf segment's
prediction (a full binary search only if a window misses, which pygm's guarantee rules out). The structure, the
segment counts and the memory are pygm's; the search code is ours. Inserts: the run fails ("read-only index").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pygm
from numba import njit

from advisor.core.params import ParamSpace, ParamSpec
from connectors.learned.base import DONE, STOPPED, WARM_OPS, CompiledRun, check_keys
from connectors.learned.ops import INSERT, OpStream
from connectors.learned.sorted_array import lower_bound
from connectors.learned.timing import ticks

PARAMETERS = (ParamSpec("epsilon", 8, 4096, scale="log", integer=True, default="64", rebuild=True,
                        description="the leaf segments' maximum position error (keys)"),)
SPACE = ParamSpace(PARAMETERS)


@njit(cache=True)
def _last_le(a, lo, hi, key):
    """Index of the last a[j] <= key in [lo, hi), or lo - 1."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@njit(cache=True)
def _predict(slope, icpt, skey, key):
    d = float(key - skey) if key >= skey else -float(skey - key)
    return np.int64(slope * d) + icpt


@njit(cache=True)
def _position(data, seg_key, seg_slope, seg_icpt, lvl_off, eps, eps_rec, key):
    """Lower bound of ``key`` in ``data`` through the segments (levels bottom-up in lvl_off)."""
    top = len(lvl_off) - 2
    i = lvl_off[top]
    for lv in range(top, 0, -1):
        lo_l, hi_l = lvl_off[lv - 1], lvl_off[lv]
        p = lo_l + _predict(seg_slope[i], seg_icpt[i], seg_key[i], key)
        a, b = max(lo_l, p - eps_rec - 1), min(hi_l, p + eps_rec + 2)
        j = _last_le(seg_key, a, b, key) if a < b else a - 1
        if j < a or (j + 1 < hi_l and j + 1 == b and seg_key[j + 1] <= key):
            j = _last_le(seg_key, lo_l, hi_l, key)
        i = max(j, lo_l)
    n = len(data)
    p = _predict(seg_slope[i], seg_icpt[i], seg_key[i], key)
    a, b = max(0, p - eps - 1), min(n, p + eps + 2)
    if a >= b or (a > 0 and data[a - 1] >= key) or (b < n and data[b - 1] < key):
        return lower_bound(data, n, key)
    while a < b:
        mid = (a + b) >> 1
        if data[mid] < key:
            a = mid + 1
        else:
            b = mid
    return a


@njit(cache=True)
def _loop(data, seg_key, seg_slope, seg_icpt, lvl_off, eps, eps_rec, state, ops, keys, lengths, start, lat,
          t_begin, max_ticks):
    n = len(data)
    for i in range(start, len(ops)):
        if max_ticks > 0 and (i & 1023) == 0 and i >= WARM_OPS and (ticks() - t_begin) > i * max_ticks:
            return i, STOPPED
        k = keys[i]
        t0 = ticks()
        pos = _position(data, seg_key, seg_slope, seg_icpt, lvl_off, eps, eps_rec, k)
        if ops[i] == 0:
            if pos < n and data[pos] == k:
                state[0] += 1
        else:
            for j in range(pos, min(n, pos + lengths[i])):
                state[1] += np.int64(data[j] & np.uint64(0xFFFFFFFF))
        lat[i] = ticks() - t0
    return len(ops), DONE


class PGMIndex(CompiledRun):
    def __init__(self, keys: np.ndarray, epsilon: int):
        self.data, self.epsilon = keys, epsilon
        self.index = pygm.SortedList(keys, epsilon=epsilon)
        st = self.index.stats()
        self.info = st
        counts = list(st["segments counts"])
        self.lvl_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        segs = [self.index.segment(lv, i) for lv, c in enumerate(counts) for i in range(c)]
        self.seg_key = np.array([s["key"] for s in segs], dtype=np.uint64)
        self.seg_slope = np.array([s["slope"] for s in segs], dtype=np.float64)
        self.seg_icpt = np.array([s["intercept"] for s in segs], dtype=np.int64)
        self.eps_rec = int(st["epsilon recursive"])
        self.state = np.zeros(2, dtype=np.int64)

    def _refuse(self, stream: OpStream) -> str:
        return "read-only index: pgm cannot insert" if np.any(stream.ops == INSERT) else ""

    def _loop(self, stream, start, lat, t_begin, max_ticks_per_op):
        return _loop(self.data, self.seg_key, self.seg_slope, self.seg_icpt, self.lvl_off, self.epsilon,
                     self.eps_rec, self.state, stream.ops, stream.keys, stream.lengths, start, lat, t_begin,
                     max_ticks_per_op)

    def stats(self) -> dict[str, float]:
        return {"keys": float(len(self.data)), "depth": float(self.info["height"]),
                "nodes": float(sum(self.info["segments counts"])), "leaves": float(self.info["leaf segments"]),
                "epsilon": float(self.epsilon), "index_bytes": float(self.info["index size"])}

    def memory_bytes(self) -> int:
        return int(self.info["index size"]) + 8 * len(self.data)

    def set_params(self, params: Mapping[str, str]) -> None:
        for name, value in SPACE.validate(params).items():
            if int(value) != self.epsilon:
                raise ValueError(f"{name} takes effect only when the index is rebuilt")

    def copy(self) -> PGMIndex:
        return self  # read-only: a run never changes it

    def contains(self, keys) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.uint64)
        pos = np.array([_position(self.data, self.seg_key, self.seg_slope, self.seg_icpt, self.lvl_off,
                                  self.epsilon, self.eps_rec, k) for k in keys], dtype=np.int64)
        n = len(self.data)
        return (pos < n) & (self.data[np.minimum(pos, max(n - 1, 0))] == keys)

    def range(self, start: int, n: int) -> np.ndarray:
        pos = _position(self.data, self.seg_key, self.seg_slope, self.seg_icpt, self.lvl_off, self.epsilon,
                        self.eps_rec, np.uint64(start))
        return self.data[pos:pos + n].copy()


class PGMEngine:
    """``pgm``: pygm's PGM-index (read-only)."""

    name = "pgm"
    read_only = True

    def parameters(self) -> tuple[ParamSpec, ...]:
        return PARAMETERS

    def build(self, keys: np.ndarray, params: Mapping[str, str]) -> PGMIndex:
        keys = check_keys(keys)
        if len(keys) == 0:
            raise ValueError("pgm needs at least one key")
        return PGMIndex(keys.copy(), int(SPACE.full(params)["epsilon"]))

