"""The ``sorted-array`` baseline: the keys in one sorted array, binary search in the same kind of compiled loop
as the learned indexes; an insert shifts the tail of the array by one (``np.insert`` inside the loop), into spare
capacity that doubles when full. Memory: 8 bytes a key of the array's live length."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numba import njit

from advisor.core.params import ParamSpec
from connectors.learned.base import DONE, STOPPED, WARM_OPS, CompiledRun, check_keys
from connectors.learned.timing import ticks

GROW = 2


@njit(cache=True)
def lower_bound(a, n, key):
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _loop(a, state, ops, keys, lengths, start, lat, t_begin, max_ticks):
    n = state[0]
    sink = 0
    for i in range(start, len(ops)):
        if max_ticks > 0 and (i & 1023) == 0 and i >= WARM_OPS:
            if (ticks() - t_begin) > i * max_ticks:
                state[0] = n
                return i, STOPPED
        op, k = ops[i], keys[i]
        if op == 1 and n == len(a):
            state[0] = n
            return i, GROW
        t0 = ticks()
        pos = lower_bound(a, n, k)
        if op == 0:
            if pos < n and a[pos] == k:
                state[1] += 1
        elif op == 1:
            if not (pos < n and a[pos] == k):
                for j in range(n, pos, -1):  # faster than numba's overlapping slice copy (which buffers)
                    a[j] = a[j - 1]
                a[pos] = k
                n += 1
        else:
            end = min(n, pos + lengths[i])
            for j in range(pos, end):
                sink += np.int64(a[j] & np.uint64(0xFFFFFFFF))
        lat[i] = ticks() - t0
    state[0] = n
    state[2] += sink
    return len(ops), DONE


class SortedArrayIndex(CompiledRun):
    def __init__(self, keys: np.ndarray):
        self.a = np.empty(max(16, len(keys) + len(keys) // 4), dtype=np.uint64)
        self.a[:len(keys)] = keys
        self.state = np.zeros(3, dtype=np.int64)  # live length, lookups found, range checksum
        self.state[0] = len(keys)

    @property
    def n(self) -> int:
        return int(self.state[0])

    def _loop(self, stream, start, lat, t_begin, max_ticks_per_op):
        return _loop(self.a, self.state, stream.ops, stream.keys, stream.lengths, start, lat, t_begin,
                     max_ticks_per_op)

    def _grow(self, status: int, memory_limit_bytes: int | None) -> str:
        bigger = np.empty(len(self.a) * 2, dtype=np.uint64)
        bigger[:self.n] = self.a[:self.n]
        self.a = bigger
        return ""

    def stats(self) -> dict[str, float]:
        return {"keys": float(self.n), "depth": 1.0, "nodes": 1.0, "leaves": 1.0,
                "mean_fill": self.n / len(self.a)}

    def memory_bytes(self) -> int:
        return 8 * self.n

    def set_params(self, params: Mapping[str, str]) -> None:
        if params:
            raise ValueError(f"the sorted array has no parameter {next(iter(params))!r}")

    def copy(self) -> SortedArrayIndex:
        return SortedArrayIndex(self.a[:self.n].copy())

    def contains(self, keys) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.uint64)
        pos = np.searchsorted(self.a[:self.n], keys)
        return (pos < self.n) & (self.a[np.minimum(pos, max(self.n - 1, 0))] == keys)

    def range(self, start: int, n: int) -> np.ndarray:
        pos = int(np.searchsorted(self.a[:self.n], np.uint64(start)))
        return self.a[pos:min(self.n, pos + n)].copy()


class SortedArrayEngine:
    """``sorted-array``: binary search over a sorted array (no parameters)."""

    name = "sorted-array"
    read_only = False

    def parameters(self) -> tuple[ParamSpec, ...]:
        return ()

    def build(self, keys: np.ndarray, params: Mapping[str, str]) -> SortedArrayIndex:
        index = SortedArrayIndex(check_keys(keys))
        index.set_params(params)
        return index
