import psycopg
import pytest

from connectors.postgres.sandbox import PostgresSandbox
from connectors.postgres.sandbox import pid_alive as _alive


def test_sandbox_starts_with_extensions_and_stops_without_leftovers():
    with PostgresSandbox("t1") as sb:
        pid = sb.postmaster_pid()
        root = sb.root
        with psycopg.connect(sb.dsn()) as conn:
            libs = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
            exts = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
            host = conn.execute("SELECT inet_server_addr()::text").fetchone()[0]
        assert "pg_stat_statements" in libs and "pg_qualstats" in libs
        assert {"pg_stat_statements", "pg_qualstats", "hypopg"} <= exts
        assert host.startswith("127.0.0.1")
        assert _alive(pid)
    assert not _alive(pid)
    assert not root.exists()


def test_sandbox_is_cleaned_up_when_the_body_raises():
    with pytest.raises(RuntimeError):
        with PostgresSandbox("t2") as sb:
            pid, root = sb.postmaster_pid(), sb.root
            raise RuntimeError("boom")
    assert not _alive(pid) and not root.exists()


def test_restart_keeps_data_and_applies_postmaster_settings(restartable):
    sb, _ = restartable
    with psycopg.connect(sb.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (a int)")
        conn.execute("ALTER SYSTEM SET shared_buffers = '64MB'")
    sb.restart()
    with psycopg.connect(sb.dsn()) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone()[0] == "64MB"
        assert conn.execute("SELECT count(*) FROM kept").fetchone()[0] == 0


def test_two_sandboxes_get_different_ports():
    with PostgresSandbox("a") as a, PostgresSandbox("b") as b:
        assert a.port != b.port
