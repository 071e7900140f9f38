"""A learned index's parameter values are one checked value (``advisor.core.params.LearnedParams``): made by the
space that checked them, frozen, typed on reading, taken as they are by a space with the same parameters (not
checked again), handed over typed (``LearnedIndexParam.value``: a number, or a choice's word) and stored as JSON
numbers; rows stored before, which hold text ('0.7'), load as the same values."""

import json
import pickle

import pytest

from advisor.core.domain import LearnedIndexParam
from advisor.core.errors import InvalidKnobValue
from advisor.core.params import LearnedParams, ParamSpace, ParamSpec
from advisor.storage.codec import change_from, plain

PARAMS = (ParamSpec("density", 0.1, 1.0, default="0.7"),
          ParamSpec("fanout", 2, 1024, scale="log", integer=True, default="64"),
          ParamSpec("policy", choices=("cost", "always"), default="cost"))


def test_every_configuration_a_space_makes_is_checked_frozen_and_typed():
    space = ParamSpace(PARAMS)
    for params in (space.default_config(), space.decode([0.3, 0.6, 0.9]), space.full({"fanout": "128"}),
                   space.validate({"density": "0.5"})):
        assert isinstance(params, LearnedParams) and params.checked_by == PARAMS
        with pytest.raises(TypeError, match="frozen"):
            params["density"] = "0.9"
    full = space.full({"fanout": "128", "policy": "always"})
    assert [full.value(n) for n in ("density", "fanout", "policy")] == [0.7, 128, "always"]
    assert type(full.value("fanout")) is int and type(full.value("density")) is float


def test_a_space_with_the_same_parameters_does_not_check_them_again():
    checked = ParamSpace(PARAMS).full({"density": "0.9"})
    again = ParamSpace(PARAMS)  # another instance, as an engine's own space is
    assert again.full(checked) is checked and again.validate(checked) is checked
    narrowed = again.narrowed({"density": ("0.5", "0.8")})  # other parameters: checked, and refused here
    with pytest.raises(InvalidKnobValue, match="outside"):
        narrowed.full(checked)


def test_stored_texts_and_json_numbers_load_as_the_same_value():
    space = ParamSpace(PARAMS)
    params = space.full({"density": "0.9", "fanout": "256"})
    stored = json.dumps(params)
    assert json.loads(stored) == {"density": "0.9", "fanout": "256", "policy": "cost"}
    assert space.full(json.loads(stored)) == params  # an older row: the same texts
    assert space.full({"density": 0.9, "fanout": 256}) == params  # numbers read as their canonical text
    assert space.full({"density": "0.90"}) == space.full({"density": "0.9"})
    again = pickle.loads(pickle.dumps(params))
    assert again == params and again.checked_by == PARAMS and hash(again) == hash(params)


def test_changes_carry_typed_values_and_store_as_json_numbers():
    space = ParamSpace(PARAMS)
    changes = space.changes({"density": "0.9", "fanout": "256", "policy": "always"})
    assert changes == [LearnedIndexParam("density", 0.9), LearnedIndexParam("fanout", 256),
                       LearnedIndexParam("policy", "always")]
    assert json.loads(json.dumps(plain(changes))) == [
        {"name": "density", "value": 0.9, "kind": "learned_index_param"},
        {"name": "fanout", "value": 256, "kind": "learned_index_param"},
        {"name": "policy", "value": "always", "kind": "learned_index_param"}]
    assert [change_from(d) for d in json.loads(json.dumps(plain(changes)))] == changes


def test_a_recommendation_stored_with_text_values_still_loads_as_typed_values():
    old = {"name": "density", "value": "0.9", "kind": "learned_index_param"}
    assert change_from(old) == LearnedIndexParam("density", 0.9)
    assert change_from({**old, "value": "true"}).value == "true"


def test_a_trial_configuration_stores_as_numbers_and_older_rows_of_text_load_the_same():
    space = ParamSpace(PARAMS)
    config = space.full({"density": "0.9"})
    assert space.stored(config) == {"density": 0.9, "fanout": 64, "policy": "cost"}
    assert space.loaded(space.stored(config)) == config == space.loaded(dict(config))  # new rows, old rows
    assert isinstance(space.loaded(dict(config)), LearnedParams)
    assert space.loaded({"density": 7}) == {"density": 7}  # not of this space (an infeasible trial's): as stored
