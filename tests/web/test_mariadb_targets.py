"""MariaDB targets (``mysql://``) through the REST API and the targets page, against the session's real MariaDB
sandbox: registration, observation, the engine and server shown, and bad DSNs refused in one line (the
``app_client`` fixture fails a test whose responses ever carry the target's password)."""

from __future__ import annotations

import uuid

import pytest

from tests.connectors.mariadb.conftest import mrun
from tests.web.conftest import PASSWORD
from tests.web.logins import log_in


@pytest.fixture(scope="module")
def mshop(maria):
    """A MariaDB database with a table, a login that needs PASSWORD, and a statement run three times on it."""
    name = "web_" + uuid.uuid4().hex[:8]
    maria.create_database(name)
    maria.add_login("webshop", PASSWORD)
    dsn = f"mysql://webshop:{PASSWORD}@127.0.0.1:{maria.port}/{name}"
    mrun(dsn, "CREATE TABLE items (id INT PRIMARY KEY, price INT)", "INSERT INTO items SELECT seq, seq FROM seq_1_to_300",
         *(f"SELECT price FROM items WHERE id = {k}" for k in range(3)))
    return dsn


def test_register_and_observe_a_mariadb_target(app_client, tokens, mshop):
    client, _ = app_client
    op = tokens["operator"]
    made = client.post("/api/targets", json={"name": "mshop", "dsn": mshop}, headers=op)
    assert made.status_code == 201, made.text
    target = made.json()
    assert target["engine"] == "mariadb" and target["dsn"].startswith("mysql://webshop@127.0.0.1:")
    assert target["last_summary"]["server"].startswith("MariaDB 10.")
    snap = client.post("/api/targets/mshop/observe", headers=op)
    assert snap.status_code == 201, snap.text
    assert snap.json()["summary"]["database"] == mshop.rsplit("/", 1)[1]
    listed = client.get("/api/targets", headers=tokens["viewer"]).json()["items"]
    assert [(t["name"], t["engine"]) for t in listed] == [("mshop", "mariadb")]
    # nightly jobs: knobs auto-applied only from the target's own catalog (MariaDB's variables, not PostgreSQL's)
    nightly = {"target": "mshop", "cron": "0 2 * * *", "runs": [{"kind": "knobs"}], "auto_apply": "reload_knobs"}
    made = client.post("/api/schedules", json={**nightly, "auto_apply_knobs": ["sort_buffer_size"]}, headers=op)
    assert made.status_code == 201, made.text
    refused = client.post("/api/schedules", json={**nightly, "auto_apply_knobs": ["work_mem"]}, headers=op)
    assert refused.status_code == 400 and "work_mem" in refused.json()["message"], refused.text
    # the page shows the engine and its server as the connector names them, never PostgreSQL's wording
    assert log_in(client, op["Authorization"].split()[1]).status_code == 303
    page = client.get("/")
    assert page.status_code == 200
    card = page.text[page.text.index('id="target-mshop"'):]
    assert ">mariadb<" in card and "<dd" in card and "MariaDB 10." in card.split("</dl>")[0]
    assert "performance_schema" in page.text and "mariadb://" in page.text  # the form's hint shows both engines


@pytest.mark.parametrize("wrong, status, says", [
    ("mysql://webshop:not-{secret}@127.0.0.1:{port}/{db}", 400, "Access denied"),
    ("mysql://webshop:{secret}@127.0.0.1:1/{db}", 400, "cannot connect to 127.0.0.1:1/"),
    ("mysql://webshop:{secret}@[::1/{db}", 400, "invalid DSN"),
    ("mysql://webshop:{secret}@127.0.0.1:{port}/{db}\x00", 422, "control character"),
    # issue 42 item 13: an unknown character set was a 500 (an AttributeError inside the driver)
    ("mysql://webshop:{secret}@127.0.0.1:{port}/{db}?charset=bogus", 400, "invalid DSN: charset"),
    ("mysql://webshop:{secret}@127.0.0.1:{port}/{db}?read_timeout=soon", 400, "invalid DSN: read_timeout"),
    # item 5: a line break in the user name (an option line for the dump's option file) is refused as it is parsed
    ("mysql://dba%22%0Alog-error%3Dx:{secret}@127.0.0.1:{port}/{db}", 400, "the user holds a control character"),
])
def test_a_bad_mysql_dsn_is_refused_without_the_password(app_client, tokens, maria, mshop, wrong, status, says):
    client, _ = app_client
    dsn = wrong.format(secret=PASSWORD, port=maria.port, db=mshop.rsplit("/", 1)[1])
    res = client.post("/api/targets", json={"name": "bad", "dsn": dsn}, headers=tokens["operator"])
    assert res.status_code == status, res.text
    message = res.json()["message"]
    assert says in message and "\n" not in message and "Traceback" not in message
    assert client.get("/api/targets", headers=tokens["viewer"]).json()["items"] == []
