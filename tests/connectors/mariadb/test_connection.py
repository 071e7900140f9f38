"""MariaDB DSNs (mysql:// and mariadb://): parsing, redaction, no password in any error; ``quote`` with hostile
identifiers in real tables; the session: timeout, cancel, one statement only, the server's message."""

from __future__ import annotations

import threading
import time

import pytest

from advisor.core.errors import StatementFailed, StatementTimeout, TargetUnreachable
from connectors import factory
from connectors.local import free_port
from connectors.mariadb.connection import connect, parse_dsn, quote, redact, target_name
from tests.connectors.mariadb.conftest import mrows, mrun

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize("dsn, expected", [
    (f"mysql://bob:{SECRET}@db.example:3307/shop", ("bob", SECRET, "db.example", 3307, "shop")),
    ("mariadb://db.example/shop", ("root", None, "db.example", 3306, "shop")),
    ("MySQL://bob:p%2Fw%40x@127.0.0.1/sh%20op", ("bob", "p/w@x", "127.0.0.1", 3306, "sh op")),
])
def test_dsns_are_parsed(dsn, expected):
    p = parse_dsn(dsn)
    assert (p["user"], p.get("password"), p["host"], p["port"], p["database"]) == expected
    assert "password" not in redact(dsn) and (p.get("password") or "\0") not in redact(dsn)


@pytest.mark.parametrize("dsn", [
    f"mysql://bob:{SECRET}@db:abc/shop", f"mysql://bob:{SECRET}/x@db/shop", f"mysql://bob:{SECRET}@db/shop?bogus=1",
    f"mysql://bob:{SECRET}@db/shop?connect_timeout=x", f"mysql://bob:{SECRET}\x00@db/shop",
    f"mysql://bob:{SECRET}@db:99999999/shop", f"mysql://bob:{SECRET}@db/a/b"])
def test_a_malformed_dsn_is_one_line_without_the_password(dsn):
    with pytest.raises(TargetUnreachable) as e:
        factory.connector(dsn)
    assert SECRET not in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("invalid DSN")
    assert SECRET not in factory.redact(dsn)


def test_unreachable_and_refused_logins_say_why_without_the_password(maria):
    with pytest.raises(TargetUnreachable, match=r"cannot connect to 127\.0\.0\.1:\d+/shop: .*Can't connect") as e:
        connect(f"mysql://bob:{SECRET}@127.0.0.1:{free_port()}/shop")
    assert SECRET not in str(e.value)
    with pytest.raises(TargetUnreachable, match="Access denied for user 'bob'") as e:
        connect(f"mysql://bob:{SECRET}@127.0.0.1:{maria.port}/mysql")
    assert SECRET not in str(e.value)
    assert target_name(f"mysql://bob:{SECRET}@127.0.0.1:{maria.port}/mysql") == f"127.0.0.1:{maria.port}/mysql"


HOSTILE = ["we`ird", "it's", 'dq"x', "two words", "naïve_表", "`; DROP TABLE x; --", "a``b"]


def test_quote_keeps_hostile_identifiers_whole_in_real_tables(mdb):
    for i, name in enumerate(HOSTILE):
        mrun(mdb, f"CREATE TABLE {quote(name)} ({quote(name + 'c')} int, {quote('k ' + name)} int)",
             f"INSERT INTO {quote(name)} VALUES ({i}, {i + 1})")
    c = factory.connector(mdb)
    assert {t for (_s, t) in c.table_columns()} == set(HOSTILE)
    for i, name in enumerate(HOSTILE):
        assert c.table_columns()[(parse_dsn(mdb)["database"], name)] == (name + "c", "k " + name)
        assert mrows(mdb, f"SELECT {quote(name + 'c')} FROM {quote(name)}") == [(i,)]
    with pytest.raises(ValueError):
        quote("nul\x00byte")


def test_a_session_runs_one_statement_and_reports_the_servers_message(mdb):
    c = factory.connector(mdb)
    with c.session() as s:
        assert s.run("CREATE TABLE t (id int PRIMARY KEY)") is None
        assert s.run("SELECT 1 + 1") == [(2,)]
        with pytest.raises(StatementFailed, match="syntax"):
            s.run("SELECT 1; DROP TABLE t")  # a smuggled second statement is refused
        assert s.run("SELECT COUNT(*) FROM t") == [(0,)]  # t is still there, the session still usable
        with pytest.raises(StatementFailed, match="doesn't exist"):
            s.run("SELECT * FROM no_such_table")
        s.run("INSERT INTO t VALUES (1)", rollback=True)
        assert s.run("SELECT COUNT(*) FROM t") == [(0,)]
        s.run("INSERT INTO t VALUES (1)")
        with pytest.raises(StatementFailed, match="Duplicate entry"):
            s.run("INSERT INTO t VALUES (1)")


def test_a_session_stops_a_statement_at_its_timeout_and_on_cancel(mdb):
    c = factory.connector(mdb)
    with c.session(timeout_ms=200) as s:
        with pytest.raises(StatementTimeout):
            s.run("SELECT SLEEP(5) FROM DUAL WHERE 1 = 1 UNION SELECT 2")
        assert s.run("SELECT 7") == [(7,)]  # usable after
    with c.session() as s:
        threading.Timer(0.3, s.cancel).start()
        started = time.monotonic()
        with pytest.raises(StatementTimeout):
            s.run("SELECT COUNT(*) FROM seq_1_to_1000000000 a WHERE MOD(a.seq, 7) = 3")
        assert time.monotonic() - started < 60  # stopped, not run to its end
        assert s.run("SELECT 8") == [(8,)]
