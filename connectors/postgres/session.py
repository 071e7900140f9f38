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
from connectors.postgres.connection import connect, execute_one


def _message(e: psycopg.Error) -> str:
    diag = getattr(e, "diag", None)
    text = (diag.message_primary if diag is not None and diag.message_primary else str(e)).strip()
    return text.splitlines()[0] if text else type(e).__name__


class PostgresSession:
    """One connection of the target's, autocommit, with ``statement_timeout`` set to ``timeout_ms`` (0: none)."""

    def __init__(self, dsn: str, timeout_ms: int | None = None):
        self.conn = connect(dsn)
        self.timeout_ms = 0 if timeout_ms is None else int(timeout_ms)
        if self.timeout_ms:
            self.conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(self.timeout_ms),))

    def run(self, statement: str, *, rollback: bool = False) -> list[tuple] | None:
        """Run one statement; its rows when it returns any (None otherwise). ``rollback``: inside a transaction
        that is rolled back (a write leaves the data as it was)."""
        query = sql.SQL(statement)  # type: ignore[arg-type]  # outside SQL, run as the application ran it
        try:
            if rollback:
                with self.conn.transaction(force_rollback=True), self.conn.cursor() as cur:
                    execute_one(cur, query)
                    return cur.fetchall() if cur.description is not None else None
            with self.conn.cursor() as cur:
                execute_one(cur, query)
                return cur.fetchall() if cur.description is not None else None
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
