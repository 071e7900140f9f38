"""Schemathesis against the OpenAPI schema: generated requests to every route (except registering a target,
which would dial whatever host the generator invents) get documented status codes and bodies, never a 500."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from web.main import create_app


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schema")
    mp = pytest.MonkeyPatch()
    mp.setenv("ADVISOR_KEY_FILE", str(tmp / "secret.key"))
    app = create_app(str(tmp / "advisor.duckdb"))
    with TestClient(app):  # runs the lifespan: store, executor, scheduler
        _, secret = app.state.service.create_token("schemathesis", "operator")
        yield app, secret
    mp.undo()


@pytest.fixture(scope="module")
def api_schema(api):
    app, _ = api
    return schemathesis.openapi.from_asgi("/api/openapi.json", app)


def test_api_conforms_to_its_schema(api, api_schema):
    # schemathesis's pytest plugin does not run under this pytest; its strategies are driven directly instead
    _, secret = api
    checked = 0
    for result in api_schema.get_all_operations():
        op = result.ok()
        if op.method.upper() == "POST" and op.path == "/api/targets":
            continue

        @given(case=op.as_strategy())
        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                  derandomize=True)
        def check(case):
            case.call_and_validate(headers={"Authorization": f"Bearer {secret}"})

        check()
        checked += 1
    assert checked >= 15
