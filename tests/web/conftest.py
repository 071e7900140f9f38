"""Fixtures for the server: the real app over a store in tmp, tokens of both roles, a registered target with a
workload whose validated recommendation is an index (``advisor.bench.playground``: lookups on an unindexed column of
200,000 rows)."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from advisor.bench.playground import create_shop
from web.main import create_app

PASSWORD = "s3cret-Pa55word-never-shown"


@pytest.fixture(scope="module")
def prod(pg):
    """A 'production' database (its own per test module) with a password in its DSN and a lookup workload."""
    return create_shop(pg, "prod_" + uuid.uuid4().hex[:8], password=PASSWORD)


class Recorder:
    """Every response body a test's client saw, to search for secrets."""

    def __init__(self):
        self.bodies: list[str] = []

    def __call__(self, response) -> None:
        response.read()
        self.bodies.append(f"{response.request.method} {response.request.url} {response.status_code} "
                           f"{dict(response.headers)} {response.text}")


@pytest.fixture
def app_client(tmp_path, monkeypatch):
    """(client, service) over a fresh store; the scheduler runs; runs execute on the background executor."""
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    app = create_app(str(tmp_path / "advisor.duckdb"))
    recorder = Recorder()
    with TestClient(app) as client:
        client.event_hooks["response"].append(recorder)
        yield client, app.state.service
    leaked = [b for b in recorder.bodies if PASSWORD in b]
    assert not leaked, f"the target's password appeared in a response: {leaked[0][:300]}"


@pytest.fixture
def tokens(app_client):
    _, service = app_client
    _, viewer = service.create_token("viewer-1", "viewer")
    _, operator = service.create_token("operator-1", "operator")
    return {"viewer": {"Authorization": f"Bearer {viewer}"}, "operator": {"Authorization": f"Bearer {operator}"}}


# tests approve, apply and roll back what this run validates: 7 rounds, so that one stalled round of a loaded
# machine cannot swing the verdict (with 3, a bootstrap resample is often mostly that round; loaded fresh-clone
# runs rejected it twice)
INDEX_RUN = {"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "rounds": 7}
