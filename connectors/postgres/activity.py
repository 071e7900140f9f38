"""``PostgresProbe``: an operator's connection to a PostgreSQL server for the fault benches and tests
(``connectors.base.Probe``): the other client sessions from ``pg_stat_activity``, ending one with
``pg_terminate_backend``, and a table lock (``LOCK TABLE``) held in an open transaction until released. Also the
indexes a failed ``CREATE INDEX CONCURRENTLY`` left invalid, and a table's size without its indexes."""

from __future__ import annotations

import psycopg
from psycopg import sql

from connectors.probing import ServerSession
from connectors.postgres.connection import TAG, connect

SESSIONS_SQL = TAG + """
SELECT pid, COALESCE(application_name, ''), state = 'active', wait_event_type IS NOT DISTINCT FROM 'Lock',
       COALESCE(query, '')
FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY pid"""

INVALID_SQL = TAG + """
SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE NOT x.indisvalid ORDER BY 1"""


class PostgresProbe:
    """One autocommit connection of its own (a lock is taken inside a transaction it opens)."""

    def __init__(self, dsn: str):
        self.conn: psycopg.Connection = connect(dsn)
        self.held: str | None = None

    def sessions(self) -> list[ServerSession]:
        return [ServerSession(int(pid), app, bool(active), bool(waiting), query)
                for pid, app, active, waiting, query in self.conn.execute(SESSIONS_SQL).fetchall()]

    def terminate(self, session_id: int) -> bool:
        return bool(self.conn.execute(TAG + "SELECT pg_terminate_backend(%s)", [session_id]).fetchone()[0])

    def lock(self, table: str, schema: str | None = None, *, readers_wait: bool = True) -> str:
        mode = "ACCESS EXCLUSIVE" if readers_wait else "SHARE UPDATE EXCLUSIVE"
        name = sql.Identifier(*([schema] if schema else []), table)
        statement = sql.SQL("LOCK TABLE {} IN " + mode + " MODE").format(name)
        self.release()
        self.conn.execute("BEGIN")
        self.conn.execute(statement)
        self.held = statement.as_string(self.conn)
        return self.held

    def release(self) -> None:
        if self.held is not None:
            self.held = None
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        try:
            if not self.conn.closed and not self.conn.broken:
                self.release()
        finally:
            self.conn.close()

    def __enter__(self) -> PostgresProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def invalid_indexes(dsn: str) -> list[str]:
    """Names of the database's invalid indexes (a failed or interrupted concurrent build leaves one)."""
    with connect(dsn) as conn:
        return [name for (name,) in conn.execute(INVALID_SQL).fetchall()]


def table_bytes(dsn: str, table: str, schema: str | None = None) -> int:
    """Bytes of ``table``'s rows on disk (its main fork: no indexes, no TOAST)."""
    with connect(dsn) as conn:
        name = sql.Identifier(*([schema] if schema else []), table).as_string(conn)
        return int(conn.execute(TAG + "SELECT pg_relation_size(%s::regclass)", [name]).fetchone()[0])
