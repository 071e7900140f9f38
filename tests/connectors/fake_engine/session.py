"""The fake engine's sessions (``connectors.sessions``): ``FakeSession`` (one statement at a time under a timeout,
SQLite's progress handler interrupting a statement past it), ``FakeWhatIf`` (what-if costs: the candidate indexes
built inside a savepoint that is rolled back, SQLite's DDL being transactional) and ``FakeBindingSource`` (SQLite
keeps no statement history nor column statistics: literals and defaults only)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence

from advisor.core.domain import Costed, IndexChange, Statement
from advisor.core.errors import StatementFailed, StatementTimeout
from tests.connectors.fake_engine.connection import connect
from tests.connectors.fake_engine.plans import costed, create_index_sql


class FakeSession:
    def __init__(self, dsn: str, timeout_ms: int | None = None):
        self.conn = connect(dsn)
        self._deadline: float | None = None
        self._cancelled = False
        self.timeout_ms = timeout_ms or 0
        self.conn.set_progress_handler(self._stop, 1000)

    def _stop(self) -> int:
        return int(self._cancelled or (self._deadline is not None and time.monotonic() > self._deadline))

    def run(self, statement: str, *, rollback: bool = False) -> list[tuple] | None:
        return self._execute(statement, rollback)[1]

    def fetch(self, statement: str) -> tuple[list[str], list[tuple]]:
        names, rows = self._execute(statement, False)
        return names, rows or []

    def columns(self, statement: str) -> list[str]:
        cur = self.conn.execute(f"SELECT * FROM ({statement}) LIMIT 0")
        return [d[0] for d in cur.description]

    def _execute(self, statement: str, rollback: bool) -> tuple[list[str], list[tuple] | None]:
        self._cancelled = False
        self._deadline = time.monotonic() + self.timeout_ms / 1000 if self.timeout_ms else None
        try:
            if rollback:
                self.conn.execute("BEGIN")
            cur = self.conn.execute(statement)  # one statement: sqlite3 refuses a second
            rows = cur.fetchall() if cur.description else None
            return [d[0] for d in cur.description or ()], rows
        except sqlite3.OperationalError as e:
            if "interrupted" in str(e):
                raise StatementTimeout(f"statement stopped after {self.timeout_ms} ms") from None
            raise StatementFailed(str(e)) from None
        except (sqlite3.Error, sqlite3.Warning) as e:
            raise StatementFailed(str(e)) from None
        finally:
            self._deadline = None
            if rollback and self.conn.in_transaction:
                self.conn.execute("ROLLBACK")

    def cancel(self) -> None:
        self._cancelled = True

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeWhatIf:
    """Each ``plan`` builds its indexes in a savepoint, plans, and rolls the savepoint back."""

    def __init__(self, dsn: str):
        self.conn = connect(dsn)
        self.creates = self.drops = 0

    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset) -> Costed:
        self.conn.execute("SAVEPOINT whatif")
        try:
            for ix in indexes:
                self.conn.execute(create_index_sql(ix))
            self.creates += len(indexes)
            return costed(self.conn, sql)
        finally:
            self.conn.execute("ROLLBACK TO whatif")
            self.conn.execute("RELEASE whatif")
            self.drops += len(indexes)

    def index_size(self, index: IndexChange) -> int:
        self.conn.execute("SAVEPOINT size")
        try:
            self.conn.execute(create_index_sql(index, name="whatif_size"))
            return int(self.conn.execute("SELECT SUM(pgsize) FROM dbstat WHERE name = 'whatif_size'").fetchone()[0])
        finally:
            self.conn.execute("ROLLBACK TO size")
            self.conn.execute("RELEASE size")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> FakeWhatIf:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeBindingSource:
    def __init__(self, dsn: str):
        self.conn = connect(dsn)

    def example(self, statement: Statement) -> tuple[str, str | None]:
        return statement.queryid, None

    def real_constants(self, queryid: str, template: str) -> dict[int, list[str]]:
        return {}

    def parameter_types(self, text: str, count: int, amounts: Mapping[int, str]) -> list[str]:
        return ["unknown"] * count

    def column_values(self, table: str, column: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (), ()

    def literal(self, value: str, type_name: str) -> str:
        if type_name.lower() in {"integer", "int", "real", "numeric"}:
            return str(float(value)) if "." in value else str(int(value))
        return "'" + value.replace("'", "''") + "'"

    def default_value(self, type_name: str) -> str | None:
        return "0" if type_name.lower() in {"integer", "int", "real", "numeric"} else None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> FakeBindingSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
