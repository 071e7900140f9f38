"""What the benches ask of a database and its sandbox by name, on a real PostgreSQL: the database's size on disk,
planner statistics refreshed (tables with hostile names included), the sandbox's default database, and a DSN for
a login that works as printed (a password with quotes and spaces); the probe the fault benches watch and disturb
a server with (sessions, a lock held, a session ended), invalid indexes and a table's own size."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from connectors import factory
from connectors.postgres import PostgresConnector
from tests.conftest import run, scalar

ODD = 'order "lines" it\'s'  # quotes and spaces in a table's name


def test_database_bytes_is_the_size_on_disk_and_grows_with_the_data(db):
    connector = PostgresConnector(db)
    empty = connector.bench().database_bytes()
    assert empty == scalar(db, "SELECT pg_database_size(current_database())") and empty > 0
    run(db, "CREATE TABLE t (id int, note text)", "INSERT INTO t SELECT x, repeat('x', 100) FROM generate_series(1, 50000) x")
    assert connector.bench().database_bytes() - empty >= 50000 * 100  # at least the rows' text


def test_analyze_refreshes_the_statistics_of_the_tables_named_or_of_all(db):
    quoted = psycopg.sql.Identifier(ODD).as_string(None)
    run(db, "CREATE TABLE a (id int)", f"CREATE TABLE {quoted} (id int)",
        "INSERT INTO a SELECT generate_series(1, 3000)", f"INSERT INTO {quoted} SELECT generate_series(1, 2000)")
    analyzed = "SELECT count(*) FROM pg_stat_user_tables WHERE relname = %s AND last_analyze IS NOT NULL"
    connector = PostgresConnector(db)
    connector.loader().analyze([ODD])
    assert scalar(db, analyzed, (ODD,)) == 1 and scalar(db, analyzed, ("a",)) == 0
    assert scalar(db, "SELECT reltuples FROM pg_class WHERE relname = %s", (ODD,)) == 2000
    connector.loader().analyze()
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


def test_a_probe_sees_a_session_wait_on_its_lock_and_ends_that_session(db):
    quoted = psycopg.sql.Identifier(ODD).as_string(None)
    run(db, f"CREATE TABLE {quoted} (id int)", f"INSERT INTO {quoted} VALUES (1)")
    connector = PostgresConnector(db)
    with connector.bench().probe() as holder, connector.bench().probe() as watcher:
        taken = holder.lock(ODD, "public", readers_wait=True)
        assert taken == f'LOCK TABLE "public".{quoted} IN ACCESS EXCLUSIVE MODE'
        # the simple query protocol: the server shows the statement before it parses it (and waits in parsing)
        reader = psycopg.connect(db, autocommit=True, cursor_factory=psycopg.ClientCursor)
        box: dict = {}
        thread = threading.Thread(target=lambda: box.update(e=_read(reader, quoted)), daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not (waiting := [s for s in watcher.sessions() if s.waiting_on_lock]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(waiting) == 1 and waiting[0].active and f"FROM {quoted}" in waiting[0].statement
        assert waiting[0].id not in {s.id for s in watcher.sessions() if not s.waiting_on_lock}
        assert watcher.terminate(waiting[0].id)
        thread.join(30)
        assert isinstance(box["e"], psycopg.OperationalError)  # its connection was dropped, not its lock granted
        holder.release()
        assert holder.lock(ODD, readers_wait=False).endswith("IN SHARE UPDATE EXCLUSIVE MODE")  # reads pass it:
        reader.close()
        assert scalar(db, f"SELECT count(*) FROM {quoted}") == 1
    assert connector.bench().invalid_indexes() == []


def _read(conn, quoted):
    try:
        conn.execute(f"SELECT * FROM {quoted}").fetchall()
    except psycopg.Error as e:
        return e
    return None


def test_table_bytes_counts_the_rows_without_the_indexes(db):
    run(db, "CREATE TABLE t (id int PRIMARY KEY, note text)",
        "INSERT INTO t SELECT x, repeat('y', 200) FROM generate_series(1, 20000) x")
    connector = PostgresConnector(db)
    assert connector.bench().table_bytes("t") == scalar(db, "SELECT pg_relation_size('t')") >= 20000 * 200
    assert connector.bench().table_bytes("t", "public") == connector.bench().table_bytes("t")


def test_an_interrupted_concurrent_build_is_listed_as_an_invalid_index(db):
    run(db, "CREATE TABLE t (id int)", "INSERT INTO t VALUES (1), (1)")
    with pytest.raises(psycopg.errors.UniqueViolation):
        run(db, "CREATE UNIQUE INDEX CONCURRENTLY t_id_unique ON t (id)")
    assert PostgresConnector(db).bench().invalid_indexes() == ["t_id_unique"]


def test_a_sandbox_not_durable_trades_crash_safety_for_speed_unless_its_settings_say_otherwise():
    with factory.sandbox(factory.DEFAULT_ENGINE, "not-durable", {"synchronous_commit": "on"}, durable=False) as sb:
        assert scalar(sb.dsn(), "SHOW fsync") == "off" and scalar(sb.dsn(), "SHOW synchronous_commit") == "on"
