"""A target with an applied change cannot be removed (issue 42, item 6), through the faces, on both engines against
real servers: ``DELETE /api/targets/{id}`` answers 409 naming the applied recommendation, the CLI's ``targets
remove`` says so in one line and exits 1; the target stays, and once the change is rolled back it can be removed."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from advisor.cli.main import main
from advisor.core.domain import IndexChange
from tests.advisor.service.test_change_ownership import db, recommend  # noqa: F401
from web.main import create_app


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.setenv("ADVISOR_STORE", str(tmp_path / "advisor.duckdb"))
    return str(tmp_path / "advisor.duckdb")


def test_a_target_with_an_applied_change_is_not_removed_over_rest_nor_by_the_cli(db, env, capsys):
    app = create_app(env, scheduler=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        service = app.state.service
        _, secret = service.create_token("admin-1", "admin")
        admin = {"Authorization": f"Bearer {secret}"}
        target_id = service.add_target("shop", db.dsn)["id"]
        rec = recommend(service, db, (IndexChange(db.schema, "orders", ("customer_id",)),))
        service.apply(rec.id)
        r = client.delete(f"/api/targets/{target_id}", headers=admin)
        assert r.status_code == 409, r.text
        assert r.json()["error"] == "conflict" and rec.id in r.json()["message"]
        assert "\n" not in r.json()["message"]
        assert client.get(f"/api/targets/{target_id}", headers=admin).status_code == 200
    assert main(["targets", "remove", "shop"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and rec.id in err and len(err.splitlines()) == 1, err
    assert main(["recommendations", "rollback", rec.id]) == 0
    assert main(["targets", "remove", "shop"]) == 0
