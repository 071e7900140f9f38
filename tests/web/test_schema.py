"""Schemathesis against the OpenAPI schema: generated requests to every route (except registering a target,
which would dial whatever host the generator invents) get documented status codes and bodies, never a 500."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

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
            # not schemathesis's ignored_auth probe (now that the document declares the bearer scheme): each probe
            # is a failed login, whose answer the server holds longer every time (test_login_security covers it);
            # nor its positive-data check: a schema-valid plan may still name what does not exist (a key source, an
            # operation mix, a knob), which is a documented 400 with the error document, checked all the same
            case.call_and_validate(headers={"Authorization": f"Bearer {secret}"},
                                   excluded_checks=[ignored_auth, positive_data_acceptance])

        check()
        checked += 1
    assert checked >= 15


# --- boundary values for every parameter of every route -----------------------------------------------------------

RAW = "\x00raw:"  # a JSON literal that json.dumps cannot write: sent as is
NUMBERS = (10**30, -(10**30), -1, 0, 1.5, -0.0, f"{RAW}1e400", f"{RAW}-1e400", f"{RAW}NaN", f"{RAW}Infinity")
TEXTS = ("", " ", "x" * 100_000, "\x00", "a\x00b", "\u00e9\u4e2d\U0001f600", "' OR 1=1 --", "../../etc/passwd",
         "%00", "\u202e", "-1", "99999999999999999999")
OTHERS = (None, True, [], {}, ["x"], {"x": 1})
QUERY = ("99999999999999999999999999", "-1", "-99999999999999999999", "0", "1e400", "-1e400", "1.5", "NaN", "inf",
         "", " ", "x" * 10_000, "\x00", "\u00e9\u4e2d", "%", "true", "[]")
PATH = ("x" * 10_000, "\x00", "a\x00b", "..", "\u00e9\u4e2d\U0001f600", "%", "' OR 1=1 --", "-1",
        "99999999999999999999", " ", "\\")


def _dumps(body) -> str:
    text = json.dumps(body)
    return re.sub(r'"\\u0000raw:([^"]*)"', r"\1", text)


def _resolve(doc: dict, schema: dict) -> list[dict]:
    """The object schemas a request body may be (each branch of a oneOf/anyOf, $refs followed)."""
    if "$ref" in schema:
        return _resolve(doc, doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    if "oneOf" in schema or "anyOf" in schema:
        return [s for branch in schema.get("oneOf", schema.get("anyOf")) for s in _resolve(doc, branch)]
    return [schema] if schema.get("type") == "object" else []


def _sample(doc: dict, schema: dict):
    """A plausible value of ``schema`` (its const, default, first enum value, or one of its type)."""
    if "$ref" in schema or "oneOf" in schema or "anyOf" in schema:
        objects = _resolve(doc, schema)
        if objects:
            return _base(doc, objects[0])
        branch = next(b for b in schema.get("anyOf", schema.get("oneOf", [])) if b.get("type") != "null")
        return _sample(doc, branch)
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "array":
        return [_sample(doc, schema.get("items", {"type": "string"}))] * max(1, schema.get("minItems", 1))
    return {"integer": 1, "number": 1.0, "boolean": True, "object": {}}.get(kind, "x")


def _base(doc: dict, schema: dict) -> dict:
    return {name: _sample(doc, prop) for name, prop in schema.get("properties", {}).items()
            if name in schema.get("required", ())}


def _requests(doc: dict):
    """(method, url, body text or None) with one parameter at a boundary value, the rest plausible."""
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            params = op.get("parameters", [])
            in_path = {p["name"]: "nope" for p in params if p["in"] == "path"}

            def url(path_values, query=None):
                u = path.format(**{k: quote(v, safe="") for k, v in path_values.items()})
                return u + ("?" + urlencode(query) if query else "")

            for p in params:
                for value in (PATH if p["in"] == "path" else QUERY):
                    if p["in"] == "path":
                        yield method, url({**in_path, p["name"]: value}), None
                    elif p["in"] == "query":
                        yield method, url(in_path, {p["name"]: value}), None
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            if not content:
                continue
            for whole in (f"{RAW}1e400", "x", [], None, {}):
                yield method, url(in_path), _dumps(whole)
            for schema in _resolve(doc, content["schema"]):
                base = _base(doc, schema)
                for name in schema.get("properties", {}):
                    for value in NUMBERS + TEXTS + OTHERS:
                        yield method, url(in_path), _dumps({**base, name: value})


@pytest.fixture
def admin_client(tmp_path, monkeypatch):
    """A client of an app of its own (schemathesis's calls above run the app's lifespan again, which closes the
    store) and an admin token, so that the token routes are reached too."""
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    app = create_app(str(tmp_path / "advisor.duckdb"))
    with TestClient(app, raise_server_exceptions=False) as client:
        _, secret = app.state.service.create_token("boundaries", "admin")
        yield client, secret


def test_every_parameter_at_its_boundaries(admin_client):
    """Every parameter of every route (path, query, each field of each body) given huge and negative numbers,
    1e400, NaN, empty, NUL-bearing and very long strings, wrong types: a documented 4xx with the JSON error
    document (or a success), never a 500 or a traceback."""
    client, secret = admin_client
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    doc = client.get("/api/openapi.json").json()
    seen, failures = 0, []
    for method, url, body in _requests(doc):
        r = client.request(method.upper(), url, content=body, headers=headers)
        seen += 1
        problem = None
        if r.status_code >= 500 or "Traceback" in r.text:
            problem = "server error"
        elif r.status_code >= 400:
            problem = None if set(r.json()) == {"error", "message", "details"} else "not the error document"
        if problem:
            failures.append(f"{problem}: {method.upper()} {url[:120]} {(body or '')[:200]} -> {r.status_code} "
                            f"{r.text[:200]}")
    assert not failures, f"{len(failures)} of {seen}:\n" + "\n".join(failures[:20])
    assert seen > 1000
