"""The kind registry: every adapter derives its kinds from it, so a kind added in one place (a test's here)
appears in the service's ``tune``, ``RunPlan``, the CLI's choices, the REST schema, the web forms and (without a
page of its own, ``Kind.page``) the web's generic run page."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest

from advisor.core.errors import AdvisorError
from advisor.tuning import kinds
from advisor.tuning.kinds import all_options
from advisor.tuning.plan import RunPlan

# a fake kind, registered in a fresh interpreter before any adapter is imported (adapters build their schemas,
# choices and forms from the registry when they are loaded)
SCRIPT = textwrap.dedent("""
    import json, sys
    from dataclasses import dataclass
    from advisor.tuning import kinds
    from advisor.tuning.kind import Kind

    @dataclass(frozen=True)
    class Done:
        recommendation: object = None
        message: str = ""

    def run(ctx, plan):
        return Done(message=f"widgets tuned {ctx.connector.dsn} with {plan.trials} trials")

    from advisor.tuning.knobs.plan import KnobsPlan
    from advisor.tuning.plan import RunPlan, borrowed

    @dataclass(frozen=True)
    class WidgetsPlan(RunPlan):
        kind: str = "widgets"
        trials: int = borrowed(KnobsPlan, "trials")

    kinds.register(Kind("widgets", "a fake kind for the registry's test", run, plan=WidgetsPlan))

    def quiet(ctx, plan):  # a pipeline step that says nothing for longer than the heartbeat waits
        import time
        time.sleep(6.5)
        ctx.say("quiet done")
        return Done(message="quiet")

    kinds.register(Kind("quiet", "a fake kind that is silent for 6.5 s", quiet, uses_shadows=False))

    from typer.testing import CliRunner
    from fastapi.testclient import TestClient
    from advisor.cli.main import app as cli
    from advisor.service.service import AdvisorService
    from advisor.storage.store import Store
    from advisor.tuning.plan import RunPlan
    from web.main import create_app
    from web.pages.runs import FORM

    out = {}
    out["tuned"] = AdvisorService(Store(":memory:")).tune("widgets", "host=nowhere", kinds.parse_plan(
        {"kind": "widgets", "trials": "7", "budget_mb": "3"}), name="widgets").message  # named: not resolved
    lines = []
    AdvisorService(Store(":memory:"), say=lines.append).tune("quiet", "host=nowhere", name="quiet")
    out["quiet_lines"] = lines
    # the CLI's run kinds: a wrong one is refused with the choices named
    out["cli_help"] = CliRunner().invoke(cli, ["runs", "start", "--target", "t", "--kind", "nope"]).output
    out["tune_help"] = CliRunner().invoke(cli, ["tune", "widgets", "--help"]).output  # its own command
    with TestClient(create_app(sys.argv[1], scheduler=False)) as client:
        out["openapi"] = client.get("/api/openapi.json").json()
    out["form_kinds"] = [k["name"] for k in FORM["kinds"]]
    out["form_trials_for"] = next(f["for_kinds"] for f in FORM["fields"] if f["name"] == "trials").split()
    from web.pages.templating import templates  # a run's page: a kind without a page of its own gets the generic
    run = {"id": "r" * 32, "kind": "widgets", "target_id": "t", "state": "done", "optimizer": "", "created_at": 0,
           "updated_at": 0}
    out["run_page"] = templates.env.get_template("run.html").render(
        run=run, trials=[], result={"message": "widgets tuned", "explain": [{"queryid": "q"}]}, recs=[], plan=None,
        progress={}, active=False, target="t", schedule=None, plot=None, objective_unit=None, outcome="done")
    print(json.dumps(out))
""")


def test_a_kind_added_to_the_registry_appears_in_every_adapter(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "store.duckdb")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # the service ran the kind's pipeline with a plan parsed by the one parser (budget_mb is not a widgets option)
    assert out["tuned"] == "widgets tuned host=nowhere with 7 trials"
    # a pipeline step silent past the heartbeat is said to be still at work, by the service, for every kind
    assert any(x.startswith("still tuning (quiet)") for x in out["quiet_lines"]) and out["quiet_lines"][-1] == \
        "quiet done"
    assert "'widgets'" in out["cli_help"] and "'all'" in out["cli_help"]
    # `advisor tune widgets`, generated from the entry: its summary and its plan's options (and no other kind's)
    assert "A fake kind for the registry's test" in out["tune_help"] and "--trials" in out["tune_help"]
    assert "--budget-mb" not in out["tune_help"]
    schemas = out["openapi"]["components"]["schemas"]
    assert "WidgetsRunIn" in schemas and set(schemas["WidgetsRunIn"]["properties"]) >= {"kind", "trials", "target"}
    assert "budget_mb" not in schemas["WidgetsRunIn"]["properties"]
    start = out["openapi"]["paths"]["/api/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"$ref": "#/components/schemas/WidgetsRunIn"} in start["oneOf"]
    assert "WidgetsRunSpec" in schemas  # a schedule's runs may be of it
    assert "widgets" in out["form_kinds"] and "widgets" in out["form_trials_for"]
    # its run's page is the generic one: no trial count (no trials), no kind's explanation of its result
    assert "Widgets run on t" in out["run_page"] and "widgets tuned" in out["run_page"]
    assert 'id="trials-done"' not in out["run_page"] and 'id="explain"' not in out["run_page"]


def test_the_listed_kinds_and_what_they_take():
    assert kinds.names() == ("knobs", "indexes", "rewrites", "all", "learned-index")
    assert [k.lifecycle for k in kinds.kinds()] == ["applied", "applied", "handed over", "applied", "handed over"]
    everything = all_options()
    for kind in kinds.kinds():
        assert issubclass(kind.plan, RunPlan) and kind.plan().kind == kind.name, kind.name  # its own plan class
        assert set(kind.options) <= set(everything), kind.name
        assert kind.default_optimizer is None or kind.default_optimizer in kind.optimizer_names()
        # each option's default is its field's (stated once; the REST schema and the forms show the option's),
        # and one name has one type in every kind that takes it (the CLI's runs start has one flag for it)
        options = kind.plan.options()
        assert {f.name: f.default for f in dataclasses.fields(kind.plan) if f.name in options} == \
            {name: o.default for name, o in options.items()}
        assert all(o.type == everything[name].type for name, o in options.items()), kind.name
    assert kinds.plan_of("all").trials == kinds.plan_of("knobs").trials  # a whole run's option is its part's
    assert kinds.plan_of("all").budget_mb is None and "budget_mb" in kinds.plan_of("indexes").required()
    whole = kinds.parse_plan({"kind": "all", "kinds": "knobs, indexes", "budget_mb": "", "max_statements": "4"})
    assert whole.kinds == ("knobs", "indexes") and whole.budget_mb is None and whole.optimizer is None
    with pytest.raises(AdvisorError, match="'views' cannot be part of a whole run"):
        kinds.parse_plan({"kind": "all", "kinds": "indexes,views"})
    with pytest.raises(AdvisorError, match="an indexes run needs budget_mb"):
        kinds.parse_plan({"kind": "indexes"})
    with pytest.raises(AdvisorError, match="registered already"):
        kinds.register(kinds.get("knobs"))
