"""``PostgresSession``: the engine-neutral ``connectors.base.Session`` over one psycopg connection.

It runs statements of outside text one at a time (a smuggled second statement is refused by the server), under a
statement timeout, and turns psycopg's errors into the advisor's: ``StatementTimeout`` (timeout or cancel),
``StatementFailed`` (the server's message, one line; the session stays usable) and ``TargetUnreachable`` (the
connection is gone).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from advisor.core.errors import StatementFailed, StatementTimeout, TargetUnreachable
from advisor.core.sqltext import shorten
from connectors import deadlines
from connectors.postgres.connection import connect, execute_one


def _message(e: psycopg.Error) -> str:
    diag = getattr(e, "diag", None)
    text = (diag.message_primary if diag is not None and diag.message_primary else str(e)).strip()
    return text.splitlines()[0] if text else type(e).__name__


class PostgresSession:
    """One connection of the target's, autocommit, with ``statement_timeout`` set to ``timeout_ms`` (0: none)."""

    def __init__(self, dsn: str, timeout_ms: int | None = None):
        self.timeout_ms = 0 if timeout_ms is None else int(timeout_ms)
        # the server stops a statement at timeout_ms; a server that stopped answering is given up a little later
        self.conn = connect(dsn, answer_s=deadlines.for_statement(self.timeout_ms))
        if self.timeout_ms:
            self.conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(self.timeout_ms),))

    def run(self, statement: str, *, rollback: bool = False) -> list[tuple] | None:
        """Run one statement; its rows when it returns any (None otherwise). ``rollback``: inside a transaction
        that is rolled back (a write leaves the data as it was)."""
        query = sql.SQL(statement)  # type: ignore[arg-type]  # outside SQL, run as the application ran it
        return self._execute(query, statement, rollback)[1]

    def _execute(self, query: sql.Composable, statement: str,
                 rollback: bool = False) -> tuple[list[str], list[tuple] | None]:
        """Run ``query`` (``statement`` is its text, for messages): its columns' names and rows (None when it
        returns no result set), psycopg's errors as the advisor's."""
        try:
            if rollback:
                with self.conn.transaction(force_rollback=True), self.conn.cursor() as cur:
                    execute_one(cur, query)
                    return _result(cur)
            with self.conn.cursor() as cur:
                execute_one(cur, query)
                return _result(cur)
        except psycopg.errors.QueryCanceled:
            raise StatementTimeout(f"statement stopped after {self.timeout_ms} ms: {shorten(statement, 80)}") from None
        except psycopg.OperationalError as e:
            if self.conn.closed or self.conn.broken:
                raise TargetUnreachable(f"connection lost: {_message(e)}") from None
            raise StatementFailed(_message(e), reason=_message(e)) from None
        except psycopg.Error as e:
            raise StatementFailed(_message(e), reason=_message(e)) from None

    def cancel(self) -> None:
        """Stop the statement running now (from another thread); it raises ``StatementTimeout``."""
        try:
            self.conn.cancel()
        except psycopg.Error:
            pass

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> PostgresSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tune (issue 30) ---

    def fetch(self, statement: str) -> tuple[list[str], list[tuple]]:
        """Run one query: the names of its output columns and its rows."""
        names, rows = self._execute(sql.SQL(statement), statement)  # type: ignore[arg-type]  # outside SQL
        return names, rows or []

    def columns(self, statement: str) -> list[str]:
        """The names PostgreSQL gives the query's output columns (``count`` for an unnamed ``count(*)``), from
        ``SELECT * FROM (statement) LIMIT 0``: planned, no row read."""
        query = sql.SQL("SELECT * FROM ({}) AS q LIMIT 0").format(sql.SQL(statement))  # type: ignore[arg-type]
        return self._execute(query, statement)[0]


def _result(cur: psycopg.Cursor) -> tuple[list[str], list[tuple] | None]:
    """The names of the result's columns and its rows; ``([], None)`` for a statement that returns none."""
    if cur.description is None:
        return [], None
    return [d.name for d in cur.description], cur.fetchall()
