"""KnobSpace on a real server's catalog: units, scales, special values, narrowing, durability and constraints."""

import math

import numpy as np
import pytest

from advisor.core.domain import Hardware
from advisor.core.errors import InvalidKnobValue, UnknownKnob
from connectors.postgres import PostgresConnector
from connectors.postgres.knobs import PROFILE
from optimizers.knobs.space import SPECIAL_SHARE, KnobSpace, SpaceOptions

HW = Hardware(8 * 1024**3, 4, "ssd")
MB = 1024**2
GB = 1024**3


@pytest.fixture(scope="module")
def catalog(pg):
    return PostgresConnector(pg.dsn()).knob_catalog()


@pytest.fixture(scope="module")
def space(catalog):
    return KnobSpace.build(catalog, HW, PROFILE)


def dim(space, name):
    return next(d for d in space.dimensions if d.name == name)


def base(space, name, text):
    return PROFILE.units.to_base(space.catalog[name], text)


def at(space, **units):
    """The server's current point with some coordinates set."""
    x = space.encode(space.default_config())
    for name, u in units.items():
        x[space.names.index(name)] = u
    return x


# --- coordinates ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,text", [("work_mem", "1MB"), ("work_mem", "4MB"), ("work_mem", "64MB"),
                                       ("work_mem", "1GB"), ("shared_buffers", "16MB"), ("shared_buffers", "256MB"),
                                       ("shared_buffers", "2GB"), ("maintenance_work_mem", "512MB"),
                                       ("effective_cache_size", "6GB")])
def test_memory_knobs_round_trip_with_their_units(space, name, text):
    assert space.decode(space.encode({name: text}))[name] == text


def test_shared_buffers_is_searched_in_8kb_pages(space):
    d = dim(space, "shared_buffers")
    assert space.catalog["shared_buffers"].unit == "8kB"
    assert d.low == 16 * MB / 8192 and d.high == pytest.approx(0.4 * HW.memory_bytes / 8192)
    # a bare number is pages, as PostgreSQL reads it: 32768 pages are 256MB
    assert space.encode({"shared_buffers": "32768"}) == pytest.approx(space.encode({"shared_buffers": "256MB"}))
    assert space.decode(space.encode({"shared_buffers": "32768"}))["shared_buffers"] == "256MB"
    assert d.restart and space.restart_mask()[space.names.index("shared_buffers")]
    assert not space.restart_mask()[space.names.index("work_mem")]


def test_size_axes_are_logarithmic(space):
    d = dim(space, "work_mem")
    assert d.scale == "log" and (d.low, d.high) == (1024, 1024 * 1024)  # 1MB .. RAM/8 = 1GB, in kB
    mid = base(space, "work_mem", d.from_unit(0.5))
    assert mid == pytest.approx(math.sqrt(d.low * d.high), rel=0.02)  # 32MB, not the linear 512MB
    quarter = base(space, "work_mem", d.from_unit(0.25))
    assert quarter == pytest.approx(d.low ** 0.75 * d.high ** 0.25, rel=0.02)
    sb = dim(space, "shared_buffers")
    assert base(space, "shared_buffers", sb.from_unit(0.5)) == pytest.approx(math.sqrt(sb.low * sb.high), rel=0.01)


def test_ranges_from_zero_use_log1p_and_reach_zero(space):
    d = dim(space, "effective_io_concurrency")
    assert d.scale == "log1p" and d.low == 0
    assert d.from_unit(0.0) == "0" and d.to_unit("0") == 0.0
    assert d.from_unit(1.0) == "512"
    assert base(space, "effective_io_concurrency", d.from_unit(0.5)) == pytest.approx(math.sqrt(513) - 1, abs=1)
    assert 0 < d.to_unit("1") == pytest.approx(math.log(2) / math.log(513))  # the server's 1 is its own point
    x = at(space, effective_io_concurrency=0.0)
    assert space.decode(x)["effective_io_concurrency"] == "0"


def test_special_values_own_the_bottom_of_their_axis(space):
    wb = dim(space, "wal_buffers")
    assert wb.special == -1
    for u in (0.0, 0.05, SPECIAL_SHARE - 1e-6):
        assert wb.from_unit(u) == "-1"
    assert wb.to_unit("-1") < SPECIAL_SHARE
    assert wb.from_unit(wb.to_unit("-1")) == "-1"
    assert wb.from_unit(SPECIAL_SHARE) == "64kB" and wb.from_unit(1.0) == "256MB"
    assert wb.to_unit("16MB") > SPECIAL_SHARE and wb.from_unit(wb.to_unit("16MB")) == "16MB"

    jit = dim(space, "jit_above_cost")
    assert jit.from_unit(0.0) == "-1" and jit.to_unit("-1") < SPECIAL_SHARE
    assert base(space, "jit_above_cost", jit.from_unit(SPECIAL_SHARE)) == 1000
    assert base(space, "jit_above_cost", jit.from_unit(1.0)) == 1e7
    assert jit.from_unit(jit.to_unit("100000")) == "100000"
    # a narrowed range asks for numbers: the special value is no longer part of the axis
    narrowed = KnobSpace.build(space.catalog, HW, PROFILE, SpaceOptions(ranges={"jit_above_cost": ("50000", "500000")}))
    nj = dim(narrowed, "jit_above_cost")
    assert nj.special is None and nj.from_unit(0.0) == "50000" and nj.from_unit(1.0) == "500000"


def test_bool_and_enum_knobs_are_choices(space):
    jit = dim(space, "jit")
    assert jit.choices == ("off", "on")
    assert jit.from_unit(0.0) == "off" and jit.from_unit(0.49) == "off"
    assert jit.from_unit(0.51) == "on" and jit.from_unit(1.0) == "on"
    assert jit.to_unit("true") == jit.to_unit("on") > 0.5 > jit.to_unit("off")

    wc = dim(space, "wal_compression")
    assert set(wc.choices) == set(space.catalog["wal_compression"].enum_values)
    assert [wc.from_unit(wc.to_unit(c)) for c in wc.choices] == list(wc.choices)
    with pytest.raises(InvalidKnobValue):
        wc.to_unit("gzip")

    narrowed = KnobSpace.build(space.catalog, HW, PROFILE, SpaceOptions(ranges={"wal_compression": ("off", "lz4")}))
    nwc = dim(narrowed, "wal_compression")
    assert set(nwc.choices) == {"off", "lz4"}
    assert {nwc.from_unit(u) for u in np.linspace(0, 1, 11)} == {"off", "lz4"}
    with pytest.raises(InvalidKnobValue):
        nwc.to_unit("zstd")


@pytest.mark.parametrize("options", [
    SpaceOptions(),
    SpaceOptions(allow_durability=True),
    SpaceOptions(max_knobs=1, include=("huge_pages",)),  # enum whose current value is 'try'
    # memory knobs whose current value is 0 (off) or -1 (use another setting)
    SpaceOptions(max_knobs=1, include=("backend_flush_after", "wal_keep_size", "autovacuum_work_mem",
                                       "temp_file_limit")),
], ids=["default", "durability", "huge_pages", "zero-and-minus-one"])
def test_the_servers_current_values_are_a_point_of_the_space(catalog, options):
    space = KnobSpace.build(catalog, HW, PROFILE, options)
    current = space.default_config()
    assert set(current) == set(space.names)
    x = space.encode(current)
    assert ((0 <= x) & (x <= 1)).all()
    assert space.decode(x) == current
    assert space.changes(space.decode(x)) == []


# --- what is searched -----------------------------------------------------------------------------------------


def test_include_exclude_and_narrowed_ranges(catalog, space):
    options = SpaceOptions(include=("bgwriter_flush_after",), exclude=("jit", "wal_compression"),
                           ranges={"work_mem": ("8MB", "256MB"), "random_page_cost": ("1.1", "2"),
                                   "shared_buffers": ("64MB", "1GB")})
    narrowed = KnobSpace.build(catalog, HW, PROFILE, options)
    assert "bgwriter_flush_after" in narrowed.names and "bgwriter_flush_after" not in space.names
    assert "jit" not in narrowed.names and "wal_compression" not in narrowed.names
    assert narrowed.dim == space.dim - 2 + 1
    low, high = narrowed.decode(np.zeros(narrowed.dim)), narrowed.decode(np.ones(narrowed.dim))
    assert (low["work_mem"], high["work_mem"]) == ("8MB", "256MB")
    assert (low["random_page_cost"], high["random_page_cost"]) == ("1.1", "2")
    assert (low["shared_buffers"], high["shared_buffers"]) == ("64MB", "1GB")
    for u in np.linspace(0, 1, 9):  # every point inside the narrowed range
        work_mem = narrowed.decode(np.full(narrowed.dim, u))["work_mem"]
        assert 8 * MB <= PROFILE.units.to_bytes(catalog["work_mem"], work_mem) <= 256 * MB
    # the wide defaults are not narrowed
    wide = space.decode(np.zeros(space.dim))["work_mem"], space.decode(np.ones(space.dim))["work_mem"]
    assert wide == ("1MB", "1GB")

    assert KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(max_knobs=3)).names == space.names[:3]


@pytest.mark.parametrize("options", [SpaceOptions(include=("work_memory",)), SpaceOptions(exclude=("no_such_knob",)),
                                     SpaceOptions(ranges={"shared_bufers": ("1MB", "2MB")})])
def test_unknown_knob_names_are_refused(catalog, options):
    with pytest.raises(UnknownKnob):
        KnobSpace.build(catalog, HW, PROFILE, options)


def test_an_empty_range_is_refused(catalog):
    with pytest.raises(InvalidKnobValue, match="empty"):
        KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(ranges={"work_mem": ("256MB", "8MB")}))


def test_durability_knobs_need_an_explicit_opt_in(catalog, space):
    assert not set(PROFILE.durability) & set(space.names)
    for name in sorted(set(PROFILE.durability)):
        with pytest.raises(InvalidKnobValue, match="allow_durability"):
            KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(include=(name,)))
    allowed = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(allow_durability=True))
    assert set(PROFILE.durability) <= set(allowed.names)
    only_fsync = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(include=("fsync",), allow_durability=True))
    assert "fsync" in only_fsync.names and dim(only_fsync, "fsync").choices == ("off", "on")


def test_knobs_that_change_correctness_are_searched_only_by_name_with_allow_unsafe(catalog, space):
    """Issue 42 item 9: include admitted session_replication_role, zero_damaged_pages, ignore_checksum_failure,
    default_transaction_read_only, autovacuum and track_counts, and trials ran with them. Each is in the profile's
    unsafe list, refused in include without allow_unsafe, and never in the space unless named."""
    asked = {"session_replication_role", "zero_damaged_pages", "ignore_checksum_failure",
             "default_transaction_read_only", "autovacuum", "track_counts"}
    assert asked <= set(PROFILE.unsafe) and asked <= set(catalog)
    assert not set(PROFILE.unsafe) & set(space.names)
    for name in sorted(set(PROFILE.unsafe) & set(catalog)):
        with pytest.raises(InvalidKnobValue, match=f"^{name} .*allow_unsafe"):
            KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(include=(name,)))
    flag_only = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(allow_unsafe=True, allow_durability=True))
    assert not set(PROFILE.unsafe) & set(flag_only.names)  # the flag alone adds none: only a name does
    named = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(include=("autovacuum",), allow_unsafe=True))
    assert "autovacuum" in named.names and "track_counts" not in named.names


# --- constraints ----------------------------------------------------------------------------------------------


def test_memory_budget_violation_is_repaired_by_lowering_work_mem_first(space):
    config = {**space.default_config(), "work_mem": "1GB"}
    assert [v.rule for v in space.violations(config)] == ["memory"]
    assert space.memory_footprint(config) > 0.8 * HW.memory_bytes

    fixed, notes = space.repair(config)
    assert space.violations(fixed) == []
    assert space.memory_footprint(fixed) <= 0.8 * HW.memory_bytes
    assert PROFILE.units.to_bytes(space.catalog["work_mem"], fixed["work_mem"]) < GB
    assert {k: v for k, v in fixed.items() if k != "work_mem"} == {k: v for k, v in config.items() if k != "work_mem"}
    assert len(notes) == 1 and notes[0].startswith("work_mem lowered")
    PROFILE.units.check(space.catalog["work_mem"], fixed["work_mem"])  # PostgreSQL accepts it


def test_memory_repair_moves_on_to_maintenance_memory_when_work_mem_is_not_enough(space):
    config = {**space.default_config(), "work_mem": "1GB", "maintenance_work_mem": "2GB", "shared_buffers": "3GB"}
    fixed, notes = space.repair(config)
    assert space.violations(fixed) == []
    assert [n.split()[0] for n in notes] == ["work_mem", "maintenance_work_mem"]
    assert fixed["shared_buffers"] == "3GB"


def test_min_wal_size_above_max_wal_size_is_a_wal_violation_that_repair_fixes(space):
    config = {**space.default_config(), "min_wal_size": "4GB", "max_wal_size": "1GB"}
    assert [v.rule for v in space.violations(config)] == ["wal"]
    fixed, notes = space.repair(config)
    assert space.violations(fixed) == []
    assert fixed["max_wal_size"] == "1GB"
    assert PROFILE.units.to_bytes(space.catalog["min_wal_size"], fixed["min_wal_size"]) <= GB
    assert notes


@pytest.mark.parametrize("left_out", ["min_wal_size", "max_wal_size"])
def test_wal_repair_when_only_one_of_the_pair_is_searched(catalog, left_out):
    # the other one stays at the server's value (min 80MB, max 1GB): a point can still cross it
    space = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(exclude=(left_out,)))
    searched = "max_wal_size" if left_out == "min_wal_size" else "min_wal_size"
    config = space.decode(at(space, **{searched: 0.0 if searched == "max_wal_size" else 1.0}))
    assert [v.rule for v in space.violations(config)] == ["wal"]
    fixed, _ = space.repair(config)
    assert space.violations(fixed) == []
    assert set(fixed) == set(space.names)  # no knob outside the space is set


def test_max_parallel_workers_above_max_worker_processes_is_repaired(space):
    config = {**space.default_config(), "max_parallel_workers": "8", "max_worker_processes": "4"}
    assert [v.rule for v in space.violations(config)] == ["workers"]
    fixed, _ = space.repair(config)
    assert space.violations(fixed) == [] and fixed["max_parallel_workers"] == "4"


def test_memory_footprint_grows_with_active_connections(catalog):
    few = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(active_connections=4))
    many = KnobSpace.build(catalog, HW, PROFILE, SpaceOptions(active_connections=64))
    assert KnobSpace.build(catalog, HW, PROFILE).active_connections() == 16  # 4 per core by default
    config = few.default_config()
    # each connection may sort/hash work_mem x hash_mem_multiplier in 1 + max_parallel_workers_per_gather processes
    per_connection = 4 * MB * 2.0 * (1 + 2)
    assert many.memory_footprint(config) - few.memory_footprint(config) == pytest.approx(60 * per_connection)
    assert many.memory_footprint(config) > few.memory_footprint(config)
    # the same configuration can fit for few connections and not for many
    config = {**config, "work_mem": "64MB"}
    assert few.violations(config) == [] and [v.rule for v in many.violations(config)] == ["memory"]


def test_a_trial_runs_the_values_a_dba_reads_so_the_trial_and_the_recommendation_show_one_value(space):
    # issue 44: "wal_buffers = 5296kB" under "not recommended" where its trial had run 5272kB: the trial loop runs
    # what repair returns, so repair writes the values as they are recommended (KnobSpace.rounded) and shown
    rng = np.random.default_rng(7)
    wal = space.units.readable(space.catalog["wal_buffers"], "5272kB")
    assert wal == "5296kB"
    fixed, _ = space.repair({**space.default_config(), "wal_buffers": "5272kB"})
    assert fixed["wal_buffers"] == wal
    rounded_some = False
    for _ in range(40):
        config = space.decode(rng.random(len(space.names)))
        fixed, _ = space.repair(config)
        assert space.violations(fixed) == []
        assert space.rounded(fixed) == fixed  # what validation rounds is what the trial ran
        rounded_some = rounded_some or fixed != config
        for c in space.changes(fixed):
            assert space.units.shown(space.catalog[c.name], c.value) == c.value, c  # one text for one value
    assert rounded_some
