"""PostgreSQL's knob facts (``connectors/postgres/knobs.py``), read against a real server's catalog: every knob
the profile names exists with the unit its range assumes, PGTune's sizes, the memory model's sum, and the unit
grammar (``'128MB'`` of 8 kB pages, ``'5min'``, booleans)."""

import pytest

from advisor.core.domain import Hardware, KnobChange
from advisor.core.errors import InvalidKnobValue, UnknownKnob
from connectors.postgres import PostgresConnector
from connectors.postgres.knobs import PROFILE, UNITS
from optimizers.knobs.space import KnobSpace, SpaceOptions

MB = 1024**2
GB = 1024**3


@pytest.fixture(scope="module")
def catalog(pg):
    return PostgresConnector(pg.dsn()).knob_catalog()


def test_the_connector_supplies_its_profile_and_every_named_knob_exists_with_its_unit(pg, catalog):
    assert PostgresConnector(pg.dsn()).knob_profile() is PROFILE
    ranges = PROFILE.ranges(Hardware(8 * GB, 4))
    named = {*ranges, *PROFILE.durability, *PROFILE.memory.global_buffers, *PROFILE.memory.per_connection,
             *PROFILE.memory.shrink, *(m for m, _, _ in PROFILE.memory.multipliers),
             *(o.low for o in PROFILE.orderings), *(o.high for o in PROFILE.orderings)}
    assert named <= set(catalog), named - set(catalog)
    for name in (*PROFILE.memory.global_buffers, *PROFILE.memory.per_connection, *PROFILE.memory.shrink):
        assert UNITS.unit_factor(catalog[name].unit)[0] == "memory", name
    assert ranges["shared_buffers"].high == pytest.approx(0.4 * 8 * GB)  # bytes, scaled with RAM


def test_pgtune_sizes_memory_by_ram_and_workload_kind():
    big = PROFILE.hardware_rules(Hardware(64 * GB, 8, "ssd"), "oltp", 100)
    assert big["shared_buffers"][:2] == (16 * GB, "memory") and big["effective_cache_size"][0] == 48 * GB
    assert big["huge_pages"][:2] == ("try", "literal") and big["max_parallel_workers_per_gather"][0] == 4
    desktop = PROFILE.hardware_rules(Hardware(8 * GB, 1, "hdd"), "desktop", 20)
    assert desktop["shared_buffers"][0] == 8 * GB / 16 and desktop["random_page_cost"][0] == 4.0
    assert "max_worker_processes" not in desktop and "huge_pages" not in desktop


def test_the_memory_model_sums_shared_memory_work_memory_and_autovacuum(catalog):
    space = KnobSpace.build(catalog, Hardware(64 * GB, 4), PROFILE, SpaceOptions(active_connections=10))
    config = {"shared_buffers": "1GB", "wal_buffers": "-1", "work_mem": "64MB", "hash_mem_multiplier": "2",
              "max_parallel_workers_per_gather": "1", "maintenance_work_mem": "256MB"}
    autovacuum = float(catalog["autovacuum_max_workers"].setting)  # autovacuum_work_mem -1: maintenance_work_mem
    expected = 1 * GB + 16 * MB + 10 * 64 * MB * 2 * (1 + 1) + autovacuum * 256 * MB  # wal_buffers auto: 16MB cap
    assert space.memory_footprint(config) == pytest.approx(expected)
    small = Hardware(2 * GB, 4)
    tight = KnobSpace.build(catalog, small, PROFILE, SpaceOptions(active_connections=10))
    assert [v.rule for v in tight.violations(config)] == ["memory"]
    assert "connections' work memory" in tight.violations(config)[0].message


def test_the_unit_grammar_reads_and_writes_postgresql_values(catalog):
    sb, ct = catalog["shared_buffers"], catalog["checkpoint_timeout"]
    assert UNITS.to_base(sb, "128MB") == 16384 and UNITS.format_base(sb, 16384) == "128MB"
    assert UNITS.to_base(ct, "5min") == 300 and UNITS.shown(ct, "300") == "5min"
    assert UNITS.check(catalog["jit"], "TRUE") == "on" and UNITS.readable(sb, "6667MB") == "6.5GB"
    with pytest.raises(InvalidKnobValue, match="unit 'ms' does not fit"):
        UNITS.to_base(sb, "10ms")
    with pytest.raises(UnknownKnob, match="pg_settings has no such name"):
        UNITS.validate_change(catalog, KnobChange("no_such_knob", "1"))
