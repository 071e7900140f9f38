"""The ALEX-like index's memory: a struct-of-arrays node pool and two slabs, all flat numpy arrays that the compiled
code (``alex_node``, ``alex_tree``) takes as one tuple ``S = (NI, NF, NU, K, O, C, M, P)``:

- ``NI`` int64[nodes, NI_W], ``NF`` float64[nodes, NF_W], ``NU`` uint64[nodes, NU_W]: one row per node (columns
  below). A data node owns ``CAP`` slots of the key slab ``K`` (uint64, gaps hold the next key to their right,
  trailing gaps ``GAP``) and the occupancy slab ``O`` (uint8) from ``OFF``; a model node owns ``CAP`` (its fanout, a
  power of two) child ids in the child slab ``C`` from ``OFF``.
- ``M`` int64 counters (root, pool tops, key count, out-of-domain counts, expansions, splits, ...) and the growth a
  loop asked for; ``P`` float64 parameters (indexes ``P_*``, written by ``connectors.learned.alex``).

Slabs are bump-allocated; a node that grows gets a new region and its old one is dead until ``compact`` copies the
live regions into bigger slabs (the Python side calls it when a loop returns ``GROW``). ``memory_bytes`` counts
live structure only: a data node 8 bytes a slot plus a bit a slot (ALEX's bitmap) plus a 64-byte header, a model
node 8 bytes a child plus the header.

numba caches compiled code per function keyed on that function's own source file: after changing a constant here,
delete ``connectors/learned/__pycache__/*.nbi`` and ``*.nbc``, or the other modules keep the old values.
"""

from __future__ import annotations

import numpy as np
from numba import njit

GAP = np.uint64(2**64 - 1)
# NI columns (what a lookup reads first, in the first 64 bytes of a row; rows are whole cache lines)
LEAF, OFF, CAP, SHIFT, RSH, CNT, NLOOK, PARENT, PLO, PHI, NXT, PRV, NINS, NRIGHT, NLEFT, LEVEL, ALIVE = range(17)
NI_W = 24
# NF columns: the linear model (data node: key -> slot; model node: key -> r, see alex_tree.route), the
# empirical search iterations and shifts since the node was (re)built, its expected cost at that time
SLOPE, ICPT, ITERS, SHIFTS, EXPCOST = range(5)
NF_W = 8
# NU columns: the model's base key (models take key - BASE), the data node's smallest and largest key
BASE, MINK, MAXK = range(3)
NU_W = 4
# M counters
(M_ROOT, M_NODES, M_KTOP, M_CTOP, M_KEYS, M_OODHI, M_OODLO, M_KEYS_AT_RESIZE, M_EXPANSIONS, M_SPLITS, M_RETRAINS,
 M_ROOT_EXPANSIONS, M_FOUND, M_SINK, M_SPLITS_UP, M_SPLITS_DOWN, M_NEED_K, M_NEED_C, M_NEED_N, M_STUCK) = range(20)
M_W = 24
# why a compiled loop stopped making progress (M[M_STUCK]; the loop then returns ``base.STUCK``)
STUCK_RETRIES, STUCK_NO_GAP, STUCK_DEPTH, STUCK_CHAIN = 1, 2, 3, 4
STUCK_WHY = {STUCK_RETRIES: "an insert restructured its data node {n} times and still found it full",
             STUCK_NO_GAP: "a data node had no free slot for an insert",
             STUCK_DEPTH: "a descent passed more than {d} model nodes",
             STUCK_CHAIN: "a range scan walked more leaves than the index has"}
MAX_DEPTH = 64  # model nodes a descent may pass
MAX_RESTRUCTURES = 32  # structure changes one insert may make before its key goes in
POOL_CAP_BYTES = 2 << 30  # the pools never grow past this (nor past a run's memory limit)
# P parameters
(P_EIF, P_MAXSLOTS, P_APPROX_MODEL, P_APPROX_COST, P_FANOUT, P_SPLIT, P_SPLIT_UP, P_MIN_OOD, P_MAX_OOD, P_OOD_TOL,
 P_MAXD, P_INITD, P_MIND, P_APPEND) = range(14)
P_W = 16
HEADER_BYTES = 64


def pool_sizes(n_keys: int, params: np.ndarray) -> tuple[int, int, int]:
    """(nodes, key slots, child slots) of the pools for a bulk load of ``n_keys`` keys under ``params``."""
    return 64 + n_keys // 8, int(n_keys / max(params[P_MIND], 0.05)) * 2 + 4096, 1024 + n_keys // 4


def pool_bytes(nodes: int, kslots: int, cslots: int) -> int:
    """Bytes of pools of that many nodes, key slots and child slots."""
    return nodes * 8 * (NI_W + NF_W + NU_W) + 9 * kslots + 8 * cslots


def new_pool(n_keys: int, params: np.ndarray):
    """Empty pools sized for a bulk load of ``n_keys`` keys under ``params``."""
    nodes, kslots, cslots = pool_sizes(n_keys, params)
    return (np.zeros((nodes, NI_W), np.int64), np.zeros((nodes, NF_W), np.float64),
            np.zeros((nodes, NU_W), np.uint64), np.full(kslots, GAP, np.uint64), np.zeros(kslots, np.uint8),
            np.zeros(cslots, np.int64), np.zeros(M_W, np.int64), params.astype(np.float64).copy())


@njit(cache=True)
def has_room(S, kslots, cslots, nodes):
    """True when the pools hold ``kslots`` key slots, ``cslots`` child slots and ``nodes`` nodes more; otherwise
    records the need in ``M`` and returns False (the caller returns ``GROW``)."""
    NI, NF, NU, K, O, C, M, P = S
    if M[M_KTOP] + kslots <= len(K) and M[M_CTOP] + cslots <= len(C) and M[M_NODES] + nodes <= NI.shape[0]:
        return True
    M[M_NEED_K] = kslots
    M[M_NEED_C] = cslots
    M[M_NEED_N] = nodes
    return False


@njit(cache=True)
def new_node(S, leaf, cap):
    """A fresh node id with ``cap`` slots of the key slab (data node) or child slab (model node)."""
    NI, NF, NU, K, O, C, M, P = S
    i = M[M_NODES]
    M[M_NODES] += 1
    NI[i, :] = 0
    NF[i, :] = 0.0
    NU[i, :] = 0
    NI[i, LEAF] = leaf
    NI[i, CAP] = cap
    NI[i, ALIVE] = 1
    NI[i, PARENT] = -1
    NI[i, NXT] = -1
    NI[i, PRV] = -1
    if leaf:
        NI[i, OFF] = M[M_KTOP]
        M[M_KTOP] += cap
        K[NI[i, OFF]:NI[i, OFF] + cap] = GAP
        O[NI[i, OFF]:NI[i, OFF] + cap] = 0
    else:
        NI[i, OFF] = M[M_CTOP]
        M[M_CTOP] += cap
    return i


@njit(cache=True)
def new_region(S, i, cap):
    """Gives data node ``i`` a fresh key region of ``cap`` slots (its old region becomes dead)."""
    NI, NF, NU, K, O, C, M, P = S
    NI[i, OFF] = M[M_KTOP]
    NI[i, CAP] = cap
    M[M_KTOP] += cap
    K[NI[i, OFF]:NI[i, OFF] + cap] = GAP
    O[NI[i, OFF]:NI[i, OFF] + cap] = 0


@njit(cache=True)
def compact(S, T):
    """Copies the live nodes of pools ``S`` into the (bigger, empty) pools ``T``: node rows keep their ids, slab
    regions are packed."""
    NI, NF, NU, K, O, C, M, P = S
    NI2, NF2, NU2, K2, O2, C2, M2, P2 = T
    n = M[M_NODES]
    NI2[:n] = NI[:n]
    NF2[:n] = NF[:n]
    NU2[:n] = NU[:n]
    M2[:] = M[:]
    P2[:] = P[:]
    kt, ct = 0, 0
    for i in range(n):
        if NI[i, ALIVE] == 0:
            continue
        off, cap = NI[i, OFF], NI[i, CAP]
        if NI[i, LEAF]:
            K2[kt:kt + cap] = K[off:off + cap]
            O2[kt:kt + cap] = O[off:off + cap]
            NI2[i, OFF] = kt
            kt += cap
        else:
            C2[ct:ct + cap] = C[off:off + cap]
            NI2[i, OFF] = ct
            ct += cap
    M2[M_KTOP] = kt
    M2[M_CTOP] = ct


@njit(cache=True)
def live_sizes(S):
    """(key slots, child slots, bytes) of the live structure."""
    NI, NF, NU, K, O, C, M, P = S
    ks, cs, total = 0, 0, 0
    for i in range(M[M_NODES]):
        if NI[i, ALIVE] == 0:
            continue
        cap = NI[i, CAP]
        if NI[i, LEAF]:
            ks += cap
            total += HEADER_BYTES + 8 * cap + (cap + 7) // 8
        else:
            cs += cap
            total += HEADER_BYTES + 8 * cap
    return ks, cs, total


@njit(cache=True)
def structure_stats(S, out):
    """Fills ``out`` float64[12]: depth (deepest leaf level + 1), mean leaf depth weighted by keys, nodes,
    leaves, model nodes, mean fill (keys / data slots), mean model fanout, mean search iterations and shifts per
    operation since the leaves were (re)built, largest leaf (keys), mean leaf (keys), empty leaves."""
    NI, NF, NU, K, O, C, M, P = S
    depth, wdepth, nodes, leaves, models, keys, slots, fan = 0, 0.0, 0, 0, 0, 0, 0, 0
    iters, shifts, ops, biggest, empty = 0.0, 0.0, 0, 0, 0
    for i in range(M[M_NODES]):
        if NI[i, ALIVE] == 0:
            continue
        nodes += 1
        if NI[i, LEAF]:
            leaves += 1
            depth = max(depth, NI[i, LEVEL] + 1)
            wdepth += (NI[i, LEVEL] + 1) * NI[i, CNT]
            keys += NI[i, CNT]
            slots += NI[i, CAP]
            iters += NF[i, ITERS]
            shifts += NF[i, SHIFTS]
            ops += NI[i, NINS] + NI[i, NLOOK]
            biggest = max(biggest, NI[i, CNT])
            if NI[i, CNT] == 0:
                empty += 1
        else:
            models += 1
            fan += NI[i, CAP]
    out[0] = depth
    out[1] = wdepth / max(keys, 1)
    out[2] = nodes
    out[3] = leaves
    out[4] = models
    out[5] = keys / max(slots, 1)
    out[6] = fan / max(models, 1)
    out[7] = iters / max(ops, 1)
    out[8] = shifts / max(ops, 1)
    out[9] = biggest
    out[10] = keys / max(leaves, 1)
    out[11] = empty
