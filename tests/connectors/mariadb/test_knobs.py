"""MariaDB's knob facts (``connectors/mariadb/knobs.py``) against a real MariaDB 10.11 sandbox (one for this
module): every variable the profile names exists with a unit that fits, the space builds and round-trips, the
rule seeds and repair keep the memory model within RAM, a configuration decoded from the space applies (SET
GLOBAL, and a restart with the value persisted for a read-only variable) and reverts, and the LLM seeder drops a
variable MariaDB does not have."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.core.domain import Hardware, KnobChange, Statement, Workload
from advisor.core.errors import InvalidKnobValue, UnknownKnob
from advisor.core.knobprofile import WorkloadFeatures
from connectors import factory
from connectors.mariadb.knobs import PROFILE, UNITS
from optimizers.knobs.features import extract
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.rules import RulesOptimizer
from optimizers.knobs.seeding import rule_seeds
from optimizers.knobs.space import KnobSpace, SpaceOptions
from tests.connectors.mariadb.conftest import mrun
from tests.optimizers.knobs.test_llm_seeding import FakeLLM, answer

KB = 1024
MB = 1024**2
GB = 1024**3
HARDWARE = (Hardware(2 * GB, 1, "hdd"), Hardware(8 * GB, 4, "ssd"), Hardware(64 * GB, 16, "ssd"))
# counters as SHOW GLOBAL STATUS gives them on a server whose temporary tables, sorts and joins spill, whose
# buffer pool misses, whose log buffer waits and whose table caches overflow: every workload rule fires
SPILLING = {"created_tmp_tables": 1000, "created_tmp_disk_tables": 600, "sort_merge_passes": 500, "sort_scan": 800,
            "sort_range": 200, "select_full_join": 40, "innodb_buffer_pool_reads": 5000,
            "innodb_buffer_pool_read_requests": 100000, "innodb_log_waits": 3, "threads_created": 900,
            "connections": 1000, "opened_table_definitions": 395, "table_open_cache_misses": 500,
            "table_open_cache_hits": 500, "table_open_cache_overflows": 20}


def features(metrics=None, data_bytes=4 * GB, kind="dw", max_relations=9) -> WorkloadFeatures:
    return WorkloadFeatures(20, 5000, 0.95, 0.6, 0.6, 0.4, max_relations, 300.0, data_bytes, kind,
                            dict(metrics or {}))


@pytest.fixture(scope="module")
def server():
    with factory.sandbox("mariadb", "knobs") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def catalog(server):
    return server.connector().knob_catalog()


def named_knobs(catalog) -> set[str]:
    """Every variable the profile names: ranges, durability, memory model, orderings, rules' proposals."""
    memory = PROFILE.memory
    out = {*PROFILE.ranges(HARDWARE[1]), *PROFILE.durability, *memory.global_buffers, *memory.per_connection,
           *memory.shrink, *(n for group in memory.least for n in group), PROFILE.connections[0],
           *(o.low for o in PROFILE.orderings), *(o.high for o in PROFILE.orderings)}
    for hw in HARDWARE:
        for kind in ("oltp", "dw", "web", "desktop", "mixed"):
            out |= set(PROFILE.hardware_rules(hw, kind, 151))
        out |= set(PROFILE.workload_rules(catalog, hw, features(SPILLING))[0])
    return out


def test_the_connector_supplies_its_profile_and_every_named_knob_exists_with_a_unit_that_fits(server, catalog):
    assert server.connector().knob_profile() is PROFILE
    named = named_knobs(catalog)
    assert named <= set(catalog), named - set(catalog)
    memory = PROFILE.memory
    sizes = {*memory.global_buffers, *memory.per_connection, *(n for group in memory.least for n in group),
             "innodb_log_file_size"}
    for name in named:
        family = UNITS.unit_factor(catalog[name].unit)[0]
        assert family == ("memory" if name in sizes else ""), (name, catalog[name].unit)
    for name in ("thread_cache_size", "table_open_cache", "innodb_io_capacity", "optimizer_search_depth"):
        assert catalog[name].vartype == "integer", name  # counts, not bytes
    assert catalog["innodb_flush_method"].vartype == "enum" and catalog["innodb_doublewrite"].vartype == "bool"
    assert {"port", "datadir", "socket", "max_connections"} <= PROFILE.not_tunable & set(catalog)
    # what needs a restart is the catalog's word: the flush method and the doublewrite buffer, not the pool
    assert catalog["innodb_flush_method"].needs_restart and catalog["innodb_doublewrite"].needs_restart
    assert not catalog["innodb_buffer_pool_size"].needs_restart and not catalog["innodb_log_file_size"].needs_restart


def test_the_unit_grammar_reads_option_file_sizes_and_writes_plain_byte_counts(catalog):
    sort = catalog["sort_buffer_size"]
    assert [UNITS.to_base(sort, v) for v in ("4M", "4MB", "4m", "4194304", "4096K")] == [4 * MB] * 5
    assert UNITS.format_bytes(256 * MB) == str(256 * MB) and UNITS.readable(sort, "6667M") == str(6656 * MB)
    assert UNITS.check(catalog["innodb_adaptive_hash_index"], "ON") == "on"
    assert UNITS.check(catalog["innodb_flush_method"], "o_direct") == "o_direct"
    with pytest.raises(InvalidKnobValue, match="is not a boolean"):
        UNITS.check(catalog["innodb_adaptive_hash_index"], "yes")  # MariaDB takes ON/OFF, 1/0, TRUE/FALSE
    with pytest.raises(UnknownKnob, match="information_schema.SYSTEM_VARIABLES has no such name"):
        UNITS.validate_change(catalog, KnobChange("shared_buffers", "1G"))


def test_the_space_builds_from_the_catalog_and_round_trips(catalog):
    hw = HARDWARE[1]
    space = KnobSpace.build(catalog, hw, PROFILE)
    assert space.names == [n for n in PROFILE.ranges(hw) if n in catalog]
    assert not set(PROFILE.durability) & set(space.names)
    assert {*PROFILE.durability} <= set(KnobSpace.build(catalog, hw, PROFILE,
                                                        SpaceOptions(allow_durability=True)).names)
    with pytest.raises(InvalidKnobValue, match="allow_durability"):
        KnobSpace.build(catalog, hw, PROFILE, SpaceOptions(include=("sync_binlog",)))
    flush = next(d for d in space.dimensions if d.name == "innodb_flush_method")
    assert "O_DIRECT" in flush.choices and not {"nosync", "littlesync"} & set(flush.choices) and flush.restart
    pool = next(d for d in space.describe() if d["name"] == "innodb_buffer_pool_size")
    assert pool["high"] == str(6 * GB) and pool["low"] == str(64 * MB)  # 75% of RAM, as a plain byte count
    current = space.default_config()
    assert current["innodb_buffer_pool_size"] == str(128 * MB) and current["innodb_flush_method"] == "fsync"
    assert space.decode(space.encode(current)) == current
    for x in np.random.default_rng(7).random((25, space.dim)):
        config = space.decode(x)
        assert space.decode(space.encode(config)) == config
        assert all(config[n].isdigit() for n in ("innodb_buffer_pool_size", "sort_buffer_size", "tmp_table_size"))


def test_variables_that_change_correctness_are_searched_only_by_name_with_allow_unsafe(catalog):
    """Issue 42 item 9 on MariaDB: read_only, sql_mode, foreign_key_checks, unique_checks, innodb_force_recovery
    and the rest of the profile's unsafe list are refused in include without allow_unsafe."""
    hw = HARDWARE[1]
    present = set(PROFILE.unsafe) & set(catalog)
    assert {"read_only", "sql_mode", "unique_checks", "foreign_key_checks", "innodb_force_recovery"} <= present
    assert not present & set(KnobSpace.build(catalog, hw, PROFILE, SpaceOptions(allow_unsafe=True)).names)
    for name in sorted(present):
        with pytest.raises(InvalidKnobValue, match=f"^{name} .*allow_unsafe"):
            KnobSpace.build(catalog, hw, PROFILE, SpaceOptions(include=(name,)))
    named = KnobSpace.build(catalog, hw, PROFILE, SpaceOptions(include=("read_only",), allow_unsafe=True))
    assert "read_only" in named.names


def test_the_memory_model_counts_the_smaller_temporary_table_limit_per_connection(catalog):
    space = KnobSpace.build(catalog, HARDWARE[1], PROFILE, SpaceOptions(active_connections=10))
    config = {"innodb_buffer_pool_size": str(4 * GB), "sort_buffer_size": str(8 * MB),
              "join_buffer_size": str(1 * MB), "read_buffer_size": str(128 * KB), "read_rnd_buffer_size": str(256 * KB),
              "tmp_table_size": str(64 * MB), "max_heap_table_size": str(32 * MB)}
    globals_ = sum(float(catalog[n].setting) for n in ("innodb_log_buffer_size", "key_buffer_size",
                                                       "query_cache_size", "aria_pagecache_buffer_size"))
    per = 8 * MB + 1 * MB + 128 * KB + 256 * KB + 32 * MB  # the smaller of the two temporary-table limits
    assert space.memory_footprint(config) == pytest.approx(4 * GB + globals_ + 10 * per)
    assert [v.rule for v in space.violations(config)] == ["temporary tables"]
    fixed, notes = space.repair(config)
    assert fixed["tmp_table_size"] == str(32 * MB) and space.violations(fixed) == []
    tight = KnobSpace.build(catalog, HARDWARE[0], PROFILE, SpaceOptions(active_connections=10))
    assert [v.rule for v in tight.violations(config)] == ["memory", "temporary tables"]
    assert "connections' sort, join, read and temporary-table buffers" in tight.violations(config)[0].message


@pytest.mark.parametrize("hw", HARDWARE, ids=["2GB-hdd", "8GB-ssd", "64GB-ssd"])
def test_rule_seeds_and_repair_keep_the_memory_model_within_ram(catalog, hw):
    space = KnobSpace.build(catalog, hw, PROFILE)
    budget = space.options.memory_fraction * hw.memory_bytes
    seeds, warnings = rule_seeds(space, features(SPILLING))
    assert [s.source for s in seeds] == ["workload-rules", "rules", "rules+workload"]
    for seed in seeds:
        assert space.violations(seed.config) == [], seed
        assert space.memory_footprint(seed.config) <= budget
    hardware = seeds[1].config
    assert float(hardware["innodb_buffer_pool_size"]) <= 0.7 * hw.memory_bytes
    assert hardware["innodb_io_capacity"] == ("200" if hw.storage == "hdd" else "2000")
    assert hardware["tmp_table_size"] == hardware["max_heap_table_size"]
    workload = seeds[0]
    assert float(workload.config["sort_buffer_size"]) > float(catalog["sort_buffer_size"].setting)
    assert float(workload.config["join_buffer_size"]) > float(catalog["join_buffer_size"].setting)
    assert float(workload.config["tmp_table_size"]) > float(catalog["tmp_table_size"].setting)
    assert "60% of temporary tables went to disk" in workload.reason and "0.5 merge passes per sort" in workload.reason
    largest = space.decode([1.0] * space.dim)  # every buffer at its top: far over any budget
    fixed, notes = space.repair(largest)
    assert space.violations(fixed) == [] and any("to fit the memory budget" in n for n in notes)


def test_workload_rules_fire_only_on_what_the_counters_show(catalog):
    calm = {"created_tmp_tables": 1000, "created_tmp_disk_tables": 10, "sort_merge_passes": 0, "sort_scan": 800,
            "innodb_buffer_pool_reads": 10, "innodb_buffer_pool_read_requests": 10**6, "connections": 50}
    quiet = features(calm, data_bytes=64 * MB, kind="oltp", max_relations=3)
    quiet = WorkloadFeatures(**{**quiet.to_dict(), "aggregate_share": 0.1, "sort_share": 0.1, "join_share": 0.1})
    assert PROFILE.workload_rules(catalog, HARDWARE[1], quiet) == ({}, [])
    config, why = PROFILE.workload_rules(catalog, HARDWARE[1], features(SPILLING))
    assert config["innodb_buffer_pool_size"] == int(1.25 * 4 * GB) and config["optimizer_search_depth"] == 0
    assert any("5.0% of page reads missed it" in w for w in why)
    assert any("90% of connections started a new thread" in w for w in why) and config["thread_cache_size"] == 200
    assert config["table_definition_cache"] == int(1.25 * 395) and config["innodb_log_buffer_size"] == 32 * MB


def test_the_rules_optimizer_proposes_the_flush_method_and_the_pool_for_the_machine(catalog):
    (proposal,) = RulesOptimizer(KnobProblem(KnobSpace.build(catalog, HARDWARE[2], PROFILE), "oltp")).ask(1)
    config = {c.name: c.value for c in proposal}
    assert config["innodb_flush_method"] == "O_DIRECT" and config["innodb_flush_neighbors"] == "0"
    busy = 64 * (64 * MB + 1 * MB)  # 4 connections a core with their temporary tables and buffers
    assert float(config["innodb_buffer_pool_size"]) == pytest.approx(0.7 * (64 * GB - 512 * MB - busy), rel=1e-3)


def test_a_decoded_configuration_applies_with_set_global_and_a_restart_and_reverts(server):
    connector = server.connector()  # restarts its sandbox when a variable needs it
    catalog = connector.knob_catalog()
    narrow = {"innodb_buffer_pool_size": ("64M", "256M"), "innodb_log_file_size": ("48M", "128M")}
    space = KnobSpace.build(catalog, HARDWARE[1], PROFILE, SpaceOptions(ranges=narrow))
    config = space.decode([0.7] * space.dim)
    assert config["innodb_flush_method"] == "O_DIRECT"  # read-only: an option-file line and a restart
    changes = space.changes(config)
    assert {c.name for c in changes} >= {"innodb_flush_method", "innodb_buffer_pool_size", "sort_buffer_size"}
    applied = connector.apply(changes)
    assert applied.needs_restart and applied.restarted
    assert server.persisted()["innodb_flush_method"] == "O_DIRECT"
    now = connector.knob_catalog()
    for change in changes:
        spec = now[change.name]
        if change.name == "innodb_buffer_pool_size":  # the server rounds it to whole chunks
            assert abs(float(spec.setting) - float(change.value)) < 8 * MB
        else:
            assert UNITS.same_value(spec, spec.setting, change.value), (change.name, spec.setting, change.value)
    connector.revert(applied)
    back = connector.knob_catalog()
    assert server.persisted()["innodb_flush_method"] == "fsync"
    for change in changes:
        assert UNITS.same_value(back[change.name], back[change.name].setting, catalog[change.name].setting), \
            change.name


def test_the_llm_seeder_drops_a_variable_mariadb_does_not_have(catalog, monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    space = KnobSpace.build(catalog, HARDWARE[1], PROFILE)
    server = FakeLLM(answer({"innodb_buffer_pool_size": "4G", "sort_buffer_size": "8MB", "turbo_mode": "on",
                             "shared_buffers": "2GB", "sync_binlog": 0}))
    try:
        (seed,), warnings = server.seeder().seeds(space, features(), 1)
    finally:
        server.close()
    assert seed.config == {"innodb_buffer_pool_size": str(4 * GB), "sort_buffer_size": str(8 * MB)}
    assert any("'turbo_mode'" in w and "not a setting of this server" in w for w in warnings)
    assert any("'shared_buffers'" in w and "not a setting of this server" in w for w in warnings)
    assert any("'sync_binlog'" in w and "not in the searched space" in w for w in warnings)
    system, user = (m["content"] for m in server.requests[0]["body"]["messages"])
    assert "MariaDB 10.11 performance expert" in system and "performance_schema's statement digests" in user
    assert "min(tmp_table_size, max_heap_table_size)" in user and "tmp_table_size <= max_heap_table_size" in user
    assert json.loads(next(ln for ln in user.splitlines() if '"innodb_buffer_pool_size"' in ln))["current"] \
        == str(128 * MB)


def test_the_workload_rules_read_the_counters_a_real_snapshot_gives(server):
    """Temporary tables that spill to disk and sorts that need merge passes, made on the sandbox with small
    session buffers, reach the rules through observe()'s metrics and WorkloadFeatures."""
    dsn = server.create_database("spill")
    mrun(dsn, "CREATE TABLE t (id INT PRIMARY KEY, k INT, pad VARCHAR(200))",
         "INSERT INTO t SELECT seq, seq % 20000, REPEAT(MD5(seq), 6) FROM seq_1_to_40000")
    connector = server.connector("spill")
    before = connector.observe().metrics
    small = "SET SESSION tmp_table_size = 16384, max_heap_table_size = 16384, sort_buffer_size = 32768"
    mrun(dsn, small, *["SELECT k, COUNT(*), MAX(pad) FROM t GROUP BY k"] * 10,
         "SELECT id, pad FROM t ORDER BY pad LIMIT 39000")
    metrics = connector.observe().metrics
    assert metrics["created_tmp_disk_tables"] >= before.get("created_tmp_disk_tables", 0) + 10
    assert metrics["sort_merge_passes"] > before.get("sort_merge_passes", 0)
    workload = Workload((Statement("1", "SELECT k, COUNT(*) FROM t GROUP BY k", 3, 30.0, 3),))
    found = extract(workload, 10 * MB, "oltp", dialect=connector.dialect, metrics=metrics)
    found = WorkloadFeatures(**{**found.to_dict(), "aggregate_share": 0.0, "sort_share": 0.0})  # counters alone
    config, why = PROFILE.workload_rules(connector.knob_catalog(), HARDWARE[1], found)
    assert metrics["created_tmp_disk_tables"] / metrics["created_tmp_tables"] > 0.25
    assert config["tmp_table_size"] == config["max_heap_table_size"] == 64 * MB  # 2x 16MB, at least 64MB on 8GB
    assert config["sort_buffer_size"] == 8 * MB and any("merge passes per sort" in w for w in why)
    assert any("temporary tables went to disk" in w for w in why)


def test_the_catalog_marks_the_variables_only_the_optimizer_reads(catalog):
    """Validation times a read whose plan such a variable leaves the same once (``KnobChange.acts_through_plans``);
    a buffer size is read by the executor, and a search limit moves the optimizer's own time."""
    assert catalog["optimizer_use_condition_selectivity"].plans_only
    assert not catalog["optimizer_search_depth"].plans_only and not catalog["eq_range_index_dive_limit"].plans_only
    assert not catalog["sort_buffer_size"].plans_only and not catalog["innodb_buffer_pool_size"].plans_only
