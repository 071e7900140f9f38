"""A knob configuration is one typed value (``advisor.core.knobconfig.KnobConfig``) from the search to the
connector: the space makes it (decode, defaults, changes, a stored JSON object), it knows its units, its rounding
is the space's one rounding, and it stores as the JSON object of texts it always was."""

import json
import pickle

import pytest

from advisor.core.domain import Hardware, KnobChange, KnobSpec
from advisor.core.knobconfig import KnobConfig, knob_text
from connectors.postgres.knobs import PROFILE
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.space import KnobSpace, SpaceOptions

CATALOG = {
    "work_mem": KnobSpec("work_mem", "integer", "kB", "4096", "4096", 64, 2147483647),
    "shared_buffers": KnobSpec("shared_buffers", "integer", "8kB", "16384", "16384", 16, 1073741823,
                               context="postmaster"),
    "random_page_cost": KnobSpec("random_page_cost", "real", None, "4", "4", 0, 1.79769e308),
    "enable_seqscan": KnobSpec("enable_seqscan", "bool", None, "on", "on", None, None),
}


@pytest.fixture(scope="module")
def space():
    return KnobSpace.build(CATALOG, Hardware(8 * 1024**3, 4, "ssd"), PROFILE, SpaceOptions(include=("enable_seqscan",)))


def test_every_configuration_the_space_makes_is_one_frozen_typed_value(space):
    made = [space.default_config(), space.decode([0.5] * space.dim), space.full([KnobChange("work_mem", "64MB")]),
            space.repair(space.decode([0.9] * space.dim))[0], space.rounded(space.default_config())]
    for config in made:
        assert isinstance(config, KnobConfig) and config.catalog is space.catalog
        with pytest.raises(TypeError, match="frozen"):
            config["work_mem"] = "1GB"
        with pytest.raises(TypeError, match="frozen"):
            config.update(work_mem="1GB")
    assert space.default_config() == {"work_mem": "4MB", "shared_buffers": "128MB", "random_page_cost": "4",
                                      "enable_seqscan": "on"}


def test_the_problem_and_the_space_make_the_same_full_configuration_from_changes(space):
    changes = (KnobChange("work_mem", "64MB"), KnobChange("enable_seqscan", "off"))
    full = KnobProblem(space).config(changes)
    assert full == space.full(changes) == {**space.default_config(), "work_mem": "64MB", "enable_seqscan": "off"}
    assert full.changes() == changes == tuple(space.changes(full))
    assert space.encode(full).tolist() == space.encode(dict(full)).tolist()


def test_values_are_read_in_their_catalog_units(space):
    config = space.full({"shared_buffers": "256MB", "work_mem": "1GB", "random_page_cost": "1.1"})
    assert config.number("shared_buffers") == 32768  # 8 kB pages
    assert config.number("work_mem") == 1024 * 1024  # kB
    assert config.number("random_page_cost") == pytest.approx(1.1)
    assert config.same("work_mem", "1048576kB") and not config.same("work_mem", "1000MB")


def test_delta_is_only_what_differs_in_meaning_not_in_spelling(space):
    config = space.full({"work_mem": "64MB"})
    assert config.delta({**space.default_config(), "work_mem": "65536kB"}) == ()
    assert config.delta(space.default_config()) == (KnobChange("work_mem", "64MB"),)


def test_a_decoded_value_is_rounded_once_where_numbers_become_text(space):
    spec = CATALOG["work_mem"]
    assert knob_text(PROFILE.units, spec, 65432.1) == "64MB"  # a whole MB from 16MB up
    assert knob_text(PROFILE.units, spec, 12345.6) == "12346kB"  # a whole kB below
    assert knob_text(PROFILE.units, CATALOG["random_page_cost"], 1.23456) == "1.23"  # 3 significant digits
    assert knob_text(PROFILE.units, spec, 1.0) == "64kB"  # within the catalog's bounds
    decoded = space.decode([0.37] * space.dim)
    d = next(d for d in space.dimensions if d.name == "work_mem")
    assert decoded["work_mem"] == d.from_unit(0.37)


def test_it_stores_as_the_json_object_of_texts_and_loads_back(space):
    config = space.full({"work_mem": "64MB", "random_page_cost": "1.1"})
    stored = json.dumps(config)
    assert json.loads(stored) == {**space.default_config(), "work_mem": "64MB", "random_page_cost": "1.1"}
    assert config.to_json() == json.loads(stored) and type(config.to_json()) is dict
    loaded = space.full(json.loads(stored))
    assert loaded == config and loaded.changes() == config.changes()
    again = pickle.loads(pickle.dumps(config))
    assert isinstance(again, KnobConfig) and again == config and again.number("work_mem") == 65536
    assert hash(again) == hash(config)


def test_a_stored_configuration_of_an_older_run_reads_as_the_same_value(space):
    """Rows stored before the typed value (plain JSON texts, a partial configuration, other spellings) are read
    into it unchanged: the same texts, the same changes."""
    old = {"work_mem": "65536kB", "enable_seqscan": "off"}
    config = space.config(old)
    assert config == old
    assert config.changes() == (KnobChange("work_mem", "65536kB"), KnobChange("enable_seqscan", "off"))
    assert space.changes(old) == list(config.changes())
    assert space.full(old).number("work_mem") == 65536
