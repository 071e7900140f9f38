"""Fixtures of the MariaDB tests: ONE sandbox server for the whole session (``maria``), a fresh database on it per
test (``mdb``, its DSN), and small helpers that run SQL as an application would (PyMySQL, outside the advisor)."""

from __future__ import annotations

import itertools

import pymysql
import pytest

from connectors.mariadb.sandbox import MariaDBSandbox

_names = itertools.count()


@pytest.fixture(scope="session")
def maria():
    with MariaDBSandbox("test-maria") as sandbox:
        yield sandbox


@pytest.fixture
def mdb(maria):
    name = f"t{next(_names)}"
    dsn = maria.create_database(name)
    yield dsn
    mrun(maria.dsn(), f"DROP DATABASE IF EXISTS `{name}`")


def _conn(dsn: str) -> pymysql.connections.Connection:
    from connectors.mariadb.connection import parse_dsn

    p = parse_dsn(dsn)
    return pymysql.connect(host=p["host"], port=p["port"], user=p["user"], password=p.get("password", ""),
                           database=p["database"] or None, autocommit=True)


def mrun(dsn: str, *statements: str) -> None:
    """Run statements as an application (not the advisor) would."""
    with _conn(dsn) as conn, conn.cursor() as cur:
        for s in statements:
            cur.execute(s)


def mrows(dsn: str, query: str, args: tuple | None = None) -> list[tuple]:
    with _conn(dsn) as conn, conn.cursor() as cur:
        cur.execute(query, args)
        return [tuple(r) for r in cur.fetchall()]
