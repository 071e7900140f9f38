"""``MariaDBSession``: the engine-neutral ``connectors.base.Session`` over one PyMySQL connection.

One statement at a time (PyMySQL without ``CLIENT.MULTI_STATEMENTS``: a smuggled second statement is a syntax
error of the server), under ``SET SESSION max_statement_time`` (seconds; MariaDB stops the statement itself), and
``cancel()`` sends ``KILL QUERY <this connection's id>`` from a second connection. Errors become the advisor's:
``StatementTimeout`` (timeout or cancel), ``StatementFailed`` (the server's message; the session stays usable),
``TargetUnreachable`` (the connection is gone).
"""

from __future__ import annotations

import pymysql

from advisor.core.errors import StatementFailed, StatementTimeout, TargetUnreachable
from advisor.core.sqltext import shorten
from connectors import deadlines
from connectors.mariadb.connection import TAG, connect, error_code, error_text, parse_dsn

# server error codes: the statement was stopped (max_statement_time passed, KILL QUERY), the connection is gone
STOPPED = frozenset({1969, 1317, 3024})
GONE = frozenset({2006, 2013, 2055, 1927})


class MariaDBSession:
    """One autocommit connection of the target's with ``max_statement_time`` set from ``timeout_ms`` (0: none)."""

    def __init__(self, dsn: str, timeout_ms: int | None = None):
        self.dsn = dsn
        self._password = parse_dsn(dsn).get("password")
        self.timeout_ms = 0 if timeout_ms is None else int(timeout_ms)
        # the server stops a statement at timeout_ms; a server that stopped answering is given up a little later
        self.conn = connect(dsn, answer_s=deadlines.for_statement(self.timeout_ms))
        self._thread_id = self.conn.thread_id()
        if self.timeout_ms:
            with self.conn.cursor() as cur:
                cur.execute(TAG + "SET SESSION max_statement_time = %s", (self.timeout_ms / 1000.0,))

    def run(self, statement: str, *, rollback: bool = False) -> list[tuple] | None:
        """Run one statement; its rows when it returns a result set (None otherwise). ``rollback``: inside a
        transaction that is rolled back (a write to a transactional table leaves the data as it was)."""
        return self._run(statement, rollback, [])

    def _run(self, statement: str, rollback: bool, names: list[str]) -> list[tuple] | None:
        """``run``; the names of the result's columns are appended to ``names``."""
        try:
            if rollback:
                self.conn.begin()
            try:
                with self.conn.cursor() as cur:
                    cur.execute(statement)  # no arguments: PyMySQL sends the text as it is (no % formatting)
                    names.extend(d[0] for d in cur.description or ())
                    return [tuple(r) for r in cur.fetchall()] if cur.description is not None else None
            finally:
                if rollback and self.conn.open:
                    self.conn.rollback()
        except pymysql.Error as e:
            code = error_code(e)
            if code in STOPPED:
                raise StatementTimeout(f"statement stopped after {self.timeout_ms} ms: {shorten(statement, 80)}") \
                    from None
            message = error_text(e, self._password)
            if code in GONE or not self.conn.open:
                raise TargetUnreachable(f"connection lost: {message}") from None
            raise StatementFailed(message, reason=message) from None

    def cancel(self) -> None:
        """Stop the statement running now (from another thread): ``KILL QUERY`` on a second connection; the
        statement raises ``StatementTimeout``."""
        try:
            other = connect(self.dsn)
        except TargetUnreachable:
            return
        try:
            with other.cursor() as cur:
                cur.execute(TAG + "KILL QUERY %s", (int(self._thread_id),))
        except pymysql.Error:
            pass  # nothing runs any more, or the connection went
        finally:
            other.close()

    def close(self) -> None:
        if self.conn.open:
            self.conn.close()

    def __enter__(self) -> MariaDBSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- workloads (issue 30) ---

    def fetch(self, statement: str) -> tuple[list[str], list[tuple]]:
        """Run one query: the names of its output columns (as MariaDB names them) and its rows."""
        return self._described(statement)

    def columns(self, statement: str) -> list[str]:
        """The names MariaDB gives the query's output columns (``count(*)`` for an unnamed ``count(*)``), with
        ``sql_select_limit`` at 0 for the one statement: the server returns no row (a derived table would refuse
        a query whose output repeats a name)."""
        with self.conn.cursor() as cur:
            cur.execute(TAG + "SET SESSION sql_select_limit = 0")
        try:
            return self._described(statement)[0]
        finally:
            if self.conn.open:
                with self.conn.cursor() as cur:
                    cur.execute(TAG + "SET SESSION sql_select_limit = DEFAULT")

    def _described(self, statement: str) -> tuple[list[str], list[tuple]]:
        """``run`` of one statement with the names of its result's columns (none for a statement without)."""
        names: list[str] = []
        rows = self._run(statement, False, names)
        return names, rows or []
