"""The API's docs work offline (every asset they load is served by the app itself) and every time in a REST
answer is ISO-8601 UTC, stated as ``format: date-time`` in the OpenAPI document (the browser tests load the docs
with every other host blocked)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from pydantic import BaseModel, ValidationError

from advisor.core.domain import Recommendation
from advisor.core.inputs import new_id
from web.times import Timestamp, utc

T0 = 1_790_000_000.25  # 2026-09-21T14:13:20.250000Z


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def asset_urls(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)


@pytest.mark.parametrize("path, loads", [("/api/docs", "swagger-ui-bundle.js"), ("/api/redoc", "redoc.standalone.js")])
def test_docs_pages_load_only_local_assets(app_client, path, loads):
    client, _ = app_client
    r = client.get(path)
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    urls = asset_urls(r.text)
    assert any(u.endswith(loads) for u in urls), urls
    assert "cdn" not in r.text and "fonts.googleapis" not in r.text
    policy = dict(p.strip().split(" ", 1) for p in r.headers["content-security-policy"].split(";"))
    assert "http" not in r.headers["content-security-policy"]  # no other host, for whatever a script asks
    assert policy["default-src"] == policy["img-src"].split()[0] == "'self'"
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), f"{path} loads {url} from another host"
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 100, url


def test_docs_redirect_and_favicon(app_client):
    client, _ = app_client
    r = client.get("/docs", follow_redirects=False)
    assert r.status_code in (307, 308) and r.headers["location"] == "/api/docs"
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.lstrip().startswith("<svg")
    login = client.get("/login").text
    assert '<link rel="icon" href="/favicon.ico"' in login and 'href="/api/docs"' in login


def test_the_api_declares_its_bearer_token_and_the_docs_try_routes_with_one(app_client, tokens):
    """Issue 44, item 10: /api/docs had no Authorize button (no security scheme in the OpenAPI document), so "Try
    it out" answered 401; every route but the health check declares the bearer token now, the docs keep a token
    given to Authorize over a reload, and both docs pages lead back to the web UI."""
    client, _ = app_client
    doc = client.get("/api/openapi.json").json()
    scheme = doc["components"]["securitySchemes"]["token"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "advisor tokens create" in scheme["description"]
    operations = {(path, method): op for path, ops in doc["paths"].items() for method, op in ops.items()}
    open_ones = [key for key, op in operations.items() if op.get("security") != [{"token": []}]]
    assert open_ones == [("/api/health", "get")]
    assert ("/api/recommendations/{rec_id}/approve", "post") in operations
    # what Swagger sends once authorized: the declared scheme, as a header
    assert client.get("/api/targets", headers=tokens["viewer"]).status_code == 200
    assert client.get("/api/targets").status_code == 401
    swagger, redoc = client.get("/api/docs").text, client.get("/api/redoc").text
    assert '"persistAuthorization": false' in swagger  # a token is never kept in the browser's storage
    for page in (swagger, redoc):
        bar = page[page.index('<nav id="advisor-bar"'):page.index("</nav>")]
        assert '<a href="/">&larr; db-advisor web UI</a>' in bar and "Authorize" in bar
    assert '<a href="/api/docs">try the routes</a>' in redoc


def time_fields(schema: dict) -> list[tuple[str, str, dict]]:
    """(model, field, property schema) of every property named at or *_at in the document's components."""
    out = []
    for model, s in schema["components"]["schemas"].items():
        for name, prop in s.get("properties", {}).items():
            if name == "at" or name.endswith("_at"):
                out.append((model, name, prop))
    return out


def test_openapi_states_every_time_as_date_time(app_client):
    client, _ = app_client
    fields = time_fields(client.get("/api/openapi.json").json())
    names = {(m, f) for m, f, _ in fields}
    assert {("Run", "created_at"), ("AuditEntry", "at"), ("Schedule", "next_fire_at"),
            ("Token", "revoked_at"), ("Target", "last_observed_at")} <= names
    for model, name, prop in fields:
        options = prop.get("anyOf", [prop])
        assert {"type": "string", "format": "date-time"} in [{k: o.get(k) for k in ("type", "format")}
                                                             for o in options], (model, name, prop)
        assert not [o for o in options if o.get("type") == "number"], (model, name)


def test_rest_answers_give_times_as_iso_utc(app_client, tokens):
    client, service = app_client
    _, admin_secret = service.create_token("admin-1", "admin")
    admin = {"Authorization": f"Bearer {admin_secret}"}
    created = client.post("/api/tokens", json={"name": "ci-bot", "role": "viewer"}, headers=admin).json()
    stored = next(t for t in service.tokens() if t["id"] == created["id"])
    assert created["created_at"] == iso(stored["created_at"]) and created["created_at"].endswith("Z")
    revoked = client.delete("/api/tokens/ci-bot", headers=admin).json()
    assert revoked["revoked_at"] == iso(next(t for t in service.tokens() if t["id"] == created["id"])["revoked_at"])
    audit = client.get("/api/audit", headers=admin).json()["items"]
    assert audit and all(datetime.fromisoformat(a["at"]).tzinfo == timezone.utc for a in audit)

    # an applied recommendation: its apply and its watch (free-form objects) give their times the same way
    rec = Recommendation(new_id(), "t-1", "indexes", "extend", (), (), (), False, "applied", T0)
    service.store.add_recommendation(rec)
    service.store.set_applied(rec.id, {"at": T0 + 1, "by": "token:op", "apply_sql": [], "revert_sql": [],
                                       "watch": {"state": "watching", "started_at": T0 + 1, "window_s": 3600.0,
                                                 "min_calls": 20, "max_regression": 0.1, "statements": None,
                                                 "start": {}, "checks": 1, "ended_at": None, "note": "",
                                                 "last": {"at": T0 + 61, "ratio": 1.01, "statements": 2}}})
    body = client.get(f"/api/recommendations/{rec.id}", headers=tokens["viewer"]).json()
    assert body["created_at"] == iso(T0) == "2026-09-21T14:13:20.250000Z"
    assert body["applied"]["at"] == iso(T0 + 1)
    w = body["watch"]
    assert (w["started_at"], w["ends_at"], w["last"]["at"]) == (iso(T0 + 1), iso(T0 + 3601), iso(T0 + 61))
    assert w["ended_at"] is None and w["window_s"] == 3600.0  # durations stay seconds
    listed = client.get("/api/recommendations", headers=tokens["viewer"]).json()["items"]
    assert [r["created_at"] for r in listed if r["id"] == rec.id] == [iso(T0)]


class At(BaseModel):
    at: Timestamp


@pytest.mark.parametrize("given, expected", [
    ("2026-09-21T14:13:20.25Z", T0), ("2026-09-21T16:13:20.25+02:00", T0), ("2026-09-21T14:13:20.25", T0),
    (T0, T0)])
def test_inputs_take_iso_times(given, expected):
    assert At(at=given).at.timestamp() == expected and At(at=given).at.tzinfo == timezone.utc
    assert At.model_validate_json(At(at=given).model_dump_json()).at == utc(expected)


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01T00:00:00Z", float("nan"), True, [1]])
def test_a_bad_time_is_one_clear_error(bad):
    with pytest.raises(ValidationError) as e:
        At(at=bad)
    assert "ISO-8601" in str(e.value) or "time" in str(e.value)
