"""Hardening of logging in (issue 33), against the real app:

- the failed-login throttle keys on the address that connected: X-Forwarded-For is believed only from a proxy named
  in ADVISOR_TRUSTED_PROXIES (none by default), in the app and in the uvicorn that `advisor serve` runs;
- a token is checked before any wait: a valid one is never held, only failures are, counted per (address, token
  prefix) and per address, so a guesser does not slow other users at its address;
- the login form carries a CSRF token (a per-browser cookie echoed in a hidden field): a POST /login without it
  logs nobody in (login CSRF).

No test here measures time: the waits are asserted as the throttle computes them (and the audit records them).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import types
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from advisor.service.auth import LoginThrottle
from connectors.local import free_port
from tests.web.logins import log_in, login_csrf
from web.deps import SESSION_COOKIE
from web.main import create_app
from web.pages.auth import LOGIN_CSRF_COOKIE

HELD = [0.0] * 5 + [0.25, 0.5]  # the default throttle: 5 failures of an (address, prefix) free, then doubling


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def failures(service) -> list[dict]:
    return [a for a in service.audit_log() if a["action"] == "login_failed"]


def waits(service) -> list[float]:
    return [a["detail"]["wait_s"] for a in failures(service)]


@pytest.fixture
def proxied(tmp_path, monkeypatch):
    """(client, service) of an app whose trusted proxies are the test client ('testclient') and 10.0.0.0/8."""
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    monkeypatch.setenv("ADVISOR_TRUSTED_PROXIES", "testclient, 10.0.0.0/8")
    app = create_app(str(tmp_path / "advisor.duckdb"), scheduler=False)
    with TestClient(app) as client:
        yield client, app.state.service


# --- defect 3: X-Forwarded-For only from a configured proxy ------------------------------------------------------


def test_forwarded_for_is_not_believed_without_a_trusted_proxy(app_client, monkeypatch):
    monkeypatch.delenv("ADVISOR_TRUSTED_PROXIES", raising=False)  # the default (read at the app's first request)
    client, service = app_client
    for i in range(7):  # a local client rotating the header, over REST and the login form
        r = client.get("/api/runs", headers={**bearer(f"dba_gues{i}"), "X-Forwarded-For": f"203.0.113.{i}"})
        assert r.status_code == 401
    assert {a["actor"] for a in failures(service)} == {"client:testclient"}
    assert waits(service) == HELD  # held longer and longer all the same
    csrf = login_csrf(client)
    r = client.post("/login", data={"token": "dba_gues-form", "csrf": csrf}, headers={"X-Forwarded-For": "198.51.100.1"})
    assert r.status_code == 401
    assert failures(service)[-1]["actor"] == "client:testclient" and waits(service)[-1] == 1.0
    assert service.login_delay("203.0.113.7", "dba_gues7") == 0 < service.login_delay("testclient", "dba_gues7")


def test_forwarded_for_is_believed_from_a_trusted_proxy(proxied):
    client, service = proxied
    for i in range(7):
        r = client.get("/api/runs", headers={**bearer(f"dba_gues{i}"), "X-Forwarded-For": f"203.0.113.{i}"})
        assert r.status_code == 401
    assert [a["actor"] for a in failures(service)] == [f"client:203.0.113.{i}" for i in range(7)]
    assert waits(service) == [0.0] * 7  # seven clients, one failure each
    # what a client wrote itself, left of what the proxies appended, is not taken; trusted hops are skipped
    r = client.get("/api/runs", headers={**bearer("dba_x"), "X-Forwarded-For": "198.51.100.7, 203.0.113.9, 10.1.2.3"})
    assert r.status_code == 401 and failures(service)[-1]["actor"] == "client:203.0.113.9"
    r = client.get("/api/runs", headers=bearer("dba_y"))  # the proxy itself, without the header
    assert r.status_code == 401 and failures(service)[-1]["actor"] == "client:testclient"
    csrf = login_csrf(client)
    r = client.post("/login", data={"token": "dba_z", "csrf": csrf}, headers={"X-Forwarded-For": "[2001:db8::5]:4711"})
    assert r.status_code == 401 and failures(service)[-1]["actor"] == "client:2001:db8::5"


def _environ(tmp_path, **extra) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("ADVISOR_TARGET_DSN", "ADVISOR_TRUSTED_PROXIES")}
    return {**base, "ADVISOR_STORE": str(tmp_path / "advisor.duckdb"), "ADVISOR_KEY_FILE": str(tmp_path / "secret.key"),
            **extra}


def _request(port: int, method: str, path: str, headers: dict | None = None, body: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response, response.read().decode()
    finally:
        conn.close()


@contextmanager
def served(tmp_path, **env):
    """`advisor serve` (uvicorn, as run in production) on a free loopback port, until the block ends."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "serve", "--port", str(port), "--no-scheduler"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_environ(tmp_path, **env))
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                if _request(port, "GET", "/api/health")[0].status == 200:
                    break
            except OSError:
                assert time.monotonic() < deadline, "advisor serve did not answer within 90 s"
                time.sleep(0.3)
        yield port
    finally:
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 0, err


def _login_cookie(port: int, secret: str, headers: dict) -> str:
    """Log in through the form of the server on ``port``; the Set-Cookie of the session."""
    form, page = _request(port, "GET", "/login", headers)
    cookie = re.search(rf"{LOGIN_CSRF_COOKIE}=([^;]+)", form.getheader("set-cookie")).group(1)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    r, _ = _request(port, "POST", "/login", {**headers, "Cookie": f"{LOGIN_CSRF_COOKIE}={cookie}",
                                             "Content-Type": "application/x-www-form-urlencoded"},
                    f"token={secret}&csrf={csrf}")
    assert r.status == 303
    return next(v for k, v in r.getheaders() if k.lower() == "set-cookie" and v.startswith(SESSION_COOKIE))


def test_advisor_serve_believes_forwarded_headers_only_from_its_trusted_proxies(tmp_path):
    made = subprocess.run([sys.executable, "-m", "advisor", "tokens", "create", "--name", "root", "--role", "admin",
                           "--json"], capture_output=True, text=True, env=_environ(tmp_path), timeout=300)
    assert made.returncode == 0, made.stderr
    admin = bearer(json.loads(made.stdout)["secret"])
    forwarded = {"X-Forwarded-Proto": "https"}

    def audit(port: int) -> list[dict]:
        r, body = _request(port, "GET", "/api/audit?limit=500", admin)
        assert r.status == 200, body
        return [a for a in json.loads(body)["items"] if a["action"] == "login_failed"]

    with served(tmp_path) as port:  # no ADVISOR_TRUSTED_PROXIES: a local client rotating the header
        for i in range(7):
            r, _ = _request(port, "GET", "/api/runs", {**bearer(f"dba_gues{i}"), "X-Forwarded-For": f"203.0.113.{i}"})
            assert r.status == 401
        seen = audit(port)
        assert {a["actor"] for a in seen} == {"client:127.0.0.1"}
        assert sorted(a["detail"]["wait_s"] for a in seen) == HELD
        assert "Secure" not in _login_cookie(port, json.loads(made.stdout)["secret"], forwarded)

    with served(tmp_path, ADVISOR_TRUSTED_PROXIES="127.0.0.1") as port:  # a proxy on this host: believed
        for i in range(3):
            r, _ = _request(port, "GET", "/api/runs", {**bearer(f"dba_gues{i}"), "X-Forwarded-For": f"203.0.113.{i}"})
            assert r.status == 401
        seen = audit(port)[-3:]
        assert [a["actor"] for a in seen] == [f"client:203.0.113.{i}" for i in range(3)]
        assert [a["detail"]["wait_s"] for a in seen] == [0.0] * 3
        assert "Secure" in _login_cookie(port, json.loads(made.stdout)["secret"], forwarded)  # the proxy's https


# --- defect 4: check first, hold only failures, per (address, token prefix) --------------------------------------


def test_a_valid_token_is_not_held_after_failures_from_its_address(app_client, tokens, monkeypatch):
    monkeypatch.delenv("ADVISOR_TRUSTED_PROXIES", raising=False)
    client, service = app_client
    secret = tokens["viewer"]["Authorization"].split()[1]
    for i in range(7):
        assert client.get("/api/runs", headers=bearer(f"dba_gues{i}")).status_code == 401
    assert waits(service) == HELD
    assert service.login_delay("testclient", "dba_gues7") == 0.5  # what the guesser's failures are held
    # the valid token, from the same address: nothing to hold, answered, nothing recorded
    assert service.login_delay("testclient", secret) == 0.0
    assert client.get("/api/runs", headers=tokens["viewer"]).status_code == 200
    assert log_in(client, secret).status_code == 303
    assert client.get("/").status_code == 200
    assert len(failures(service)) == 7
    # the guesser's own next failure is held longer
    assert client.get("/api/runs", headers=bearer("dba_gues7")).status_code == 401
    assert waits(service)[-1] == 1.0 and service.login_delay("testclient", "dba_gues8") == 1.0
    # another user's mistyped token from the same address is not held for the guesser's failures
    assert client.get("/api/runs", headers=bearer("dba_typo-of-mine")).status_code == 401
    assert waits(service)[-1] == 0.0
    assert [a["actor"] for a in failures(service)] == ["client:testclient"] * 9  # still audited one by one


def test_a_valid_token_is_answered_at_once_even_from_an_address_that_is_held(app_client, tokens, monkeypatch):
    """Past the address's 50 failures every failure from it is held, whatever its prefix; the valid token is
    checked first and never waits (the holds are recorded, not timed)."""
    import web.deps

    monkeypatch.delenv("ADVISOR_TRUSTED_PROXIES", raising=False)
    held: list[float] = []

    async def record(seconds: float) -> None:
        held.append(seconds)

    monkeypatch.setattr(web.deps, "asyncio", types.SimpleNamespace(sleep=record))  # holds recorded, not slept
    client, service = app_client
    secret = tokens["operator"]["Authorization"].split()[1]
    for i in range(60):
        assert client.get("/api/runs", headers=bearer(f"dba_{i:04d}-guess")).status_code == 401
    assert held[-1] > 0 and service.login_delay("testclient", "dba_anything") > 0  # the address is held now
    held.clear()
    assert client.get("/api/runs", headers=tokens["operator"]).status_code == 200
    assert log_in(client, secret).status_code == 303
    assert held == []  # neither the REST call nor the login form waited
    assert client.get("/api/runs", headers=bearer("dba_9999-guess")).status_code == 401
    assert len(held) == 1 and held[0] > 0  # a failure is still held


def test_varying_the_prefix_of_guesses_does_not_escape_the_throttle():
    throttle = LoginThrottle()
    seen = [throttle.failed("10.0.0.9", f"dba_{i:04d}-guess", now=0) for i in range(120)]
    held = [wait for wait, _ in seen]
    assert held[:50] == [0.0] * 50  # each prefix once: free up to the address's 50 failures
    assert held[50:53] == [0.25, 0.5, 1.0] and held[-1] == 10.0
    assert [i for i, (_, audited) in enumerate(seen) if audited] == list(range(20)) + [99]  # the audit is sampled
    assert throttle.delay("10.0.0.9", "dba_fresh", now=1) == 10.0  # a further guess: held the most
    assert throttle.delay("10.0.0.8", "dba_fresh", now=1) == 0.0  # another address: nothing
    assert throttle.delay("10.0.0.9", "dba_fresh", now=1000) == 0.0  # the window ended


# --- login CSRF ----------------------------------------------------------------------------------------------------


def test_login_needs_the_forms_csrf_token(app_client, tokens):
    client, service = app_client
    secret = tokens["operator"]["Authorization"].split()[1]

    # a cross-site form: no cookie of ours (SameSite=Strict), whatever it puts in the field
    for data in ({"token": secret}, {"token": secret, "csrf": "A" * 32}):
        r = client.post("/login", data=data, follow_redirects=False)
        assert r.status_code == 403 and "CSRF token is missing or does not match" in r.text
        assert SESSION_COOKIE not in r.cookies and SESSION_COOKIE not in client.cookies
        client.cookies.clear()
    assert client.get("/", follow_redirects=False).status_code == 303  # still not logged in
    assert not [a for a in service.audit_log() if a["action"] == "login"] and not failures(service)

    # the form's token: a random value per browser, the same in its cookie and its hidden field
    page = client.get("/login")
    set_cookie = page.headers["set-cookie"]
    assert set_cookie.startswith(f"{LOGIN_CSRF_COOKIE}=") and "HttpOnly" in set_cookie
    assert "SameSite=strict" in set_cookie and "Path=/login" in set_cookie
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert client.cookies[LOGIN_CSRF_COOKIE] == csrf and len(csrf) >= 32
    assert login_csrf(client) == csrf  # kept for the browser
    other = TestClient(client.app)
    assert login_csrf(other) != csrf  # another browser: another token

    # the cookie with another browser's token in the field: refused too
    r = client.post("/login", data={"token": secret, "csrf": login_csrf(other)}, follow_redirects=False)
    assert r.status_code == 403 and SESSION_COOKIE not in client.cookies
    # the refusal shows the form again, with a token that works
    again = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    r = client.post("/login", data={"token": secret, "csrf": again}, follow_redirects=False)
    assert r.status_code == 303 and SESSION_COOKIE in client.cookies
    assert LOGIN_CSRF_COOKIE not in client.cookies  # used up: the next login gets a new one
    assert client.get("/", follow_redirects=False).status_code == 200
    assert [a["actor"] for a in service.audit_log() if a["action"] == "login"] == ["token:operator-1"]
