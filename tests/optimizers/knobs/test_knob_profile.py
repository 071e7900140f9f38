"""The knob space, the rules seeder and the LLM prompt take an engine's knob facts as data: a second engine's
profile (a MariaDB-like one: a buffer pool, per-connection sort and join buffers, sizes written as plain byte
counts) drives them with no PostgreSQL knob, unit or word anywhere. The catalog is a value as a connector's
``knob_catalog()`` returns it."""

import pytest

from advisor.core.domain import Hardware, KnobSpec
from advisor.core.errors import InvalidKnobValue, UnknownKnob
from advisor.core.knobprofile import KnobProfile, MemoryModel, Range, WorkloadFeatures
from advisor.core.knobvalues import UnitGrammar
from optimizers import registry
from optimizers.knobs.llm_prompt import prompt, system
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.seeding import rule_seeds
from optimizers.knobs.space import KnobSpace, SpaceOptions

MB = 1024**2
GB = 1024**3
HW = Hardware(8 * GB, 4, "ssd")
UNITS = UnitGrammar({"B": 1, "K": 1024, "M": MB, "G": GB}, {"s": 1000.0}, write_units=False,
                    catalog="information_schema.SYSTEM_VARIABLES")
CATALOG = {s.name: s for s in (
    KnobSpec("innodb_buffer_pool_size", "integer", "B", str(128 * MB), None, 5 * MB, 2.0**63),
    KnobSpec("sort_buffer_size", "integer", "B", str(2 * MB), None, 32 * 1024, 2.0**32),
    KnobSpec("join_buffer_size", "integer", "B", str(256 * 1024), None, 128, 2.0**32),
    KnobSpec("optimizer_search_depth", "integer", None, "62", None, 0, 62),
    KnobSpec("innodb_flush_log_at_trx_commit", "integer", None, "1", None, 0, 3),
    KnobSpec("max_connections", "integer", None, "151", None, 10, 100000),
)}


def hardware_rules(hw: Hardware, kind: str, max_connections: int) -> dict:
    return {"innodb_buffer_pool_size": (0.7 * hw.memory_bytes, "memory", "70% of RAM for the buffer pool"),
            "sort_buffer_size": (4 * MB, "memory", f"sorts of {kind} statements")}


def workload_rules(catalog, hw: Hardware, features: WorkloadFeatures):
    return ({"optimizer_search_depth": 8}, ["short plans"]) if features.max_relations < 8 else ({}, [])


PROFILE = KnobProfile(
    engine="MariaDB",
    ranges=lambda hw: {"innodb_buffer_pool_size": Range(64 * MB, 0.8 * hw.memory_bytes, "log"),
                       "sort_buffer_size": Range(256 * 1024, 64 * MB, "log"),
                       "join_buffer_size": Range(128 * 1024, 64 * MB, "log"),
                       "optimizer_search_depth": Range(0, 62), "max_connections": Range(10, 1000)},
    durability={"innodb_flush_log_at_trx_commit": Range(0, 2)}, not_tunable=frozenset({"max_connections"}),
    memory=MemoryModel(global_buffers=("innodb_buffer_pool_size",), per_connection=("sort_buffer_size",
                       "join_buffer_size"), shrink=("sort_buffer_size", "join_buffer_size", "innodb_buffer_pool_size"),
                       wording="buffer pool + {connections} connections' buffers"),
    hardware_rules=hardware_rules, workload_rules=workload_rules, units=UNITS, connections=("max_connections", 151),
    rules_name="tuning-primer",
    catalog_source="information_schema.SYSTEM_VARIABLES", statistics_source="performance_schema",
)


def space(**options) -> KnobSpace:
    return KnobSpace.build(CATALOG, HW, PROFILE, SpaceOptions(active_connections=8, **options))


def test_the_space_is_the_profiles_knobs_with_values_written_as_the_engine_writes_them():
    s = space()
    assert s.names == ["innodb_buffer_pool_size", "sort_buffer_size", "join_buffer_size", "optimizer_search_depth"]
    top = s.decode([1.0] * s.dim)
    assert top["innodb_buffer_pool_size"] == str(round(0.8 * 8 * GB / MB) * MB)  # a plain byte count, whole MB
    assert s.decode(s.encode({"sort_buffer_size": "64M"}))["sort_buffer_size"] == str(64 * MB)
    assert s.default_config()["innodb_buffer_pool_size"] == str(128 * MB)
    with pytest.raises(InvalidKnobValue, match="allow_durability"):
        space(include=("innodb_flush_log_at_trx_commit",))
    assert "innodb_flush_log_at_trx_commit" in space(allow_durability=True).names
    with pytest.raises(UnknownKnob, match="SYSTEM_VARIABLES has no such name"):
        space(include=("shared_buffers",))


def test_the_memory_model_is_the_pool_plus_connections_buffers_and_repair_shrinks_in_its_order():
    s = space()
    config = {"innodb_buffer_pool_size": str(6 * GB), "sort_buffer_size": str(64 * MB)}
    assert s.memory_footprint(config) == 6 * GB + 8 * (64 * MB + 256 * 1024)
    assert [v.rule for v in s.violations(config)] == ["memory"]
    assert "8 connections' buffers" in s.violations(config)[0].message
    fixed, notes = s.repair(config)
    assert not s.violations(fixed) and fixed["innodb_buffer_pool_size"] == str(6 * GB)
    assert int(fixed["sort_buffer_size"]) < 64 * MB and notes[0].startswith("sort_buffer_size lowered")


def test_rules_and_seeds_come_from_the_profile():
    problem = KnobProblem(space(), "oltp")
    proposed = {c.name: c.value for c in registry.create("knobs", "rules", problem).ask(1)[0]}
    assert proposed == {"innodb_buffer_pool_size": str(int(0.7 * 8 * GB) // MB * MB), "sort_buffer_size": str(4 * MB)}
    features = WorkloadFeatures(3, 30, 1.0, 0.5, 0.2, 0.1, 2, 5.0, 10**8, "oltp")
    seeds, _ = rule_seeds(space(), features)
    assert [s.source for s in seeds] == ["workload-rules", "rules", "rules+workload"]
    assert seeds[0].config == {"optimizer_search_depth": "8"} and "tuning-primer" in seeds[1].reason


def test_the_prompt_speaks_of_the_engine_and_its_memory_model_only():
    s = space()
    features = WorkloadFeatures(3, 30, 1.0, 0.5, 0.2, 0.1, 2, 5.0, 10**8, "oltp")
    text = system(s) + prompt(s, features, 2)
    assert "MariaDB" in text and "performance_schema" in text
    assert "innodb_buffer_pool_size + 8 active connections x (sort_buffer_size + join_buffer_size)" in text
    assert not any(word in text for word in ("PostgreSQL", "pg_", "work_mem", "shared_buffers", "wal"))
