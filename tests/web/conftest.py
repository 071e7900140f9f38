"""Fixtures for the server: the real app over a store in tmp, tokens of both roles, a registered target with a
workload whose validated recommendation is an index (a lookup on an unindexed column of 200,000 rows)."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from tests.conftest import run
from web.main import create_app

PASSWORD = "s3cret-Pa55word-never-shown"


def lookup_workload(pg, dbname: str) -> str:
    """A database with 200,000 orders and 40 lookups by the unindexed ``customer``; its DSN with a password."""
    dsn = pg.create_database(dbname)
    run(dsn, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'advisor_web') THEN "
             f"CREATE ROLE advisor_web LOGIN SUPERUSER PASSWORD '{PASSWORD}'; END IF; END $$",
        "CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, note text)",
        "INSERT INTO orders SELECT x, x % 20000, repeat('x', 40) FROM generate_series(1, 200000) x",
        "ANALYZE orders", "SELECT pg_stat_statements_reset()")
    for c in range(40):
        run(dsn, f"SELECT id, note FROM orders WHERE customer = {c * 7}")
    port = dsn.split("port=")[1].split()[0]
    return f"host=127.0.0.1 port={port} dbname={dbname} user=advisor_web password={PASSWORD}"


@pytest.fixture(scope="module")
def prod(pg):
    """A 'production' database (its own per test module) with a password in its DSN and a lookup workload."""
    return lookup_workload(pg, "prod_" + uuid.uuid4().hex[:8])


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


INDEX_RUN = {"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "rounds": 3}
