"""Fixtures: real PostgreSQL sandboxes started from the system's binaries (see connectors.postgres.sandbox), and one
MariaDB sandbox server for the session (``maria``, connectors.mariadb.sandbox) for every package's tests; TPC-H at
SF 0.01 loaded once in each (``tpch_dsn``, ``maria_tpch``)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from connectors import factory
from connectors.mariadb.sandbox import MariaDBSandbox
from connectors.postgres import PostgresConnector
from connectors.postgres.sandbox import PostgresSandbox
from workloads.datasets import tpch

FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


@pytest.fixture(scope="session")
def pg():
    """One server for the session; tests make their own databases in it."""
    with PostgresSandbox("test", settings=FAST) as sandbox:
        yield sandbox


@pytest.fixture(scope="session")
def maria():
    """One MariaDB server for the session (started on first use); tests make their own databases in it."""
    with MariaDBSandbox("test-maria", durable=False) as sandbox:
        yield sandbox


@pytest.fixture(scope="session")
def tpch_dsn(pg):
    """TPC-H at scale 0.01 (about 10 MB), loaded once."""
    dsn = pg.create_database("tpch")
    tpch.load(factory.connector(dsn), 0.01)
    return dsn


@pytest.fixture(scope="session")
def maria_tpch(maria):
    """TPC-H at scale 0.01 (the smallest whose partsupp keys are unique) on the session's MariaDB server, loaded
    once through the connector: the DSN of its database ``tpch``."""
    dsn = maria.create_database("tpch")
    tpch.load(maria.connector("tpch"), 0.01)
    return dsn


@pytest.fixture
def db(pg):
    """A fresh, empty database (with the advisor's extensions) for one test."""
    return pg.create_database("t_" + uuid.uuid4().hex[:10])


@pytest.fixture
def restartable(pg):
    """A server of its own that tests may restart and reconfigure, with a connector that can restart it."""
    with PostgresSandbox("restart", settings=FAST) as sandbox:
        yield sandbox, PostgresConnector(sandbox.dsn(), restart=sandbox.restart)


def run(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def scalar(dsn: str, query: str, params: tuple = ()):
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, params or None).fetchone()[0]
