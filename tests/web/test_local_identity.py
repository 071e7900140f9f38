"""Issue 42 item 8: a DSN that logs in by the server's own OS identity (MariaDB's ``unix_socket``, where socket
authentication let an operator without a password in as MariaDB's root; a PostgreSQL socket directory, or no host
at all, where peer authentication does the same; a credential file of the server's) is refused over REST and the
UI, at registration and at a change of DSN, in one line; the command line, run by that OS user, may use one."""

from __future__ import annotations

import html
import re
import uuid

import pytest

from tests.web.logins import log_in

REFUSED = "logs in by the advisor server's own OS identity"


@pytest.fixture
def maria_socket(maria):
    """A database on the session's MariaDB, named through root's socket (socket authentication: no password)."""
    name = "sock_" + uuid.uuid4().hex[:8]
    maria.create_database(name)
    return f"mysql://root@localhost/{name}?unix_socket={maria.socket}"


def pg_socket(pg, dbname: str) -> str:
    return f"host={pg.run_dir} port={pg.port} user=postgres dbname={dbname}"


def test_a_socket_dsn_is_refused_over_rest(app_client, tokens, maria_socket, pg):
    client, _ = app_client
    op = tokens["operator"]
    db = pg.create_database("sock_" + uuid.uuid4().hex[:8]).split("dbname=")[1]
    for dsn in (maria_socket, pg_socket(pg, db), f"port={pg.port} user=postgres dbname={db}",
                f"postgresql://postgres@%2F{str(pg.run_dir).lstrip('/').replace('/', '%2F')}:{pg.port}/{db}",
                f"host=127.0.0.1 port={pg.port} user=postgres dbname={db} passfile=/root/.pgpass"):
        r = client.post("/api/targets", json={"name": "borrowed", "dsn": dsn}, headers=op)
        assert r.status_code == 400 and REFUSED in r.json()["message"], (dsn, r.text)
        assert "\n" not in r.json()["message"] and str(pg.run_dir) not in r.text
    assert client.get("/api/targets", headers=op).json()["items"] == []


def test_a_socket_dsn_is_refused_as_a_new_dsn_and_in_the_form(app_client, tokens, maria_socket, pg):
    client, _ = app_client
    op = tokens["operator"]
    dsn = pg.create_database("tcp_" + uuid.uuid4().hex[:8])
    assert client.post("/api/targets", json={"name": "tcp", "dsn": dsn}, headers=op).status_code == 201
    r = client.patch("/api/targets/tcp", json={"dsn": pg_socket(pg, dsn.split("dbname=")[1])}, headers=op)
    assert r.status_code == 400 and REFUSED in r.json()["message"], r.text
    r = client.patch("/api/targets/tcp", json={"dsn": maria_socket, "other_database": True}, headers=op)
    assert r.status_code == 400 and REFUSED in r.json()["message"], r.text
    assert "host=127.0.0.1" in client.get("/api/targets/tcp", headers=op).json()["dsn"]
    assert log_in(client, op["Authorization"].split()[1]).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    r = client.post("/targets", data={"name": "form", "dsn": maria_socket, "csrf": csrf}, follow_redirects=False)
    assert r.status_code == 400 and REFUSED in html.unescape(r.text)
    assert [t["name"] for t in client.get("/api/targets", headers=op).json()["items"]] == ["tcp"]


def test_the_command_line_may_use_the_socket(app_client, maria_socket):
    """The service called as the OS user (the CLI's principal) registers the socket target and observes it."""
    _, service = app_client
    target = service.add_target("by-socket", maria_socket)
    assert target["engine"] == "mariadb"
    assert service.observe_target("by-socket").snapshot_id
