"""PostgreSQL's knob facts as a ``KnobProfile``: the knobs worth tuning and their ranges for a machine, the
durability knobs, the memory model (shared memory + connections' work memory + autovacuum), the orderings
between knobs, PGTune's hardware rules and the workload rules of PostgreSQL's documentation.

>>> from advisor.core.domain import Hardware
>>> PROFILE.ranges(Hardware(8 * GB, 4))["shared_buffers"].high == 0.4 * 8 * GB
True
>>> PROFILE.memory.formula(16)[:75]
'shared_buffers + wal_buffers + 16 active connections x work_mem x hash_mem_'
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from advisor.core.domain import Hardware, KnobSpec
from advisor.core.knobprofile import KnobProfile, MemoryModel, Ordering, Range, WorkloadFeatures
from advisor.core.knobvalues import BINARY_SIZES, DURATIONS, UnitGrammar

KB = 1024
MB = 1024**2
GB = 1024**3


def default_ranges(hw: Hardware) -> dict[str, Range]:
    """The knobs that matter most for PostgreSQL (importance rankings of OtterTune/the VLDB'22 study), in
    order, with ranges that scale with the machine."""
    ram, cores = hw.memory_bytes, max(hw.cores, 1)
    return {
        "shared_buffers": Range(16 * MB, 0.4 * ram, "log"),
        "work_mem": Range(1 * MB, min(2 * GB, ram / 8), "log"),
        "effective_cache_size": Range(64 * MB, 0.9 * ram, "log"),
        "random_page_cost": Range(1.0, 8.0),
        "max_parallel_workers_per_gather": Range(0, max(2, cores)),
        "join_collapse_limit": Range(1, 20),
        "from_collapse_limit": Range(1, 20),
        "jit": Range(0, 1),
        "jit_above_cost": Range(1e3, 1e7, "log", special=-1),
        "maintenance_work_mem": Range(16 * MB, min(2 * GB, ram / 4), "log"),
        "hash_mem_multiplier": Range(1.0, 8.0),
        "effective_io_concurrency": Range(0, 512, "log1p"),
        "cpu_tuple_cost": Range(0.001, 0.1, "log"),
        "max_parallel_workers": Range(0, max(2, 2 * cores)),
        "max_worker_processes": Range(2, max(8, 4 * cores)),
        "wal_buffers": Range(64 * 1024, 256 * MB, "log", special=-1),
        "checkpoint_completion_target": Range(0.1, 0.99),
        "checkpoint_timeout": Range(30, 3600, "log"),
        "min_wal_size": Range(32 * MB, 8 * GB, "log"),
        "max_wal_size": Range(64 * MB, 32 * GB, "log"),
        "bgwriter_delay": Range(10, 10000, "log"),
        "bgwriter_lru_maxpages": Range(0, 1000, "log1p"),
        "bgwriter_lru_multiplier": Range(0.0, 10.0),
        "commit_delay": Range(0, 10000, "log1p"),
        "wal_compression": Range(0, 1),
        "geqo_threshold": Range(2, 20),
        "default_statistics_target": Range(10, 1000, "log"),
    }


# Knobs that trade durability for speed: never searched unless the user opts in.
DURABILITY = {"fsync": Range(0, 1), "synchronous_commit": Range(0, 1), "full_page_writes": Range(0, 1)}
# Knobs that change what the database returns, checks, keeps or can recover: never searched unless named in
# include with allow_unsafe, never applied by a schedule by itself (what each risks, as a user reads it).
UNSAFE = {
    "session_replication_role": "skips triggers and foreign-key checks (replica)",
    "zero_damaged_pages": "destroys the rows of damaged pages instead of failing",
    "ignore_checksum_failure": "reads corrupt pages as if they were sound",
    "ignore_invalid_pages": "lets recovery go on past invalid page references (corruption)",
    "data_sync_retry": "goes on after a failed fsync, which can lose committed data",
    "allow_system_table_mods": "lets DDL change the system catalogs",
    "default_transaction_read_only": "makes every write fail",
    "default_transaction_isolation": "changes which anomalies transactions see",
    "autovacuum": "off: tables bloat and transaction ids wrap around until the server stops writes",
    "track_counts": "off: autovacuum has no statistics to work from",
    "wal_level": "lowered: replicas and point-in-time recovery stop working",
    "archive_mode": "off: point-in-time recovery stops working",
    "check_function_bodies": "off: functions are stored without being checked",
    "standard_conforming_strings": "changes what a backslash in a string literal means",
    "search_path": "changes which tables and functions names resolve to",
    "statement_timeout": "makes statements fail that run longer",
    "lock_timeout": "makes statements fail that wait for a lock",
    "idle_in_transaction_session_timeout": "ends sessions that hold a transaction open",
}
# Knobs that describe the server rather than tune it.
NOT_TUNABLE = frozenset({"max_connections", "port", "listen_addresses", "shared_preload_libraries"})

MEMORY = MemoryModel(
    global_buffers=("shared_buffers", "wal_buffers"),
    per_connection=("work_mem",),
    multipliers=(("hash_mem_multiplier", 0.0, 1.0), ("max_parallel_workers_per_gather", 1.0, 0.0)),
    background=(("autovacuum_max_workers", 3.0, ("autovacuum_work_mem", "maintenance_work_mem")),),
    auto={"wal_buffers": ("shared_buffers", 1 / 32, 16 * MB)},  # -1: 1/32 of shared_buffers, at most 16MB
    shrink=("work_mem", "maintenance_work_mem", "shared_buffers"),
    wording="shared memory + {connections} connections' work memory + autovacuum",
)

ORDERINGS = (Ordering("min_wal_size", "max_wal_size", "wal"),
             Ordering("max_parallel_workers", "max_worker_processes", "workers", "the excess is never started"))

WAL_SIZES = {"web": (1 * GB, 4 * GB), "oltp": (2 * GB, 8 * GB), "dw": (4 * GB, 16 * GB),
             "desktop": (100 * MB, 2 * GB), "mixed": (1 * GB, 4 * GB)}
WORK_MEM_DIVISOR = {"web": 1, "oltp": 1, "dw": 2, "desktop": 6, "mixed": 2}


def pgtune(hw: Hardware, kind: str, max_connections: int) -> dict[str, tuple[float | str, str, str]]:
    """PGTune's proposal: name -> (value in bytes for memory knobs, a plain number, or the literal text; its
    family "memory" | "" | "literal"; the reason)."""
    memory, cores, storage = hw.memory_bytes, hw.cores, hw.storage
    out: dict[str, tuple[float | str, str, str]] = {}
    shared = memory / 16 if kind == "desktop" else memory / 4
    out["shared_buffers"] = (shared, "memory", "25% of RAM" if kind != "desktop" else "1/16 of RAM (desktop)")
    out["effective_cache_size"] = (memory / 4 if kind == "desktop" else memory * 3 / 4, "memory",
                                   "75% of RAM: what the OS cache and shared buffers can hold")
    maint = min(memory / (8 if kind == "dw" else 16), 2 * GB)
    out["maintenance_work_mem"] = (maint, "memory", "RAM/16 (RAM/8 for analytics), at most 2GB")
    out["checkpoint_completion_target"] = (0.9, "", "spread checkpoint writes over 90% of the interval")
    wal_buffers = min(max(shared * 0.03, 32 * KB), 16 * MB)
    if 14 * MB <= wal_buffers < 16 * MB:
        wal_buffers = 16 * MB
    out["wal_buffers"] = (wal_buffers, "memory", "3% of shared_buffers, at most 16MB")
    out["default_statistics_target"] = (500 if kind == "dw" else 100, "", "richer statistics for analytics"
                                        if kind == "dw" else "the default sample size")
    out["random_page_cost"] = (4.0 if storage == "hdd" else 1.1, "", f"{storage}: random reads cost "
                               + ("4x sequential" if storage == "hdd" else "about the same as sequential"))
    out["effective_io_concurrency"] = ({"hdd": 2, "ssd": 200, "san": 300}.get(storage, 200), "",
                                       f"concurrent I/O a {storage} sustains")
    min_wal, max_wal = WAL_SIZES.get(kind, WAL_SIZES["mixed"])
    out["min_wal_size"] = (min_wal, "memory", f"WAL kept for a {kind} workload")
    out["max_wal_size"] = (max_wal, "memory", f"fewer forced checkpoints for a {kind} workload")
    workers = cores
    per_gather = 1
    if cores >= 4:
        per_gather = min(math.ceil(cores / 2), 4)
        out["max_worker_processes"] = (cores, "", "one worker per core")
        out["max_parallel_workers"] = (cores, "", "one parallel worker per core")
        out["max_parallel_workers_per_gather"] = (per_gather, "", "half the cores per query, at most 4")
        out["max_parallel_maintenance_workers"] = (per_gather, "", "half the cores for index builds, at most 4")
    work_mem = (memory - shared) / ((max_connections + workers) * 3) / per_gather
    work_mem = max(work_mem / WORK_MEM_DIVISOR.get(kind, 2), 64 * KB)
    out["work_mem"] = (work_mem, "memory", f"RAM left after shared_buffers over 3x {max_connections} connections"
                       + (f", halved for {kind}" if WORK_MEM_DIVISOR.get(kind, 2) > 1 else ""))
    if memory >= 32 * GB:
        out["huge_pages"] = ("try", "literal", "huge pages pay off with large shared_buffers")
    return out


def workload_rules(catalog: Mapping[str, KnobSpec], hw: Hardware,
                   features: WorkloadFeatures) -> tuple[dict[str, object], list[str]]:
    """Rules a DBA applies from what the workload does (PostgreSQL's documentation's advice): a configuration
    and the reason for each knob."""
    out: dict[str, object] = {}
    why: list[str] = []
    cached = features.data_bytes and features.data_bytes < 0.5 * hw.memory_bytes
    if cached and "random_page_cost" in catalog:
        out["random_page_cost"] = 1.1
        why.append("data fits in memory: random reads cost about what sequential ones do")
    collapse = float(catalog["join_collapse_limit"].setting) if "join_collapse_limit" in catalog else 8
    if features.max_relations > collapse:
        limit = features.max_relations + 1
        out["join_collapse_limit"] = limit
        out["from_collapse_limit"] = limit
        why.append(f"statements join {features.max_relations} relations, more than join_collapse_limit "
                   f"{collapse:g}: let the planner reorder them")
        if "geqo_threshold" in catalog and limit >= float(catalog["geqo_threshold"].setting):
            out["geqo_threshold"] = limit + 1
    if features.aggregate_share + features.sort_share > 0.5 and features.mean_ms > 100:
        out["work_mem"] = f"{64 if hw.memory_bytes >= 8 * GB else 16}MB"
        why.append("sorts and hashes dominate: more memory per operation before spilling")
    if features.mean_ms and features.mean_ms < 200 and "jit" in catalog and features.read_share > 0.5:
        out["jit_above_cost"] = 1_000_000
        why.append("short queries: compile with JIT only for really expensive plans")
    return out, why


# PostgreSQL's unit grammar: sizes "8kB" .. "TB" (case-sensitive), times "us" .. "d", written with their unit
# ("256MB", "5min"); booleans on/off/true/false/yes/no/1/0 and their unique prefixes t/f/y/n.
UNITS = UnitGrammar(BINARY_SIZES, DURATIONS, catalog="pg_settings")

PROFILE = KnobProfile(
    engine="PostgreSQL", ranges=default_ranges, durability=DURABILITY, unsafe=UNSAFE, not_tunable=NOT_TUNABLE, memory=MEMORY,
    single_core={"max_parallel_workers_per_gather": "0"},
    hardware_rules=pgtune, workload_rules=workload_rules, units=UNITS, orderings=ORDERINGS,
    connections=("max_connections", 100),
    rules_name="PGTune", catalog_source="pg_settings", statistics_source="pg_stat_statements",
    skipped_choices=frozenset({"try"}),
)
