"""``alex``: an updatable learned index in the spirit of ALEX (Ding et al., SIGMOD'20), compiled with numba
(``alex_pool``: memory; ``alex_node``: data nodes; ``alex_split``: structure changes; ``alex_tree``: bulk load,
root expansion and the op loop). Its tunable parameters are ALEX's, as LITune's artifact lists them, with ALEX's
defaults; ``ParamSpace(engine.parameters()).validate`` checks values, ``check_params`` the constraints between
them (min_density < init_density < max_density, min_out_of_domain_keys <= max_out_of_domain_keys).

Keys are uint64 (2**64-1 is reserved: the gap sentinel); an index holds keys only (no payloads).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from advisor.core.errors import InvalidKnobValue
from advisor.core.params import ParamSpace, ParamSpec
from connectors.learned import alex_pool as pool
from connectors.learned import alex_tree as tree
from connectors.learned.base import NO_PROGRESS, CompiledRun, check_keys

BOOL = ("false", "true")
PARAMETERS = (
    ParamSpec("expected_insert_frac", 0.0, 1.0, default="1",
              description="share of inserts the cost model expects; 0 builds data nodes without gaps"),
    ParamSpec("max_node_size", 1024, 16777216, scale="log", integer=True, default="16777216",
              description="largest node in bytes (8 bytes a slot or child): bounds data nodes and fanouts"),
    ParamSpec("approximate_model_computation", choices=BOOL, default="true",
              description="fit node models on a sample of about 128 keys"),
    ParamSpec("approximate_cost_computation", choices=BOOL, default="false",
              description="price nodes on every 8th key"),
    ParamSpec("fanout_selection_method", choices=("bottom-up", "top-down", "fixed"), default="bottom-up",
              rebuild=True, description="how bulk loading chooses each model node's fanout"),
    ParamSpec("splitting_policy", choices=("always-two", "decide", "fanout-tree"), default="decide",
              description="how a full, costly data node splits (or expands and retrains)"),
    ParamSpec("allow_splitting_upwards", choices=BOOL, default="false",
              description="a full root halves under a new root instead of a leaf splitting downwards"),
    ParamSpec("min_out_of_domain_keys", 1, 1000, scale="log", integer=True, default="5",
              below="max_out_of_domain_keys",
              description="out-of-domain inserts before the root may expand its key domain"),
    ParamSpec("max_out_of_domain_keys", 10, 100000, scale="log", integer=True, default="1000",
              description="out-of-domain inserts after which the root always expands"),
    ParamSpec("out_of_domain_tolerance", 0.25, 64, scale="log", default="2",
              description="between min and max: expand once out-of-domain inserts reach this many root-slot "
                          "shares of the keys added since the last expansion"),
    ParamSpec("max_density", 0.3, 0.99, default="0.8", description="a data node fuller than this grows"),
    ParamSpec("init_density", 0.2, 0.95, default="0.7", below="max_density",
              description="density of built and expanded data nodes"),
    ParamSpec("min_density", 0.1, 0.9, default="0.6", below="init_density",
              description="density of the data nodes a split creates"),
    ParamSpec("append_mostly_threshold", 0.5, 1.0, default="0.9",
              description="share of inserts beyond a node's end that makes it append-mostly"),
)
SPACE = ParamSpace(PARAMETERS)
_CHOICE = {"fanout_selection_method": ("bottom-up", "top-down", "fixed"),
           "splitting_policy": ("always-two", "decide", "fanout-tree")}
_SLOT = {"expected_insert_frac": pool.P_EIF, "max_node_size": pool.P_MAXSLOTS,
         "approximate_model_computation": pool.P_APPROX_MODEL, "approximate_cost_computation": pool.P_APPROX_COST,
         "fanout_selection_method": pool.P_FANOUT, "splitting_policy": pool.P_SPLIT,
         "allow_splitting_upwards": pool.P_SPLIT_UP, "min_out_of_domain_keys": pool.P_MIN_OOD,
         "max_out_of_domain_keys": pool.P_MAX_OOD, "out_of_domain_tolerance": pool.P_OOD_TOL,
         "max_density": pool.P_MAXD, "init_density": pool.P_INITD, "min_density": pool.P_MIND,
         "append_mostly_threshold": pool.P_APPEND}


def check_params(params: Mapping[str, str]) -> dict[str, str]:
    """Every parameter (defaults under ``params``), validated; InvalidKnobValue for a broken constraint."""
    full = SPACE.full(params)
    lo, mid, hi = (float(full[k]) for k in ("min_density", "init_density", "max_density"))
    if not lo < mid < hi:
        raise InvalidKnobValue(f"densities must satisfy min_density < init_density < max_density "
                               f"(got {full['min_density']} < {full['init_density']} < {full['max_density']})")
    if int(full["min_out_of_domain_keys"]) > int(full["max_out_of_domain_keys"]):
        raise InvalidKnobValue(f"min_out_of_domain_keys ({full['min_out_of_domain_keys']}) must not exceed "
                               f"max_out_of_domain_keys ({full['max_out_of_domain_keys']})")
    return full


def encode(full: Mapping[str, str]) -> np.ndarray:
    """The parameter vector the compiled code reads (``alex_pool.P_*``)."""
    vec = np.zeros(pool.P_W)
    for name, slot in _SLOT.items():
        text = full[name]
        if name in _CHOICE:
            vec[slot] = _CHOICE[name].index(text)
        elif text in BOOL:
            vec[slot] = BOOL.index(text)
        else:
            vec[slot] = float(text)
    vec[pool.P_MAXSLOTS] = max(16, int(full["max_node_size"]) // 8)
    return vec


class AlexIndex(CompiledRun):
    """An ALEX-like index built over keys; ``run`` mutates it (inserts stay in)."""

    def __init__(self, S: tuple, full: dict[str, str]):
        self.S, self.full = S, full

    @classmethod
    def bulk(cls, keys: np.ndarray, full: dict[str, str]) -> AlexIndex:
        vec, size = encode(full), len(keys)
        for _ in range(12):
            if pool.pool_bytes(*pool.pool_sizes(size, vec)) > pool.POOL_CAP_BYTES:
                break
            S = pool.new_pool(size, vec)
            if tree.bulk_load(S, keys):
                small = pool.new_pool(0, vec)  # compiles (or loads) pool growth now, not inside a timed run
                pool.compact(small, pool.new_pool(0, vec))
                return cls(S, full)
            size = 2 * size + 1024
        raise ValueError(f"{NO_PROGRESS}alex: bulk load of {len(keys)} keys did not fit pools for {size} keys "
                         f"(at most {pool.POOL_CAP_BYTES} bytes)")

    def _loop(self, stream, start, lat, t_begin, max_ticks_per_op):
        return tree.run_loop(self.S, stream.ops, stream.keys, stream.lengths, start, lat, t_begin,
                             max_ticks_per_op)

    def _grow(self, status: int, memory_limit_bytes: int | None) -> str:
        NI, NF, NU, K, O, C, M, P = self.S
        ks, cs, live = pool.live_sizes(self.S)
        need = 9 * int(M[pool.M_NEED_K]) + 8 * int(M[pool.M_NEED_C])
        if memory_limit_bytes is not None and live + need > memory_limit_bytes:
            return f"memory bound exceeded: the structure needs {live + need} bytes > {memory_limit_bytes}"
        nk = max(len(K), 2 * ks + 2 * int(M[pool.M_NEED_K]) + 4096)
        nc = max(len(C), 2 * cs + 2 * int(M[pool.M_NEED_C]) + 1024)
        nn = max(NI.shape[0], 2 * int(M[pool.M_NODES]) + int(M[pool.M_NEED_N]) + 64)
        if pool.pool_bytes(nn, nk, nc) > pool.POOL_CAP_BYTES:
            return f"{NO_PROGRESS}its memory pools would grow past {pool.POOL_CAP_BYTES} bytes"
        T = (np.zeros((nn, pool.NI_W), np.int64), np.zeros((nn, pool.NF_W)), np.zeros((nn, pool.NU_W), np.uint64),
             np.full(nk, pool.GAP, np.uint64), np.zeros(nk, np.uint8), np.zeros(nc, np.int64),
             np.zeros(pool.M_W, np.int64), np.zeros(pool.P_W))
        pool.compact(self.S, T)
        self.S = T
        return ""

    def _stuck(self) -> str:
        code = int(self.S[6][pool.M_STUCK])
        self.S[6][pool.M_STUCK] = 0
        return pool.STUCK_WHY.get(code, "a compiled loop gave up").format(n=pool.MAX_RESTRUCTURES,
                                                                          d=pool.MAX_DEPTH)

    def stats(self) -> dict[str, float]:
        out = np.zeros(12)
        pool.structure_stats(self.S, out)
        names = ("depth", "mean_depth", "nodes", "leaves", "model_nodes", "mean_fill", "mean_fanout",
                 "search_probes", "shifts_per_op", "largest_leaf", "mean_leaf", "empty_leaves")
        stats = dict(zip(names, (float(v) for v in out), strict=True))
        M = self.S[6]
        for name, slot in (("keys", pool.M_KEYS), ("expansions", pool.M_EXPANSIONS), ("splits", pool.M_SPLITS),
                           ("splits_down", pool.M_SPLITS_DOWN), ("splits_up", pool.M_SPLITS_UP),
                           ("retrains", pool.M_RETRAINS), ("root_expansions", pool.M_ROOT_EXPANSIONS)):
            stats[name] = float(M[slot])
        return stats

    def memory_bytes(self) -> int:
        return int(pool.live_sizes(self.S)[2])

    def set_params(self, params: Mapping[str, str]) -> None:
        """Applies ``params`` to future node operations (no rebuild); ValueError for one that needs a rebuild."""
        checked = SPACE.validate(params)
        for name, value in checked.items():
            if SPACE.spec(name).rebuild and value != self.full[name]:
                raise ValueError(f"{name} takes effect only when the index is rebuilt")
        full = check_params({**self.full, **checked})
        self.S[7][:] = encode(full)
        self.full = full

    def copy(self) -> AlexIndex:
        return AlexIndex(tuple(a.copy() for a in self.S), dict(self.full))

    def contains(self, keys) -> np.ndarray:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        out = np.zeros(len(keys), dtype=np.bool_)
        tree.contains(self.S, keys, out)
        return out

    def range(self, start: int, n: int) -> np.ndarray:
        out = np.empty(n, dtype=np.uint64)
        got, _ = tree.scan(self.S, np.uint64(start), n, out)
        return out[:got]


class AlexEngine:
    """``alex``: the numba ALEX-like learned index (updatable)."""

    name = "alex"
    read_only = False

    def parameters(self) -> tuple[ParamSpec, ...]:
        return PARAMETERS

    def build(self, keys: np.ndarray, params: Mapping[str, str]) -> AlexIndex:
        return AlexIndex.bulk(check_keys(keys), check_params(params))
