"""Data nodes of the ALEX-like index (compiled): a gapped array with a linear model from key to slot.

- ``fit``: least squares of rank on key (every key, or a sample of about 128 with approximate model computation).
- ``place``: model-based bulk placement (each key at its predicted slot, or the next free one, leaving room for
  the rest); every gap then holds the key to its right, so a search is a plain exponential search.
- ``upper_bound``: exponential search from the predicted slot, then binary search (probes counted).
- ``insert``: the predicted slot when it lies in the right gap run, else a shift of the keys towards the nearest
  gap (shifts counted): the density decides how far that gap is.
- ``cost``: ALEX's cost model of a node built over some keys: 20 x expected search probes + 0.5 x expected shifts
  per insert x expected insert fraction (on a sample of every 8th key with approximate cost computation).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from connectors.learned.alex_pool import (BASE, CAP, CNT, EXPCOST, ICPT, ITERS, MAXK, MINK, NINS, NLEFT, NLOOK,
                                          NRIGHT, OFF, SHIFTS, SLOPE)

SEARCH_WEIGHT, SHIFT_WEIGHT = 20.0, 0.5


@njit(cache=True)
def keyx(k, base):
    """``k - base`` as a float, exact in uint64 first (keys near 2**64 keep their gaps)."""
    if k >= base:
        return float(k - base)
    return -float(base - k)


@njit(cache=True)
def fit(keys, lo, hi, approx):
    """(slope, intercept, base): rank ~ slope * (key - base) + intercept over keys[lo:hi]."""
    n = hi - lo
    if n <= 0:
        return 0.0, 0.0, np.uint64(0)
    base = keys[lo]
    if n == 1:
        return 0.0, 0.0, base
    step = max(1, n // 128) if approx else 1
    sx, sy, sxx, sxy, m = 0.0, 0.0, 0.0, 0.0, 0
    for j in range(lo, hi, step):
        x = keyx(keys[j], base)
        y = float(j - lo)
        sx += x
        sy += y
        sxx += x * x
        sxy += x * y
        m += 1
    if hi - 1 > lo and (hi - 1 - lo) % step != 0:  # the last key always counts
        x = keyx(keys[hi - 1], base)
        y = float(hi - 1 - lo)
        sx += x
        sy += y
        sxx += x * x
        sxy += x * y
        m += 1
    den = m * sxx - sx * sx
    if den <= 0.0:
        return 0.0, 0.0, base
    slope = (m * sxy - sx * sy) / den
    return slope, (sy - slope * sx) / m, base


@njit(cache=True)
def predict(slope, icpt, base, key, cap):
    p = slope * keyx(key, base) + icpt
    if p <= 0.0:
        return 0
    if p >= cap - 1:
        return cap - 1
    return int(p)


@njit(cache=True)
def cost(keys, lo, hi, cap, slope, icpt, base, sample, eif):
    """ALEX's expected cost of a node of ``cap`` slots over keys[lo:hi] placed with the model (slot units)."""
    n = hi - lo
    if n <= 0:
        return 0.0
    step = 8 if sample and n >= 64 else 1
    scap = max(1, cap // step)
    prev, run, runs2, probes, m = -1, 0, 0.0, 0.0, 0
    for j in range(lo, hi, step):
        p = predict(slope / step, icpt / step, base, keys[j], scap)
        pos = max(p, prev + 1)
        left = (hi - j + step - 1) // step
        pos = min(pos, scap - left) if scap >= left else prev + 1
        probes += 2.0 * math.log2(abs(pos - p) + 1.0) + 1.0
        if pos == prev + 1:
            run += 1
        else:
            runs2 += run * run
            run = 1
        prev = pos
        m += 1
    runs2 += run * run
    return SEARCH_WEIGHT * probes / m + SHIFT_WEIGHT * eif * runs2 / (4.0 * m)


@njit(cache=True)
def place(S, i, keys, lo, hi, slope, icpt, base):
    """Puts keys[lo:hi] into data node ``i`` (its region is empty) at the model's slots; sets its model."""
    NI, NF, NU, K, O, C, M, P = S
    off, cap = NI[i, OFF], NI[i, CAP]
    n = hi - lo
    prev = -1
    for j in range(lo, hi):
        p = predict(slope, icpt, base, keys[j], cap)
        pos = min(max(p, prev + 1), cap - (hi - j))
        K[off + pos] = keys[j]
        O[off + pos] = 1
        prev = pos
    nxt = np.uint64(2**64 - 1)
    for s in range(cap - 1, -1, -1):
        if O[off + s]:
            nxt = K[off + s]
        else:
            K[off + s] = nxt
    NF[i, SLOPE] = slope
    NF[i, ICPT] = icpt
    NU[i, BASE] = base
    NI[i, CNT] = n
    if n:
        NU[i, MINK] = keys[lo]
        NU[i, MAXK] = keys[hi - 1]
    NI[i, NINS] = 0
    NI[i, NLOOK] = 0
    NI[i, NRIGHT] = 0
    NI[i, NLEFT] = 0
    NF[i, ITERS] = 0.0
    NF[i, SHIFTS] = 0.0


@njit(cache=True)
def build(S, i, keys, lo, hi, cap, slope, icpt, base, retrain, side, maxd):
    """Fills data node ``i`` (a fresh region of ``cap`` slots) with keys[lo:hi]. ``retrain``: fit a new model;
    else the given model (already scaled). ``side`` 1 / -1: append-mostly to the right / left, so the keys take
    only ``n / maxd`` slots at the left / right end and the rest stays free for the appends."""
    NI, NF, NU, K, O, C, M, P = S
    n = hi - lo
    if retrain:
        slope, icpt, base = fit(keys, lo, hi, P[2] > 0.5)
        used = float(cap)
        if side != 0:
            used = min(float(cap), max(n / maxd, n + 1.0))
        scale = used / max(n, 1)
        slope *= scale
        icpt *= scale
        if side < 0:
            icpt += cap - used
    place(S, i, keys, lo, hi, slope, icpt, base)
    NF[i, EXPCOST] = cost(keys, lo, hi, cap, slope, icpt, base, P[3] > 0.5, P[0])


@njit(cache=True)
def upper_bound(K, off, cap, p, key):
    """(first slot in [0, cap] whose key is > key, probes), searching exponentially from slot ``p``."""
    probes = 1
    if K[off + p] <= key:
        b = 1
        while p + b < cap and K[off + p + b] <= key:
            b <<= 1
            probes += 1
        lo, hi = p + (b >> 1) + 1, min(p + b, cap)
    else:
        b = 1
        while p - b >= 0 and K[off + p - b] > key:
            b <<= 1
            probes += 1
        lo, hi = max(p - b + 1, 0), p - (b >> 1)
    while lo < hi:
        mid = (lo + hi) >> 1
        probes += 1
        if K[off + mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo, probes


@njit(cache=True)
def find(S, i, key):
    """Slot of ``key`` in data node ``i`` or -1 (counts the lookup's probes)."""
    NI, NF, NU, K, O, C, M, P = S
    off, cap = NI[i, OFF], NI[i, CAP]
    u, probes = upper_bound(K, off, cap, predict(NF[i, SLOPE], NF[i, ICPT], NU[i, BASE], key, cap), key)
    NF[i, ITERS] += probes
    NI[i, NLOOK] += 1
    if u > 0 and O[off + u - 1] and K[off + u - 1] == key:
        return u - 1
    return -1


@njit(cache=True)
def insert(S, i, key):
    """Inserts ``key`` into data node ``i`` (which has a free slot): returns the shifts, -1 when present, -2 (and
    nothing changed) when the node has no free slot after all."""
    NI, NF, NU, K, O, C, M, P = S
    off, cap = NI[i, OFF], NI[i, CAP]
    pred = predict(NF[i, SLOPE], NF[i, ICPT], NU[i, BASE], key, cap)
    u, probes = upper_bound(K, off, cap, pred, key)
    NF[i, ITERS] += probes
    if u > 0 and O[off + u - 1] and K[off + u - 1] == key:
        return -1
    shifts = 0
    if u < cap and O[off + u] == 0:  # a gap run starts at u: take the predicted slot if it lies in the run
        pos = u
        while pos < pred and pos + 1 < cap and O[off + pos + 1] == 0:
            pos += 1
        for s in range(u, pos):
            K[off + s] = key
        K[off + pos] = key
        O[off + pos] = 1
    else:  # shift towards the nearest gap (the bounds stop it at both ends of the node)
        r, ll = u, u - 1
        while r < cap or ll >= 0:
            if r < cap and O[off + r] == 0:
                for s in range(r, u, -1):
                    K[off + s] = K[off + s - 1]
                O[off + r] = 1
                K[off + u] = key
                shifts = r - u
                break
            if ll >= 0 and O[off + ll] == 0:
                for s in range(ll, u - 1):
                    K[off + s] = K[off + s + 1]
                O[off + ll] = 1
                K[off + u - 1] = key
                shifts = u - 1 - ll
                break
            r += 1
            ll -= 1
        else:
            return -2
    NF[i, SHIFTS] += shifts
    NI[i, NINS] += 1
    if NI[i, CNT] == 0 or key > NU[i, MAXK]:
        if NI[i, CNT] > 0:
            NI[i, NRIGHT] += 1
        NU[i, MAXK] = key
    if NI[i, CNT] == 0 or key < NU[i, MINK]:
        if NI[i, CNT] > 0:
            NI[i, NLEFT] += 1
        NU[i, MINK] = key
    NI[i, CNT] += 1
    return shifts


@njit(cache=True)
def extract(S, i):
    """The keys of data node ``i`` in order."""
    NI, NF, NU, K, O, C, M, P = S
    off, cap = NI[i, OFF], NI[i, CAP]
    out = np.empty(NI[i, CNT], np.uint64)
    j = 0
    for s in range(cap):
        if O[off + s]:
            out[j] = K[off + s]
            j += 1
    return out


@njit(cache=True)
def empirical_cost(S, i):
    """The node's cost as measured since it was built (same units as ``cost``)."""
    NI, NF, NU, K, O, C, M, P = S
    ops = NI[i, NINS] + NI[i, NLOOK]
    probes = NF[i, ITERS] / max(ops, 1)
    shifts = NF[i, SHIFTS] / max(NI[i, NINS], 1)
    return SEARCH_WEIGHT * probes + SHIFT_WEIGHT * P[0] * shifts, shifts
