"""The ALEX-like index as a whole (compiled): bulk load with fanout selection, root expansion for out-of-domain
keys, and the one loop that executes an ``OpStream`` (lookups, inserts, range scans in order, each timed).

Fanout selection (bulk load, per node): ``bottom-up`` prices every fanout 1 (one data node, when it fits in
max_node_size), 2, 4, ... up to max_node_size / 8 children (at most 2**16) with ALEX's cost model and takes the
cheapest; ``top-down`` doubles the fanout while the price falls and stops at the first rise; ``fixed`` uses a
data node when the keys fit in max_node_size, else fanout 16. Children of a model node take runs of its slots
(consecutive buckets merge while they hold at most 16 keys together). With expected_insert_frac 0 data nodes are
built full (no gaps), as ALEX does; otherwise at init_density.

Out-of-domain inserts (beyond the root's slots) go to the edge node; once ``should_expand_root`` says so, the root
doubles its fanout towards them (or, at max_node_size, a new root of fanout two goes above it) and the keys beyond
the old domain move from the edge data node into a new one (only when the edge child is a data node).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from connectors.learned import alex_node as dn
from connectors.learned import alex_split as sp
from connectors.learned.alex_pool import (CAP, CNT, LEAF, LEVEL, M_CTOP, M_FOUND, M_KEYS, M_KEYS_AT_RESIZE,
                                          M_NODES, M_OODHI, M_OODLO, M_ROOT, M_ROOT_EXPANSIONS, M_SINK, M_STUCK,
                                          MAX_DEPTH, MAX_RESTRUCTURES, NXT, OFF, P_EIF,
                                          P_FANOUT, P_INITD, P_MAXD, P_MAXSLOTS, P_MIND, PARENT, PHI, PLO, PRV, RSH,
                                          SHIFT, STUCK_CHAIN, STUCK_DEPTH, STUCK_NO_GAP, STUCK_RETRIES, has_room,
                                          new_node, new_region)
from connectors.learned.base import DONE, STOPPED, STUCK, WARM_OPS
from connectors.learned.timing import ticks

GROW = 2
MERGE = 16
MAX_BULK_FANOUT = 2**16


@njit(cache=True)
def leaf_density(P):
    return P[P_INITD] if P[P_EIF] > 0.0 else 1.0


@njit(cache=True)
def groups(keys, lo, hi, slope, icpt, base, f, g_slot, g_key):
    """Runs of slots of a model (fanout ``f``) over keys[lo:hi]: group g has slots [g_slot[g], g_slot[g+1]) and
    keys [g_key[g], g_key[g+1]); returns the number of groups."""
    g, j, cur = 0, lo, 0
    g_slot[0], g_key[0] = 0, lo
    for s in range(f):
        j1 = j
        while j1 < hi and (s == f - 1 or sp.raw_slot(slope, icpt, base, 0, 0, keys[j1]) <= s):
            j1 += 1
        nb = j1 - j
        if s > 0 and cur > 0 and nb > 0 and cur + nb > MERGE:
            g += 1
            g_slot[g], g_key[g] = s, j
            cur = 0
        cur += nb
        j = j1
    g += 1
    g_slot[g], g_key[g] = f, hi
    return g


@njit(cache=True)
def fanout_cost(S, keys, lo, hi, f, g_slot, g_key):
    """ALEX's cost per key of a model node of fanout ``f`` over keys[lo:hi], with its (model, groups)."""
    P = S[7]
    n = hi - lo
    s, c, b = dn.fit(keys, lo, hi, P[2] > 0.5)
    s, c = s * f / n, c * f / n
    ng = groups(keys, lo, hi, s, c, b, f, g_slot, g_key)
    d = leaf_density(P)
    total = 0.0
    for g in range(ng):
        a, z = g_key[g], g_key[g + 1]
        if z > a:
            cap = sp.cap_for(z - a, d)
            s2, c2, b2 = dn.fit(keys, a, z, P[2] > 0.5)
            total += (z - a) * dn.cost(keys, a, z, cap, s2 * cap / (z - a), c2 * cap / (z - a), b2, P[3] > 0.5,
                                       P[0])
            if cap > P[P_MAXSLOTS]:
                total += dn.SEARCH_WEIGHT * (z - a)
    return dn.SEARCH_WEIGHT + total / n + 5e-7 * 8.0 * f, s, c, b


@njit(cache=True)
def choose(S, keys, lo, hi, g_slot, g_key):
    """(fanout, slope, intercept, base) for a node over keys[lo:hi]: fanout 1 is a data node."""
    P = S[7]
    n = hi - lo
    if n == 0:
        return 1, 0.0, 0.0, np.uint64(0)
    d = leaf_density(P)
    fits = sp.cap_for(n, d) <= P[P_MAXSLOTS] or n <= MERGE
    maxf = 2
    while maxf * 2 <= min(P[P_MAXSLOTS], MAX_BULK_FANOUT):
        maxf *= 2
    if P[P_FANOUT] > 1.5:
        f = 1 if fits else min(16, maxf)
        if f == 1:
            return 1, 0.0, 0.0, np.uint64(0)
        c, s, ic, b = fanout_cost(S, keys, lo, hi, f, g_slot, g_key)
        return f, s, ic, b
    best, bf, bs, bc, bb = np.inf, 1, 0.0, 0.0, np.uint64(0)
    if fits:
        s, c, b = dn.fit(keys, lo, hi, P[2] > 0.5)
        cap = sp.cap_for(n, d)
        best = dn.cost(keys, lo, hi, cap, s * cap / n, c * cap / n, b, P[3] > 0.5, P[0])
    f = 2
    while f <= maxf and f <= max(2, n):
        c, s, ic, b = fanout_cost(S, keys, lo, hi, f, g_slot, g_key)
        if c < best:
            best, bf, bs, bc, bb = c, f, s, ic, b
        elif P[P_FANOUT] > 0.5:
            break
        f *= 2
    return bf, bs, bc, bb


@njit(cache=True)
def bulk_load(S, keys):
    """Builds the index over sorted unique ``keys``; False when the pools are too small (nothing usable then)."""
    NI, NF, NU, K, O, C, M, P = S
    n = len(keys)
    stack = np.empty((n + 4096, 7), np.int64)
    stack[0] = (-1, 0, 1, 0, n, 0, -1)
    sp_top, last = 1, -1
    g_slot = np.empty(MAX_BULK_FANOUT + 2, np.int64)
    g_key = np.empty(MAX_BULK_FANOUT + 2, np.int64)
    while sp_top > 0:
        sp_top -= 1
        par, slo, shi, lo, hi, level, above = stack[sp_top]
        m = hi - lo
        f, s, c, b = (1, 0.0, 0.0, np.uint64(0)) if m == above else choose(S, keys, lo, hi, g_slot, g_key)
        if not has_room(S, sp.cap_for(m, leaf_density(P)) + 64, f + 64, 2):
            return False
        if f == 1:
            leaf = new_node(S, 1, sp.cap_for(m, leaf_density(P)))
            dn.build(S, leaf, keys, lo, hi, NI[leaf, CAP], 0.0, 0.0, np.uint64(0), True, 0, P[P_MAXD])
            sp.attach(S, par, leaf, slo, shi, level)
            if last >= 0:
                NI[last, NXT] = leaf
                NI[leaf, PRV] = last
            last = leaf
            continue
        node = new_node(S, 0, f)
        NF[node, 0], NF[node, 1], NU[node, 0] = s, c, b
        sp.attach(S, par, node, slo, shi, level)
        ng = groups(keys, lo, hi, s, c, b, f, g_slot, g_key)  # at most m + 1 groups: the stack holds them
        for g in range(ng - 1, -1, -1):
            stack[sp_top] = (node, g_slot[g], g_slot[g + 1], g_key[g], g_key[g + 1], level + 1, m)
            sp_top += 1
    M[M_KEYS] = n
    M[M_KEYS_AT_RESIZE] = n
    return True


@njit(cache=True)
def descend(S, key):
    """The data node of ``key``; -1 (and ``M_STUCK`` set) past ``MAX_DEPTH`` model nodes."""
    NI, C = S[0], S[5]
    i = S[6][M_ROOT]
    for _ in range(MAX_DEPTH):
        if NI[i, LEAF]:
            return i
        i = C[NI[i, OFF] + sp.route(S, i, key)]
    if NI[i, LEAF]:
        return i
    S[6][M_STUCK] = STUCK_DEPTH
    return -1


@njit(cache=True)
def expand_root(S, side):
    """Grows the root's key domain towards ``side`` (1 right, -1 left); see the module docstring."""
    NI, NF, NU, K, O, C, M, P = S
    r = M[M_ROOT]
    f, off = NI[r, CAP], NI[r, OFF]
    e = C[off + f - 1] if side > 0 else C[off]
    keys = dn.extract(S, e)
    aside = sp.append_side(S, e)
    if 2 * f <= P[P_MAXSLOTS]:
        old = C[off:off + f].copy()
        NI[r, OFF], NI[r, CAP] = M[M_CTOP], 2 * f
        M[M_CTOP] += 2 * f
        noff = NI[r, OFF]
        base_slot = 0 if side > 0 else f
        C[noff + base_slot:noff + base_slot + f] = old
        if side < 0:
            NI[r, SHIFT] += f << NI[r, RSH]
            for s in range(f):
                if s == 0 or old[s] != old[s - 1]:
                    NI[old[s], PLO] += f
                    NI[old[s], PHI] += f
        top, new_lo, new_hi, level = r, (f if side > 0 else 0), (2 * f if side > 0 else f), NI[e, LEVEL]
    else:
        top = new_node(S, 0, 2)
        sp.copy_model(S, r, top)
        NI[top, RSH] = NI[r, RSH] + int(round(math.log2(f)))
        if side < 0:
            NI[top, SHIFT] = NI[r, SHIFT] + (f << NI[r, RSH])
        sp.attach(S, -1, top, 0, 1, 0)
        sp.deepen(S, top)
        sp.attach(S, top, r, (0 if side > 0 else 1), (1 if side > 0 else 2), 1)
        new_lo, new_hi, level = (1 if side > 0 else 0), (2 if side > 0 else 1), NI[e, LEVEL]
    j = 0  # keys[:j] route left of the new slots
    while j < len(keys) and sp.route(S, top, keys[j]) < (new_lo if side > 0 else new_hi):
        j += 1
    stay_lo, stay_hi, go_lo, go_hi = (0, j, j, len(keys)) if side > 0 else (j, len(keys), 0, j)
    new_region(S, e, sp.cap_for(stay_hi - stay_lo, P[P_INITD]))
    dn.build(S, e, keys, stay_lo, stay_hi, NI[e, CAP], 0.0, 0.0, np.uint64(0), True, 0, P[P_MAXD])
    nn = sp.leaf_from(S, keys, go_lo, go_hi, P[P_INITD], aside)
    sp.attach(S, top, nn, new_lo, new_hi, level)
    if side > 0:
        sp.relink(S, e, e, e, nn)
        NI[e, NXT], NI[nn, PRV] = nn, e
    else:
        sp.relink(S, e, e, nn, e)
        NI[nn, NXT], NI[e, PRV] = e, nn
    M[M_OODHI], M[M_OODLO] = 0, 0
    M[M_KEYS_AT_RESIZE] = M[M_KEYS]
    M[M_ROOT_EXPANSIONS] += 1


@njit(cache=True)
def insert(S, key):
    """Inserts ``key`` (a no-op when present): DONE, GROW before any change when the pools lack room, or STUCK
    (``M_STUCK`` says why) when ``MAX_RESTRUCTURES`` structure changes left no room for the key."""
    NI, NF, NU, K, O, C, M, P = S
    counted = False
    for _ in range(MAX_RESTRUCTURES):
        leaf = descend(S, key)
        if leaf < 0:
            return STUCK
        root = M[M_ROOT]
        par = NI[leaf, PARENT]
        fan = max(NI[par, CAP] if par >= 0 else 0, NI[root, CAP] if NI[root, LEAF] == 0 else 0)
        if not has_room(S, int(2 * (NI[leaf, CNT] + 1) / P[P_MIND]) + 2048, 4 * fan + 512, 96):
            return GROW
        if NI[root, LEAF] == 0 and not counted:
            v = sp.route_raw(S, root, key)
            f = NI[root, CAP]
            if v >= f or v < 0:
                counted = True
                side = 1 if v >= f else -1
                col = M_OODHI if side > 0 else M_OODLO
                M[col] += 1
                edge = C[NI[root, OFF] + (f - 1 if side > 0 else 0)]
                if NI[edge, LEAF] and sp.should_expand_root(S, M[col]):
                    expand_root(S, side)
                    continue
        if NI[leaf, CNT] + 1 > P[P_MAXD] * NI[leaf, CAP]:
            sp.handle_full(S, leaf)
            continue
        got = dn.insert(S, leaf, key)
        if got == -2:
            M[M_STUCK] = STUCK_NO_GAP
            return STUCK
        if got >= 0:
            M[M_KEYS] += 1
        return DONE
    M[M_STUCK] = STUCK_RETRIES
    return STUCK


@njit(cache=True)
def lower_slot(S, leaf, key):
    NI, NF, NU, K = S[0], S[1], S[2], S[3]
    if key == 0:
        return 0
    cap = NI[leaf, CAP]
    p = dn.predict(NF[leaf, 0], NF[leaf, 1], NU[leaf, 0], key - np.uint64(1), cap)
    return dn.upper_bound(K, NI[leaf, OFF], cap, p, key - np.uint64(1))[0]


@njit(cache=True)
def scan(S, key, n, out):
    """Up to ``n`` keys >= ``key`` in order (into ``out`` when it is long enough): (count, checksum)."""
    NI, K, O = S[0], S[3], S[4]
    leaf = descend(S, key)
    if leaf < 0:
        return 0, 0
    s = lower_slot(S, leaf, key)
    got, sink, hops = 0, 0, 0
    while leaf >= 0 and got < n:
        hops += 1
        if hops > S[6][M_NODES]:  # more leaves than nodes: the leaf chain has a cycle
            S[6][M_STUCK] = STUCK_CHAIN
            return got, sink
        off, cap = NI[leaf, OFF], NI[leaf, CAP]
        while s < cap and got < n:
            if O[off + s]:
                if got < len(out):
                    out[got] = K[off + s]
                sink += np.int64(K[off + s] & np.uint64(0xFFFFFFFF))
                got += 1
            s += 1
        leaf, s = NI[leaf, NXT], 0
    return got, sink


@njit(cache=True)
def run_loop(S, ops, keys, lengths, start, lat, t_begin, max_ticks):
    M = S[6]
    none = np.empty(0, np.uint64)
    for i in range(start, len(ops)):
        if max_ticks > 0 and (i & 1023) == 0 and i >= WARM_OPS and (ticks() - t_begin) > i * max_ticks:
            return i, STOPPED
        op, k = ops[i], keys[i]
        t0 = ticks()
        if op == 0:
            leaf = descend(S, k)
            if leaf < 0:
                return i, STUCK
            if dn.find(S, leaf, k) >= 0:
                M[M_FOUND] += 1
        elif op == 1:
            status = insert(S, k)
            if status != DONE:
                return i, status
        else:
            M[M_SINK] += scan(S, k, lengths[i], none)[1]
            if M[M_STUCK]:
                return i, STUCK
        lat[i] = ticks() - t0
    return len(ops), DONE


@njit(cache=True)
def contains(S, keys, out):
    NI, K, O = S[0], S[3], S[4]
    for j in range(len(keys)):
        leaf = descend(S, keys[j])
        if leaf < 0:
            out[j] = False
            continue
        off, cap = NI[leaf, OFF], NI[leaf, CAP]
        p = dn.predict(S[1][leaf, 0], S[1][leaf, 1], S[2][leaf, 0], keys[j], cap)
        u = dn.upper_bound(K, off, cap, p, keys[j])[0]
        out[j] = u > 0 and O[off + u - 1] == 1 and K[off + u - 1] == keys[j]
