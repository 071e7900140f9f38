"""What the benches ask of a database and its sandbox by name, on a real PostgreSQL: the database's size on disk,
planner statistics refreshed (tables with hostile names included), the sandbox's default database, and a DSN for
a login that works as printed (a password with quotes and spaces)."""

from __future__ import annotations

import psycopg
import pytest

from connectors import factory
from connectors.postgres import PostgresConnector
from tests.conftest import run, scalar

ODD = 'order "lines" it\'s'  # quotes and spaces in a table's name


def test_database_bytes_is_the_size_on_disk_and_grows_with_the_data(db):
    connector = PostgresConnector(db)
    empty = connector.database_bytes()
    assert empty == scalar(db, "SELECT pg_database_size(current_database())") and empty > 0
    run(db, "CREATE TABLE t (id int, note text)", "INSERT INTO t SELECT x, repeat('x', 100) FROM generate_series(1, 50000) x")
    assert connector.database_bytes() - empty >= 50000 * 100  # at least the rows' text


def test_analyze_refreshes_the_statistics_of_the_tables_named_or_of_all(db):
    quoted = psycopg.sql.Identifier(ODD).as_string(None)
    run(db, "CREATE TABLE a (id int)", f"CREATE TABLE {quoted} (id int)",
        "INSERT INTO a SELECT generate_series(1, 3000)", f"INSERT INTO {quoted} SELECT generate_series(1, 2000)")
    analyzed = "SELECT count(*) FROM pg_stat_user_tables WHERE relname = %s AND last_analyze IS NOT NULL"
    connector = PostgresConnector(db)
    connector.analyze([ODD])
    assert scalar(db, analyzed, (ODD,)) == 1 and scalar(db, analyzed, ("a",)) == 0
    assert scalar(db, "SELECT reltuples FROM pg_class WHERE relname = %s", (ODD,)) == 2000
    connector.analyze()
    assert scalar(db, analyzed, ("a",)) == 1
    assert scalar(db, "SELECT reltuples FROM pg_class WHERE relname = 'a'") == 3000


def test_a_sandbox_names_its_default_database_and_a_login_dsn_that_connects(pg):
    assert scalar(pg.dsn(pg.default_db), "SELECT current_database()") == pg.default_db
    own = pg.login_dsn(pg.default_db)
    assert factory.engine_of(own) == pg.engine and scalar(own, "SELECT current_user") == pg.user
    password = "it's a 'pass' word\\"
    pg.add_login("bench_login", password)
    dsn = pg.login_dsn(pg.default_db, "bench_login", password)
    assert scalar(dsn, "SELECT current_user") == "bench_login"
    wrong = pg.login_dsn(pg.default_db, "bench_login", "not it")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        scalar(wrong, "SELECT 1")
