"""MariaDB 10.11's knob facts as a ``KnobProfile``: the system variables worth tuning and their ranges for a
machine, the durability variables, the memory model (global buffers + each active connection's buffers, the
in-memory temporary table as the smaller of ``tmp_table_size`` and ``max_heap_table_size``), the orderings, the
hardware rules of MySQLTuner and Percona's configuration wizard, and workload rules that read the server's
status counters (``SHOW GLOBAL STATUS``, in ``WorkloadFeatures.metrics``).

Units: sizes in bytes (MariaDB's catalog, ``information_schema.SYSTEM_VARIABLES``, keeps them so and SET GLOBAL
takes plain byte counts; option files take ``K``/``M``/``G`` suffixes, read here too), other variables in their
own unit (counts, I/O operations per second).

>>> from advisor.core.domain import Hardware
>>> PROFILE.ranges(Hardware(8 * GB, 4))["innodb_buffer_pool_size"].high == 0.75 * 8 * GB
True
>>> PROFILE.memory.formula(16).split(" x ")[1].split(" + ")[-2:]
['read_rnd_buffer_size', 'min(tmp_table_size, max_heap_table_size))']
>>> rules = mysqltuner(Hardware(16 * GB, 8, "ssd"), "oltp", 151)
>>> busy = 32 * (64 * MB + 256 * KB + 256 * KB + 512 * KB)  # 4 connections a core with their buffers
>>> rules["innodb_buffer_pool_size"][0] == 0.7 * (16 * GB - 512 * MB - busy), rules["innodb_log_file_size"][0]
(True, 2147483648)
"""

from __future__ import annotations

from collections.abc import Mapping

from advisor.core.domain import Hardware, KnobSpec
from advisor.core.knobprofile import KnobProfile, MemoryModel, Ordering, Range, WorkloadFeatures
from advisor.core.knobvalues import UnitGrammar

KB = 1024
MB = 1024**2
GB = 1024**3
TB = 1024**4


def default_ranges(hw: Hardware) -> dict[str, Range]:
    """The variables that matter most for MariaDB with InnoDB, in order (the buffer pool first, as every
    tuning guide has it), with ranges that scale with the machine. Sizes in bytes."""
    ram, cores = hw.memory_bytes, max(hw.cores, 1)
    per_query = min(256 * MB, max(ram / 64, 4 * MB))  # a sort or join buffer claimed per connection
    return {
        "innodb_buffer_pool_size": Range(64 * MB, 0.75 * ram, "log"),
        "sort_buffer_size": Range(64 * KB, per_query, "log"),
        "tmp_table_size": Range(1 * MB, min(1 * GB, max(ram / 32, 32 * MB)), "log"),
        "max_heap_table_size": Range(1 * MB, min(1 * GB, max(ram / 32, 32 * MB)), "log"),
        "join_buffer_size": Range(128 * KB, per_query, "log"),
        "innodb_log_file_size": Range(48 * MB, min(8 * GB, max(ram / 2, 256 * MB)), "log"),
        "innodb_io_capacity": Range(100, 20000, "log"),
        "innodb_io_capacity_max": Range(200, 40000, "log"),
        "innodb_flush_method": Range(0, 1),  # an enum: its choices are the catalog's
        "read_rnd_buffer_size": Range(64 * KB, 16 * MB, "log"),
        "read_buffer_size": Range(64 * KB, 16 * MB, "log"),
        "optimizer_search_depth": Range(1, 62, special=0),  # 0: the server picks a depth per statement
        "innodb_adaptive_hash_index": Range(0, 1),
        "innodb_flush_neighbors": Range(0, 2),
        "table_open_cache": Range(400, 64000, "log"),
        "table_definition_cache": Range(400, 64000, "log"),
        "thread_cache_size": Range(0, 1000, "log1p"),
        "innodb_read_io_threads": Range(2, max(8, 2 * cores)),
        "innodb_write_io_threads": Range(2, max(8, 2 * cores)),
    }


# Variables that trade durability for speed: never searched unless the user opts in.
DURABILITY = {"innodb_flush_log_at_trx_commit": Range(0, 2), "sync_binlog": Range(0, 1),
              "innodb_doublewrite": Range(0, 1)}
# Variables that change what the database returns, checks, keeps or can recover: never searched unless named in
# include with allow_unsafe, never applied by a schedule by itself (what each risks, as a user reads it).
UNSAFE = {
    "read_only": "makes every write fail",
    "tx_read_only": "makes every write fail",
    "transaction_read_only": "makes every write fail",
    "sql_mode": "changes how statements are checked and what they return",
    "foreign_key_checks": "off: foreign keys are not checked",
    "unique_checks": "off: unique keys of InnoDB secondary indexes are not checked",
    "innodb_force_recovery": "starts InnoDB with damaged data, read-only or losing it",
    "autocommit": "changes where transactions end",
    "tx_isolation": "changes which anomalies transactions see",
    "transaction_isolation": "changes which anomalies transactions see",
    "binlog_format": "changes what replicas and point-in-time recovery replay",
    "sql_safe_updates": "makes updates and deletes without a key fail",
    "div_precision_increment": "changes the results of division",
    "group_concat_max_len": "truncates GROUP_CONCAT results",
    "max_sort_length": "sorts long values by a prefix only (changes ORDER BY results)",
    "max_statement_time": "makes statements fail that run longer",
    "lock_wait_timeout": "makes statements fail that wait for a metadata lock",
    "innodb_lock_wait_timeout": "makes statements fail that wait for a row lock",
}
# Variables that describe the server, its files and its logins rather than tune it (the advisor's
# performance_schema included: observing needs it).
NOT_TUNABLE = frozenset({
    "max_connections", "port", "bind_address", "socket", "datadir", "basedir", "tmpdir", "pid_file", "log_error",
    "server_id", "log_bin", "innodb_page_size", "innodb_data_home_dir", "innodb_log_group_home_dir",
    "innodb_buffer_pool_chunk_size", "performance_schema", "skip_networking", "lower_case_table_names",
    "character_set_server", "collation_server", "plugin_dir", "secure_file_priv"})

MEMORY = MemoryModel(
    global_buffers=("innodb_buffer_pool_size", "innodb_log_buffer_size", "key_buffer_size", "query_cache_size",
                    "aria_pagecache_buffer_size"),
    per_connection=("sort_buffer_size", "join_buffer_size", "read_buffer_size", "read_rnd_buffer_size"),
    least=(("tmp_table_size", "max_heap_table_size"),),
    shrink=("sort_buffer_size", "join_buffer_size", "read_rnd_buffer_size", "read_buffer_size", "tmp_table_size",
            "max_heap_table_size", "innodb_buffer_pool_size"),
    wording="global buffers + {connections} connections' sort, join, read and temporary-table buffers",
)

ORDERINGS = (
    Ordering("tmp_table_size", "max_heap_table_size", "temporary tables",
             "an in-memory temporary table grows only to the smaller of the two"),
    Ordering("innodb_io_capacity", "innodb_io_capacity_max", "io capacity",
             "the server raises innodb_io_capacity_max to innodb_io_capacity"),
)

# the buffer pool's share of RAM by workload kind (MySQLTuner: 75% on a dedicated server; Percona's wizard: 70%
# to leave the OS, the per-connection buffers and the other caches their room)
POOL_SHARE = {"desktop": 1 / 8, "web": 0.6, "oltp": 0.7, "dw": 0.7, "mixed": 0.7}
RESERVE = 512 * MB  # kept from the pool: the OS, the key and Aria caches (128MB each by default), the log buffer
IO_CAPACITY = {"hdd": 200, "ssd": 2000, "san": 1000}


def mysqltuner(hw: Hardware, kind: str, max_connections: int) -> dict[str, tuple[float | str, str, str]]:
    """MySQLTuner's and Percona's configuration wizard's proposal: name -> (value in bytes for sizes, a plain
    number, or the literal text; its family "memory" | "" | "literal"; the reason). The buffer pool takes its
    share of what is left once the OS and the other caches (``RESERVE``) and 4 busy connections a core with
    their per-connection buffers have their room, so that the proposal fits the memory model."""
    ram, storage = hw.memory_bytes, hw.storage
    out: dict[str, tuple[float | str, str, str]] = {}
    temp = 64 * MB if ram >= 8 * GB else 32 * MB
    if kind == "dw":
        temp *= 2
    out["tmp_table_size"] = (temp, "memory", "in-memory temporary tables for GROUP BY and DISTINCT")
    out["max_heap_table_size"] = (temp, "memory", "equal to tmp_table_size: the smaller of the two rules")
    sort, join = 256 * KB, 256 * KB
    if kind in ("dw", "mixed"):
        sort, join = (4 * MB if ram >= 8 * GB else 2 * MB), 1 * MB
        out["sort_buffer_size"] = (sort, "memory", "sorts of reporting queries")
        out["join_buffer_size"] = (join, "memory", "joins that cannot use an index")
    busy = 4 * max(hw.cores, 1) * (temp + sort + join + 512 * KB)  # + the read buffers
    share = POOL_SHARE.get(kind, POOL_SHARE["mixed"])
    reserve = min(RESERVE, ram / 4)
    pool = share * max(ram - reserve - busy, ram / 8)
    out["innodb_buffer_pool_size"] = (pool, "memory", f"{share:.0%} of the RAM left after {reserve / MB:.0f}MB "
                                      f"for the OS and other caches and {busy / MB:.0f}MB for busy connections"
                                      + (" (desktop)" if kind == "desktop" else " on a dedicated server"))
    out["innodb_log_file_size"] = (max(min(pool / 4, 2 * GB), 48 * MB), "memory",
                                   "a quarter of the buffer pool, at most 2GB: fewer forced checkpoints")
    capacity = IO_CAPACITY.get(storage, 2000)
    out["innodb_io_capacity"] = (capacity, "", f"background flushing a {storage} sustains")
    out["innodb_io_capacity_max"] = (max(2 * capacity, 2000), "", "twice innodb_io_capacity for bursts")
    out["innodb_flush_neighbors"] = (1 if storage == "hdd" else 0, "",
                                     "flush neighbouring pages together on a spinning disk only")
    out["innodb_flush_method"] = ("O_DIRECT", "literal", "no double buffering in the OS cache")
    out["thread_cache_size"] = (min(max(16, max_connections // 4), 256), "",
                                f"reuse threads: a quarter of {max_connections} connections, at most 256")
    out["table_open_cache"] = (4000 if kind != "desktop" else 1000, "", "open tables kept for reuse")
    return out


def _ratio(metrics: Mapping[str, float], part: str, *whole: str) -> float:
    total = sum(metrics.get(w, 0.0) for w in whole)
    return metrics.get(part, 0.0) / total if total > 0 else 0.0


def _setting(catalog: Mapping[str, KnobSpec], name: str) -> float:
    return float(catalog[name].setting) if name in catalog else 0.0


def workload_rules(catalog: Mapping[str, KnobSpec], hw: Hardware,
                   features: WorkloadFeatures) -> tuple[dict[str, object], list[str]]:
    """Rules a DBA applies from what the server counted (MySQLTuner's checks of ``SHOW GLOBAL STATUS``) and
    what the workload does: a configuration (sizes in bytes) and the reason for each rule that fired."""
    m = features.metrics
    out: dict[str, object] = {}
    why: list[str] = []
    big = hw.memory_bytes >= 8 * GB
    reserve = min(RESERVE, hw.memory_bytes / 4)
    on_disk = _ratio(m, "created_tmp_disk_tables", "created_tmp_tables")
    heavy = features.aggregate_share + features.sort_share > 0.5 and features.mean_ms > 100
    if on_disk > 0.25 or heavy:
        size = max(2 * min(_setting(catalog, "tmp_table_size"), _setting(catalog, "max_heap_table_size")),
                   (64 if big else 32) * MB)
        out["tmp_table_size"] = out["max_heap_table_size"] = int(size)
        why.append(f"{on_disk:.0%} of temporary tables went to disk: larger in-memory temporary tables"
                   if on_disk > 0.25 else "aggregates and sorts dominate: larger in-memory temporary tables")
    merges = _ratio(m, "sort_merge_passes", "sort_scan", "sort_range")
    if merges > 0.1 or heavy:
        out["sort_buffer_size"] = int(max(2 * _setting(catalog, "sort_buffer_size"), (8 if big else 4) * MB))
        why.append(f"{merges:.2g} merge passes per sort: a larger sort buffer" if merges > 0.1
                   else "sorts dominate: a larger sort buffer")
    full_joins = m.get("select_full_join", 0.0) + m.get("select_range_check", 0.0)
    if full_joins > 0 or (features.join_share > 0.5 and features.mean_ms > 100):
        out["join_buffer_size"] = int(max(4 * _setting(catalog, "join_buffer_size"), (4 if big else 2) * MB))
        why.append(f"{full_joins:.0f} joins read a table without an index: a larger join buffer" if full_joins
                   else "joins dominate: a larger join buffer")
    misses = _ratio(m, "innodb_buffer_pool_reads", "innodb_buffer_pool_read_requests")
    pool = _setting(catalog, "innodb_buffer_pool_size")
    if features.data_bytes > pool and (misses > 0.01 or not m):
        out["innodb_buffer_pool_size"] = int(min(1.25 * features.data_bytes, 0.7 * (hw.memory_bytes - reserve)))
        why.append(f"the data ({features.data_bytes / MB:.0f}MB) is larger than the buffer pool "
                   f"({pool / MB:.0f}MB)" + (f" and {misses:.1%} of page reads missed it" if m else ""))
    if m.get("innodb_log_waits", 0.0) > 0:
        out["innodb_log_buffer_size"] = int(min(max(2 * _setting(catalog, "innodb_log_buffer_size"), 32 * MB), GB))
        why.append("transactions waited for room in the log buffer")
    created = _ratio(m, "threads_created", "connections")
    if created > 0.1 and m.get("connections", 0.0) > 100:
        out["thread_cache_size"] = int(min(max(2 * _setting(catalog, "thread_cache_size"), 32), 1000))
        why.append(f"{created:.0%} of connections started a new thread: a larger thread cache")
    opened = m.get("opened_table_definitions", 0.0)
    if opened > 0.9 * _setting(catalog, "table_definition_cache") > 0:
        out["table_definition_cache"] = int(1.25 * opened)
        why.append(f"{opened:.0f} table definitions were opened: keep them all cached")
    if _ratio(m, "table_open_cache_misses", "table_open_cache_hits", "table_open_cache_misses") > 0.2 \
            and m.get("table_open_cache_overflows", 0.0) > 0:
        out["table_open_cache"] = int(min(2 * _setting(catalog, "table_open_cache"), 64000))
        why.append("the table cache overflowed: more open tables kept")
    if features.max_relations > 7:
        out["optimizer_search_depth"] = 0
        why.append(f"statements join {features.max_relations} tables: let the optimizer bound its search")
    return out, why


# MariaDB's grammar of values: sizes as plain byte counts in SET GLOBAL and the catalog, K/M/G/T suffixes in
# option files (read here, with their spellings KB, MB, MiB, lower case); booleans ON/OFF, 1/0, TRUE/FALSE.
SIZES = {"B": 1, "K": KB, "M": MB, "G": GB, "T": TB}
ALIASES = {alias: s for s in "KMGT" for alias in (s.lower(), s + "B", s.lower() + "b", s + "iB", s.lower() + "B")}
UNITS = UnitGrammar(SIZES, {}, true_words=frozenset({"on", "true", "1"}), false_words=frozenset({"off", "false", "0"}),
                    write_units=False, catalog="information_schema.SYSTEM_VARIABLES", aliases=ALIASES)

PROFILE = KnobProfile(
    engine="MariaDB 10.11", ranges=default_ranges, durability=DURABILITY, unsafe=UNSAFE, not_tunable=NOT_TUNABLE, memory=MEMORY,
    hardware_rules=mysqltuner, workload_rules=workload_rules, units=UNITS, orderings=ORDERINGS,
    connections=("max_connections", 151), rules_name="MySQLTuner",
    catalog_source="information_schema.SYSTEM_VARIABLES",
    statistics_source="performance_schema's statement digests",
    skipped_choices=frozenset({"littlesync", "nosync"}),  # flush methods for testing only: they lose data
)
