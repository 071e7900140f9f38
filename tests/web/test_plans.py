"""The one parser of run plans (``RunPlan.parse``) that the CLI, the REST API and the pages' forms share: a form's
strings and JSON's numbers give the same plan, and a bad field is named in one clear message."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from advisor.core.errors import AdvisorError
from advisor.service.runs import all_options, kinds
from web import schemas
from web.routes.runs import plan_of


def test_a_forms_strings_and_jsons_numbers_give_the_same_plan():
    form = kinds.parse_plan({"kind": "indexes", "optimizer": " extend ", "trials": "", "budget_mb": "50",
                          "rounds": "3"})
    json = kinds.parse_plan({"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "rounds": 3})
    assert form == json == kinds.plan_of("indexes", optimizer="extend", budget_mb=50.0, rounds=3)


def test_blank_fields_take_the_defaults_and_the_default_optimizer():
    plan = kinds.parse_plan({"kind": "knobs", "optimizer": "", "trials": "", "budget_mb": "", "rounds": None})
    assert plan == kinds.plan_of("knobs", optimizer="hibo")


def test_the_other_kinds_fields_are_left_out():
    # a form sends every field; the hidden ones of the other kind do not count
    plan = kinds.parse_plan({"kind": "knobs", "trials": "12", "budget_mb": "not a number", "episodes": 5})
    assert plan.trials == 12 and not hasattr(plan, "budget_mb") and not hasattr(plan, "episodes")
    plan = kinds.parse_plan({"kind": "indexes", "trials": "abc", "budget_mb": "8"})
    assert not hasattr(plan, "trials") and plan.budget_mb == 8.0


@pytest.mark.parametrize("fields, message", [
    ({"kind": ""}, "choose what to tune"),
    ({"kind": "everything"}, "unknown run kind 'everything'"),
    ({"kind": "knobs", "optimizer": "magic"}, "no knobs optimizer named 'magic'"),
    ({"kind": "indexes"}, "budget_mb"),
    ({"kind": "indexes", "budget_mb": "-1"}, "budget_mb"),
    ({"kind": "knobs", "trials": "1"}, "trials must be between 2 and 10000, got 1"),
    ({"kind": "knobs", "trials": "2.5"}, "trials must be a whole number"),
    ({"kind": "knobs", "trials": 2.5}, "trials must be a whole number"),
    ({"kind": "knobs", "trials": True}, "trials must be a number"),
    ({"kind": "knobs", "rounds": 1000}, "rounds must be between 1 and 100"),
    ({"kind": "knobs", "sample_percent": "nan"}, "sample_percent must be a finite number"),
    ({"kind": "knobs", "sample_percent": 200}, "sample_percent must be in (0, 100]"),
    ({"kind": "knobs", "validate": "maybe"}, "validate must be true or false"),
    ({"kind": "knobs", "colour": "blue"}, "unknown run option(s): colour"),
])
def test_a_bad_field_is_named(fields, message):
    with pytest.raises(AdvisorError) as e:
        kinds.parse_plan(fields)
    assert message in str(e.value) and type(e.value) is AdvisorError  # bad input (400), never a 404


def test_the_rest_schema_has_the_plans_bounds_and_builds_through_the_parser():
    specs = tuple(schemas.RUN_SPECS.values())
    for name, (low, high) in ((n, o.bounds) for n, o in all_options().items() if o.type == "int"):
        spec = next(s for s in specs if name in s.model_fields)
        field = spec.model_fields[name]
        bounds = {type(m).__name__: m for m in field.metadata}
        assert bounds["Ge"].ge == low and bounds["Le"].le == high, name
    body = schemas.RUN_SPECS["indexes"](kind="indexes", budget_mb=50, optimizer="extend", rounds=3)
    assert plan_of(body) == kinds.plan_of("indexes", optimizer="extend", budget_mb=50.0, rounds=3)
    assert plan_of(schemas.RUN_SPECS["knobs"](kind="knobs", validate=False)) == kinds.plan_of("knobs", optimizer="hibo",
                                                                                  validate=False)
    rewrite = schemas.RUN_SPECS["rewrites"](kind="rewrites", max_statements=5)
    assert plan_of(rewrite) == kinds.plan_of("rewrites", optimizer="aurora", max_statements=5)


def test_rest_takes_the_knob_space_and_index_options_the_cli_takes():
    body = schemas.RUN_INS["knobs"](target="t", kind="knobs", include=["work_mem"], exclude=["random_page_cost"],
                                    range=["work_mem=4MB:64MB"], allow_durability=True, objective="throughput")
    assert plan_of(body) == kinds.plan_of("knobs", optimizer="hibo", include=("work_mem",),
                                    exclude=("random_page_cost",), range=("work_mem=4MB:64MB",),
                                    allow_durability=True, objective="throughput")
    body = schemas.RUN_INS["indexes"](target="t", kind="indexes", budget_mb=5, max_width=2, retrain=True)
    assert plan_of(body).max_width == 2 and plan_of(body).retrain is True
    with pytest.raises(AdvisorError, match="expected NAME=LOW:HIGH"):  # the parser and the schema: one pattern
        kinds.parse_plan({"kind": "knobs", "range": "work_mem=4MB"})
    with pytest.raises(ValidationError, match="should match pattern"):
        schemas.RUN_INS["knobs"](target="t", kind="knobs", range=["work_mem=4MB"])


def test_a_stored_plan_reads_back_as_it_was():
    plan = kinds.parse_plan({"kind": "knobs", "include": "work_mem, shared_buffers", "range": ["work_mem=4MB:64MB"]})
    assert plan.include == ("work_mem", "shared_buffers") and kinds.stored_plan(plan.to_dict()) == plan
