"""``MariaDBProbe``: an operator's connection to a MariaDB server for the fault benches and tests
(``connectors.probing.Probe``): the other client sessions from ``information_schema.PROCESSLIST`` (a session waits
on a lock when its state says it waits for one, a metadata or table lock, or InnoDB lists its transaction in
``LOCK WAIT``), ending one with ``KILL CONNECTION``, and a table lock held until released: ``LOCK TABLES ... WRITE``
(every other session waits, reads included) or a read of the table in an open transaction (its shared metadata
lock: reads and writes pass, index builds and ALTER TABLE wait). Also the sizes the benches read: a database's and
a table's bytes from ``information_schema.TABLES`` (InnoDB's figures are its statistics, which ANALYZE TABLE and
InnoDB's own recalculation after many changed rows bring up to date)."""

from __future__ import annotations

import pymysql

from connectors.mariadb.connection import TAG, connect, error_code, quote
from connectors.probing import ServerSession

UNKNOWN_THREAD = 1094  # KILL of a session id that does not exist (any more)
DENIED = 1142  # a login without SELECT on performance_schema

# the program's name: what a client sent as program_name, else its driver's name (_client_name)
PROGRAM = """COALESCE(
         (SELECT a.ATTR_VALUE FROM performance_schema.session_connect_attrs a
          WHERE a.PROCESSLIST_ID = p.ID AND a.ATTR_NAME IN ('program_name', '_client_name')
          ORDER BY a.ATTR_NAME = 'program_name' DESC LIMIT 1), '')"""
SESSIONS = TAG + """
SELECT p.ID, {program}, p.COMMAND = 'Query',
       p.STATE LIKE 'Waiting for%lock%' OR p.ID IN (SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX
                                                   WHERE trx_state = 'LOCK WAIT'),
       COALESCE(p.INFO, '')
FROM information_schema.PROCESSLIST p
WHERE p.ID <> CONNECTION_ID() AND p.COMMAND NOT IN ('Daemon', 'Binlog Dump', 'Slave_IO', 'Slave_SQL')
  AND p.USER NOT IN ('system user', 'event_scheduler')
ORDER BY p.ID"""
SESSIONS_SQL = SESSIONS.format(program=PROGRAM)
PLAIN_SESSIONS_SQL = SESSIONS.format(program="''")  # a login that may not read the program names

KILLED_SQL = TAG + "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %s AND COMMAND = 'Killed'"

BYTES_SQL = TAG + """
SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'"""

TABLE_BYTES_SQL = TAG + """
SELECT DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND TABLE_NAME = %s"""


class MariaDBProbe:
    """One autocommit connection of its own (a lock is held by ``LOCK TABLES`` or inside a transaction it
    opens)."""

    def __init__(self, dsn: str):
        self.conn: pymysql.connections.Connection = connect(dsn)
        self.held: str | None = None
        self._end = ""  # what releases the lock held: UNLOCK TABLES or ROLLBACK

    def _query(self, statement: str, args: tuple | None = None) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(statement, args)
            return [tuple(r) for r in cur.fetchall()] if cur.description is not None else []

    def sessions(self) -> list[ServerSession]:
        try:
            rows = self._query(SESSIONS_SQL)
        except pymysql.Error as e:
            if error_code(e) != DENIED:
                raise
            rows = self._query(PLAIN_SESSIONS_SQL)
        return [ServerSession(int(pid), str(app), bool(active), bool(waiting), str(info))
                for pid, app, active, waiting, info in rows]

    def terminate(self, session_id: int) -> bool:
        """End the session (True), or False when it is gone or already ending (a killed session stays listed as
        'Killed' while it unwinds; a second KILL of it would end nothing)."""
        if self._query(KILLED_SQL, (int(session_id),)):
            return False
        try:
            self._query(TAG + "KILL CONNECTION %s", (int(session_id),))
        except pymysql.Error as e:
            if error_code(e) == UNKNOWN_THREAD:
                return False
            raise
        return True

    def lock(self, table: str, schema: str | None = None, *, readers_wait: bool = True) -> str:
        name = (quote(schema) + "." if schema else "") + quote(table)
        self.release()
        if readers_wait:
            statement, self._end = f"LOCK TABLES {name} WRITE", "UNLOCK TABLES"
        else:
            statement, self._end = f"SELECT 1 FROM {name} LIMIT 1", "ROLLBACK"
            self._query(TAG + "START TRANSACTION")
        self._query(TAG + statement)
        self.held = statement
        return statement

    def release(self) -> None:
        if self.held is not None:
            self.held = None
            self._query(TAG + self._end)

    def close(self) -> None:
        try:
            if self.conn.open:
                self.release()
        finally:
            self.conn.close()

    def __enter__(self) -> MariaDBProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def database_bytes(conn: pymysql.connections.Connection) -> int:
    """Bytes of the connection's database: every base table's data and indexes (information_schema.TABLES)."""
    with conn.cursor() as cur:
        cur.execute(BYTES_SQL)
        return int(cur.fetchone()[0])


def table_bytes(conn: pymysql.connections.Connection, table: str, schema: str | None = None) -> int:
    """Bytes of ``table``'s rows (InnoDB: its clustered index, the rows themselves; no secondary index)."""
    with conn.cursor() as cur:
        cur.execute(TABLE_BYTES_SQL, (schema, table))
        row = cur.fetchone()
    if row is None:
        raise pymysql.err.ProgrammingError(1146, f"table {table!r} does not exist")
    return int(row[0] or 0)
