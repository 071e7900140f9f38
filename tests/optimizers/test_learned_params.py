"""A learned index's parameter values are one checked value (``advisor.core.params.LearnedParams``): made by the
space that checked them, frozen, typed on reading, taken as they are by a space with the same parameters (not
checked again), and stored as the JSON object of texts they always were (older rows, and JSON numbers, load)."""

import json
import pickle

import pytest

from advisor.core.errors import InvalidKnobValue
from advisor.core.params import LearnedParams, ParamSpace, ParamSpec

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
