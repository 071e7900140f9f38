"""What the benches ask of a MariaDB database and its sandbox by name, on a real server (one sandbox for the module,
made through ``connectors.factory`` with ``durable=False``): sizes on disk, the probe the fault benches watch and
disturb a server with (a session waiting on a held lock is seen and ended; a shared lock lets reads pass), the
sandbox's default database and a login DSN that works as printed with a hostile password (a wrong one is
refused), and what ``durable=False`` set."""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

from advisor.core.errors import AdvisorError, TargetUnreachable
from connectors import factory
from connectors.mariadb.connection import connect, parse_dsn
from tests.connectors.mariadb.conftest import mrows, mrun

ODD = "order `lines` it's"  # a backtick, a quote and blanks in a table's name
QUOTED = "`order ``lines`` it's`"


@pytest.fixture(scope="module")
def server():
    with factory.sandbox("mariadb", "bench-upkeep", {"innodb_buffer_pool_size": "64M"}, durable=False) as sandbox:
        yield sandbox


@pytest.fixture
def db(server):
    name = f"b{time.monotonic_ns()}"
    dsn = server.create_database(name)
    yield dsn
    mrun(server.dsn(), f"DROP DATABASE IF EXISTS `{name}`")


def test_sizes_on_disk_grow_with_the_data_and_a_table_s_leaves_its_indexes_out(db):
    connector = factory.connector(db)
    mrun(db, f"CREATE TABLE {QUOTED} (id int PRIMARY KEY, customer int, note varchar(300))")
    empty = connector.bench().database_bytes()
    assert empty > 0
    mrun(db, f"INSERT INTO {QUOTED} SELECT seq, seq % 100, REPEAT('x', 200) FROM seq_1_to_20000",
         f"CREATE INDEX by_customer ON {QUOTED} (customer)", f"ANALYZE TABLE {QUOTED}")
    data, index = mrows(db, "SELECT DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES "
                            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s", (ODD,))[0]
    assert connector.bench().table_bytes(ODD) == data >= 20000 * 200  # at least the rows' text, and not the index
    assert index > 0 and connector.bench().database_bytes() == data + index > empty
    assert connector.bench().table_bytes(ODD, parse_dsn(db)["database"]) == data
    with pytest.raises(AdvisorError, match="does not exist"):
        connector.bench().table_bytes("no_such_table")
    assert connector.bench().invalid_indexes() == []


def _read(dsn: str, box: dict) -> None:
    conn = connect(dsn)
    box["id"] = conn.thread_id()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM {QUOTED}")
            box["rows"] = cur.fetchone()[0]
    except pymysql.Error as e:
        box["error"] = e
    finally:
        conn.close()


def test_a_probe_sees_a_session_wait_on_its_lock_and_ends_that_session(db):
    mrun(db, f"CREATE TABLE {QUOTED} (id int)", f"INSERT INTO {QUOTED} VALUES (1)")
    connector = factory.connector(db)
    schema = parse_dsn(db)["database"]
    with connector.bench().probe() as holder, connector.bench().probe() as watcher:
        assert holder.lock(ODD, schema, readers_wait=True) == f"LOCK TABLES `{schema}`.{QUOTED} WRITE"
        box: dict = {}
        thread = threading.Thread(target=_read, args=(db, box), daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not (waiting := [s for s in watcher.sessions() if s.waiting_on_lock]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(waiting) == 1 and waiting[0].active and f"FROM {QUOTED}" in waiting[0].statement
        assert waiting[0].id == box["id"] and waiting[0].application == "pymysql"
        assert waiting[0].id not in {s.id for s in watcher.sessions() if not s.waiting_on_lock}
        assert watcher.terminate(waiting[0].id)
        thread.join(30)
        assert "rows" not in box and isinstance(box["error"], pymysql.err.OperationalError)  # dropped, not granted
        assert not watcher.terminate(waiting[0].id)  # gone or going: nothing left to end
        holder.release()
        # a shared lock: reads pass it, an index build waits for it
        assert holder.lock(ODD, readers_wait=False) == f"SELECT 1 FROM {QUOTED} LIMIT 1"
        box = {}
        _read(db, box)
        assert box["rows"] == 1
        builder = threading.Thread(target=lambda: mrun(db, f"CREATE INDEX by_id ON {QUOTED} (id)"), daemon=True)
        builder.start()
        deadline = time.monotonic() + 30
        while not (waiting := [s for s in watcher.sessions() if s.waiting_on_lock]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(waiting) == 1 and "CREATE INDEX" in waiting[0].statement
        holder.release()
        builder.join(30)
        assert not builder.is_alive()
    assert mrows(db, "SELECT count(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
                     "AND INDEX_NAME = 'by_id'") == [(1,)]


def test_the_sandbox_names_its_default_database_and_a_login_dsn_that_works_as_printed(server):
    assert mrows(server.dsn(server.default_db), "SELECT DATABASE()") == [(server.default_db,)]
    own = server.login_dsn(server.default_db)
    assert factory.engine_of(own) == server.engine
    assert mrows(own, "SELECT CURRENT_USER()") == [(f"{server.user}@127.0.0.1",)]
    password = "it's a 'pass' word\\ with @:/?# and %"
    server.add_login("bench_login", password)
    dsn = server.login_dsn(server.default_db, "bench_login", password)
    assert password not in dsn and parse_dsn(dsn)["password"] == password
    assert mrows(dsn, "SELECT CURRENT_USER()") == [("bench_login@127.0.0.1",)]
    own = factory.connector(dsn)  # the advisor's own connections log in with it too, into the database printed
    with own.session(10_000) as session:
        assert session.run("SELECT CURRENT_USER(), DATABASE()") == [("bench_login@127.0.0.1", server.default_db)]
    assert own.bench().database_bytes() == factory.connector(server.dsn(server.default_db)).bench().database_bytes()
    wrong = server.login_dsn(server.default_db, "bench_login", "not it")
    with pytest.raises(TargetUnreachable, match="Access denied") as refused:
        factory.connector(wrong).bench().database_bytes()
    assert "not it" not in str(refused.value)


def test_a_sandbox_not_durable_trades_crash_safety_for_speed_unless_its_settings_say_otherwise(server):
    assert mrows(server.dsn(), "SELECT @@innodb_flush_log_at_trx_commit, @@innodb_doublewrite, @@sync_binlog, "
                               "@@innodb_buffer_pool_size") == [(2, 0, 0, 64 * 2**20)]
    with factory.sandbox("mariadb", "durable-said", {"innodb_flush_log_at_trx_commit": "1"}, durable=False) as sb:
        assert mrows(sb.dsn(), "SELECT @@innodb_flush_log_at_trx_commit, @@innodb_doublewrite") == [(1, 0)]
