"""Issue 42 item 5 on PostgreSQL: a DSN part (user, password, host, database, an option) holding a control character
is refused when parsed, in both DSN forms, naming the part and never repeating it; quotes, backslashes and ``#`` in
a real login's name and password reach the server as they are, for the advisor's connections and for pg_dump."""

from __future__ import annotations

from urllib.parse import quote

import psycopg
import pytest

from advisor.core.errors import TargetUnreachable
from connectors import factory
from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST

ODD_USER = "dba\"#'\\x"
ODD_PASSWORD = "p\"w#'\\z \\'"


def keyword(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.parametrize("part", ["user", "password", "host", "dbname", "options"])
@pytest.mark.parametrize("bad", ["\n", "\r", "\x1b", "\t"])
def test_a_control_character_in_any_part_is_refused(part, bad):
    value = f'dba"{bad}log-error="/tmp/x"'
    parts = {"host": "127.0.0.1", "port": "1", "user": "u", "password": "pw", "dbname": "shop", part: value}
    as_url = (f"postgresql://{quote(parts['user'], safe='')}:{quote(parts['password'], safe='')}@"
              f"{quote(parts['host'], safe='')}:1/{quote(parts['dbname'], safe='')}"
              + (f"?options={quote(parts['options'], safe='')}" if part == "options" else ""))
    as_pairs = " ".join(f"{k}={keyword(v)}" for k, v in parts.items())
    for dsn in (as_pairs, as_url):
        if part == "host" and dsn is as_url:
            continue  # libpq does not percent-decode a URL's host: a %0A there is no line break
        with pytest.raises(TargetUnreachable, match=f"invalid DSN: the {part} holds a control character") as e:
            factory.connector(dsn)
        assert "log-error" not in e.value.message and "\n" not in e.value.message


@pytest.fixture(scope="module")
def odd_login():
    """A server of its own where a login with a quote, a hash and a backslash in its name must give its password."""
    with PostgresSandbox("oddlogin", settings=FAST) as sandbox:
        sandbox.create_database("shop")
        with psycopg.connect(sandbox.dsn(), autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
                psycopg.sql.Identifier(ODD_USER), psycopg.sql.Literal(ODD_PASSWORD)))
        with psycopg.connect(sandbox.dsn("shop"), autocommit=True) as conn:
            conn.execute("CREATE TABLE items (id int PRIMARY KEY)")
            conn.execute("INSERT INTO items SELECT generate_series(1, 50)")
        hba = sandbox.data / "pg_hba.conf"
        hba.write_text("host all all 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        with psycopg.connect(sandbox.dsn(), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
        yield sandbox


def test_a_login_with_quotes_backslashes_and_a_hash_connects_and_is_copied_from(odd_login):
    url = f"postgresql://{quote(ODD_USER, safe='')}:{quote(ODD_PASSWORD, safe='')}@127.0.0.1:{odd_login.port}/shop"
    pairs = f"host=127.0.0.1 port={odd_login.port} dbname=shop user={keyword(ODD_USER)} password={keyword(ODD_PASSWORD)}"
    for dsn in (url, pairs):
        with factory.connect(dsn) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == ODD_USER
    with factory.clone(factory.connector(url)) as shadow, factory.connect(shadow.dsn) as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 50
