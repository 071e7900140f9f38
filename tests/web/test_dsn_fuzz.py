"""The DSN fuzz (``tests.dsn_fuzz``) against registering a target, over the REST API and the web form: every
answer is a 4xx (JSON for the API, a page for the form) or a registration, never a 500 or a traceback; no answer
holds the password, and no error repeats a value of the DSN it refuses."""

from __future__ import annotations

import re
import uuid

import pytest

from connectors.postgres.sandbox import free_port
from tests.dsn_fuzz import MARKER, VALUE, cases
from tests.web.logins import log_in


@pytest.fixture(scope="module")
def fuzz(pg):
    return cases(free_port(), pg.port)


def _problem(status: int, text: str, error: str) -> str | None:
    if status >= 500 or "Traceback" in text:
        return "server error"
    if MARKER in text:
        return "the password is in the answer"
    if VALUE in error:
        return "the error repeats a value of the DSN"
    return None


def test_register_target_api(app_client, tokens, fuzz):
    client, _ = app_client
    failures, registered = [], 0
    for i, dsn in enumerate(fuzz):
        r = client.post("/api/targets", json={"name": f"fuzz-{i}", "dsn": dsn}, headers=tokens["operator"])
        error = ""
        if r.status_code >= 400:
            body = r.json()
            if set(body) != {"error", "message", "details"} or not 400 <= r.status_code < 500:
                failures.append(f"{r.status_code} not a 4xx JSON error for {dsn[:100]!r}: {r.text[:200]}")
                continue
            error = body["message"]
        else:
            registered += 1
        problem = _problem(r.status_code, r.text, error)
        if problem:
            failures.append(f"{problem}: {dsn[:100]!r} -> {r.status_code} {r.text[:300]}")
    assert not failures, f"{len(failures)} of {len(fuzz)}:\n" + "\n".join(failures[:20])
    assert registered < len(fuzz) // 10  # the fuzz is about refused DSNs


def test_register_target_form(app_client, tokens, fuzz):
    client, _ = app_client
    secret = tokens["operator"]["Authorization"].split()[1]
    assert log_in(client, secret).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    failures = []
    for i, dsn in enumerate(fuzz):
        r = client.post("/targets", data={"name": f"form-{i}", "dsn": dsn, "csrf": csrf}, follow_redirects=False)
        if r.status_code != 303 and not 400 <= r.status_code < 500:
            failures.append(f"{r.status_code} for {dsn[:100]!r}: {r.text[:200]}")
            continue
        problem = _problem(r.status_code, r.text, r.text if r.status_code >= 400 else "")
        if problem:
            failures.append(f"{problem}: {dsn[:100]!r} -> {r.status_code} {r.text[-300:]}")
    assert not failures, f"{len(failures)} of {len(fuzz)}:\n" + "\n".join(failures[:20])


def test_update_target_api(app_client, tokens, fuzz, pg):
    """The same DSNs as a registered target's new DSN (PATCH): refused with a 4xx, the password nowhere."""
    client, _ = app_client
    dsn = pg.create_database("fuzz_" + uuid.uuid4().hex[:8])
    r = client.post("/api/targets", json={"name": "real", "dsn": dsn}, headers=tokens["operator"])
    assert r.status_code == 201, r.text
    failures = []
    for dsn in fuzz:
        r = client.patch("/api/targets/real", json={"dsn": dsn}, headers=tokens["operator"])
        if not 400 <= r.status_code < 500 or set(r.json()) != {"error", "message", "details"}:
            failures.append(f"{r.status_code} not a 4xx JSON error for {dsn[:100]!r}: {r.text[:200]}")
            continue
        problem = _problem(r.status_code, r.text, r.json()["message"])
        if problem:
            failures.append(f"{problem}: {dsn[:100]!r} -> {r.status_code} {r.text[:300]}")
    assert not failures, f"{len(failures)} of {len(fuzz)}:\n" + "\n".join(failures[:20])
