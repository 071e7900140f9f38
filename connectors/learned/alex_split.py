"""Structure changes of the ALEX-like index (compiled): routing through model nodes, and what happens when a data
node is full (expand, retrain, split) or keys arrive beyond the root's key domain (root expansion).

Model nodes route exactly: ``r = floor(slope * (key - base) + intercept)``, child slot ``(r + SHIFT) >> RSH``
clamped to the fanout. Doubling a fanout, halving a node and growing the root change only ``SHIFT``/``RSH`` or scale
the model by two, so every stored key keeps its route bit for bit.

A full data node (keys > max_density x slots): when it would outgrow max_node_size, or its measured cost strays
from the expected one (1.5x, or over 100 shifts an insert), the splitting policy decides: ``always-two`` splits in
two; ``decide`` compares expanding-and-retraining with splitting in two by ALEX's cost model; ``fanout-tree``
compares fanouts 1, 2, 4, ... 64. Otherwise it expands to ``n / init_density`` slots, scaling its model (no
retrain). Append-mostly nodes (a share of inserts beyond their ends above append_mostly_threshold) keep their
keys packed at one end when they expand. A split goes sideways when the parent gives the node two slots or more
(the parent doubles its fanout first when it can, within max_node_size), else — with allow_splitting_upwards and
a full root — the root halves under a new root first; else it goes downwards (a new model node). New nodes of a
split start at min_density (they sit where the inserts go).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from connectors.learned import alex_node as dn
from connectors.learned.alex_pool import (ALIVE, BASE, CAP, EXPCOST, ICPT, LEVEL, M_CTOP, M_EXPANSIONS, M_KEYS,
                                          M_KEYS_AT_RESIZE, M_NODES, M_RETRAINS, M_ROOT, M_SPLITS, M_SPLITS_DOWN,
                                          M_SPLITS_UP, NINS, NLEFT, NRIGHT, NXT, OFF, P_APPEND, P_INITD, P_MAX_OOD,
                                          P_MAXD, P_MAXSLOTS, P_MIN_OOD, P_MIND, P_OOD_TOL, P_SPLIT, P_SPLIT_UP,
                                          PARENT, PHI, PLO, PRV, RSH, SHIFT, SLOPE, new_node, new_region)

BIG = 2.0**60


@njit(cache=True)
def raw_slot(slope, icpt, base, shift, rsh, key):
    x = min(max(slope * dn.keyx(key, base) + icpt, -BIG), BIG)
    return (np.int64(math.floor(x)) + shift) >> rsh


@njit(cache=True)
def route_raw(S, m, key):
    """The unclamped child slot of ``key`` in model node ``m`` (< 0 or >= fanout: beyond its key domain)."""
    NI, NF, NU = S[0], S[1], S[2]
    return raw_slot(NF[m, SLOPE], NF[m, ICPT], NU[m, BASE], NI[m, SHIFT], NI[m, RSH], key)


@njit(cache=True)
def route(S, m, key):
    v = route_raw(S, m, key)
    f = S[0][m, CAP]
    return 0 if v < 0 else (f - 1 if v >= f else v)


@njit(cache=True)
def cap_for(n, density):
    return max(8, int(math.ceil(n / density)) + 1)


@njit(cache=True)
def attach(S, parent, node, lo, hi, level):
    """``node`` takes child slots [lo, hi) of ``parent`` (or becomes the root when parent < 0)."""
    NI, NF, NU, K, O, C, M, P = S
    NI[node, PARENT] = parent
    NI[node, PLO] = lo
    NI[node, PHI] = hi
    NI[node, LEVEL] = level
    if parent < 0:
        M[M_ROOT] = node
    else:
        off = NI[parent, OFF]
        C[off + lo:off + hi] = node


@njit(cache=True)
def relink(S, old_first, old_last, new_first, new_last):
    """Puts the leaves new_first..new_last (already linked among themselves) where old_first..old_last were."""
    NI = S[0]
    p, q = NI[old_first, PRV], NI[old_last, NXT]
    NI[new_first, PRV] = p
    NI[new_last, NXT] = q
    if p >= 0:
        NI[p, NXT] = new_first
    if q >= 0:
        NI[q, PRV] = new_last


@njit(cache=True)
def leaf_from(S, keys, lo, hi, density, side):
    i = new_node(S, 1, cap_for(hi - lo, density))
    dn.build(S, i, keys, lo, hi, S[0][i, CAP], 0.0, 0.0, np.uint64(0), True, side, S[7][P_MAXD])
    return i


@njit(cache=True)
def append_side(S, i):
    NI, P = S[0], S[7]
    if NI[i, NINS] < 16:
        return 0
    if NI[i, NRIGHT] >= P[P_APPEND] * NI[i, NINS]:
        return 1
    if NI[i, NLEFT] >= P[P_APPEND] * NI[i, NINS]:
        return -1
    return 0


@njit(cache=True)
def expand(S, i, keys, retrain):
    """Data node ``i`` over ``keys`` in a bigger region (n / init_density slots)."""
    NI, NF, NU, K, O, C, M, P = S
    n, old = len(keys), NI[i, CAP]
    cap = max(cap_for(n, P[P_INITD]), old + 1)
    side = append_side(S, i)
    scale = cap / old
    slope, icpt, base = NF[i, SLOPE] * scale, NF[i, ICPT] * scale, NU[i, BASE]
    new_region(S, i, cap)
    dn.build(S, i, keys, 0, n, cap, slope, icpt, base, retrain or side != 0, side, P[P_MAXD])
    M[M_EXPANSIONS] += 1
    if retrain or side != 0:
        M[M_RETRAINS] += 1


@njit(cache=True)
def split_cost(S, keys, f):
    """Cost per key of ``keys`` split into ``f`` data nodes of equal key ranks (f == 1: one retrained node)."""
    P = S[7]
    n = len(keys)
    density = P[P_INITD] if f == 1 else P[P_MIND]
    total = 0.0
    for j in range(f):
        lo, hi = j * n // f, (j + 1) * n // f
        if hi > lo:
            cap = cap_for(hi - lo, density)
            s, c, b = dn.fit(keys, lo, hi, P[2] > 0.5)
            scale = cap / (hi - lo)
            total += (hi - lo) * dn.cost(keys, lo, hi, cap, s * scale, c * scale, b, P[3] > 0.5, P[0])
    return total / max(n, 1)


@njit(cache=True)
def double(S, m):
    """Model node ``m`` with twice the fanout; every key keeps its child."""
    NI, NF, NU, K, O, C, M, P = S
    f, off = NI[m, CAP], NI[m, OFF]
    old = C[off:off + f].copy()
    NI[m, OFF] = M[M_CTOP]
    NI[m, CAP] = 2 * f
    M[M_CTOP] += 2 * f
    noff = NI[m, OFF]
    for s in range(f):
        C[noff + 2 * s] = old[s]
        C[noff + 2 * s + 1] = old[s]
        if s == 0 or old[s] != old[s - 1]:
            NI[old[s], PLO] *= 2
            NI[old[s], PHI] *= 2
    if NI[m, RSH] > 0:
        NI[m, RSH] -= 1
    else:
        NF[m, SLOPE] *= 2.0
        NF[m, ICPT] *= 2.0
        NI[m, SHIFT] *= 2


@njit(cache=True)
def copy_model(S, src, dst):
    NI, NF, NU = S[0], S[1], S[2]
    NF[dst, SLOPE] = NF[src, SLOPE]
    NF[dst, ICPT] = NF[src, ICPT]
    NU[dst, BASE] = NU[src, BASE]
    NI[dst, SHIFT] = NI[src, SHIFT]
    NI[dst, RSH] = NI[src, RSH]


@njit(cache=True)
def deepen(S, top):
    """A new root ``top`` went above the old one: every other live node is one level deeper."""
    NI, M = S[0], S[6]
    for i in range(M[M_NODES]):
        if NI[i, ALIVE] and i != top:
            NI[i, LEVEL] += 1


@njit(cache=True)
def halves_cleanly(S, r):
    """True when no child of model node ``r`` spans both halves of its slots (``split_root_up`` would give such a
    child two parents and slots outside the new node's region)."""
    NI, C = S[0], S[5]
    h, off = NI[r, CAP] // 2, NI[r, OFF]
    return C[off + h - 1] != C[off + h]


@njit(cache=True)
def split_root_up(S):
    """The full root halves (no child spans both halves: ``halves_cleanly``): its left half keeps the node, the
    right half is a new node, a new root of fanout two goes above both."""
    NI, NF, NU, K, O, C, M, P = S
    r = M[M_ROOT]
    f, off = NI[r, CAP], NI[r, OFF]
    h = f // 2
    right = new_node(S, 0, h)
    copy_model(S, r, right)
    NI[right, SHIFT] -= h << NI[r, RSH]
    roff = NI[right, OFF]
    for s in range(h):
        child = C[off + h + s]
        C[roff + s] = child
        NI[child, PARENT] = right
        if s == 0 or child != C[off + h + s - 1]:
            NI[child, PLO] -= h
            NI[child, PHI] -= h
    NI[r, CAP] = h
    top = new_node(S, 0, 2)
    copy_model(S, r, top)
    NI[top, RSH] = NI[r, RSH] + int(round(math.log2(h)))
    attach(S, -1, top, 0, 1, 0)
    deepen(S, top)
    attach(S, top, r, 0, 1, 1)
    attach(S, top, right, 1, 2, 1)
    M[M_SPLITS_UP] += 1


@njit(cache=True)
def sideways(S, i, keys, f):
    """Data node ``i`` (two parent slots or more) becomes ``f`` data nodes over its slots, split evenly."""
    NI, NF, NU, K, O, C, M, P = S
    par, a, b = NI[i, PARENT], NI[i, PLO], NI[i, PHI]
    span = b - a
    f = min(f, span)
    j0, first, prev = 0, -1, -1
    for g in range(f):
        s_hi = a + (g + 1) * span // f
        j1 = j0
        while j1 < len(keys) and (g == f - 1 or route(S, par, keys[j1]) < s_hi):
            j1 += 1
        node = leaf_from(S, keys, j0, j1, P[P_MIND], 0)
        attach(S, par, node, a + g * span // f, s_hi, NI[i, LEVEL])
        if prev >= 0:
            NI[prev, NXT] = node
            NI[node, PRV] = prev
        else:
            first = node
        prev, j0 = node, j1
    relink(S, i, i, first, prev)
    NI[i, ALIVE] = 0


@njit(cache=True)
def downward(S, i, keys, f):
    """Data node ``i`` becomes a model node of fanout ``f`` over ``f`` new data nodes."""
    NI, NF, NU, K, O, C, M, P = S
    n = len(keys)
    m = new_node(S, 0, f)
    s, c, b = dn.fit(keys, 0, n, P[2] > 0.5)
    NF[m, SLOPE] = s * f / n
    NF[m, ICPT] = c * f / n
    NU[m, BASE] = b
    attach(S, NI[i, PARENT], m, NI[i, PLO], NI[i, PHI], NI[i, LEVEL])
    j0, first, prev = 0, -1, -1
    for g in range(f):
        j1 = j0
        while j1 < n and (g == f - 1 or route(S, m, keys[j1]) <= g):
            j1 += 1
        node = leaf_from(S, keys, j0, j1, P[P_MIND], 0)
        attach(S, m, node, g, g + 1, NI[i, LEVEL] + 1)
        if prev >= 0:
            NI[prev, NXT] = node
            NI[node, PRV] = prev
        else:
            first = node
        prev, j0 = node, j1
    relink(S, i, i, first, prev)
    NI[i, ALIVE] = 0


@njit(cache=True)
def handle_full(S, i):
    """Makes room in full data node ``i``: expand (scale or retrain) or split, as the parameters say."""
    NI, NF, NU, K, O, C, M, P = S
    keys = dn.extract(S, i)
    n = len(keys)
    must_split = cap_for(n + 1, P[P_INITD]) > P[P_MAXSLOTS]
    emp, shifts = dn.empirical_cost(S, i)
    deviates = NI[i, NINS] >= 16 and (emp > 1.5 * NF[i, EXPCOST] or shifts > 100.0)
    if not must_split and not deviates:
        expand(S, i, keys, False)
        return
    f = 2
    if P[P_SPLIT] > 0.5:
        best = np.inf if must_split else split_cost(S, keys, 1)
        f = 1
        top = 2 if P[P_SPLIT] < 1.5 else 64
        g = 2
        while g <= top and g <= n:
            c = split_cost(S, keys, g)
            if c < best:
                best, f = c, g
            g *= 2
        if f == 1 and must_split:
            f = 2
    if f == 1:
        expand(S, i, keys, True)
        return
    M[M_SPLITS] += 1
    par = NI[i, PARENT]
    if par >= 0 and NI[i, PHI] - NI[i, PLO] < 2:
        if 2 * NI[par, CAP] <= P[P_MAXSLOTS]:
            double(S, par)
        elif P[P_SPLIT_UP] > 0.5 and par == M[M_ROOT] and NI[par, CAP] >= 4 and halves_cleanly(S, par):
            split_root_up(S)
            double(S, NI[i, PARENT])
    if par >= 0 and NI[i, PHI] - NI[i, PLO] >= 2:
        sideways(S, i, keys, f)
    else:
        M[M_SPLITS_DOWN] += 1
        downward(S, i, keys, f)


@njit(cache=True)
def should_expand_root(S, ood):
    """out-of-domain inserts on one side: at least max_out_of_domain_keys, or at least min_out_of_domain_keys
    and out_of_domain_tolerance x (keys added since the last domain resize) / root fanout."""
    NI, P, M = S[0], S[7], S[6]
    grown = M[M_KEYS] - M[M_KEYS_AT_RESIZE]
    f = NI[M[M_ROOT], CAP]
    return ood >= P[P_MAX_OOD] or (ood >= P[P_MIN_OOD] and ood * f >= P[P_OOD_TOL] * max(grown, 1))
