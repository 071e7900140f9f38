"""The roles of a MariaDB database beyond a pipeline's (``connectors.base.Connector.loader`` and ``.bench``):
``MariaDBLoader`` (``connectors.loader.Loader``, over ``connectors.mariadb.loading``) and ``MariaDBBench``
(``connectors.probing.BenchProbe``, over ``connectors.mariadb.activity``). Each holds the DSN and the connector's
``guarded`` (one connection per call, driver errors said in one line)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connectors.mariadb import activity, loading


class MariaDBLoader:
    """``connectors.loader.Loader`` for MariaDB: LOAD DATA or multi-row INSERTs, ANALYZE TABLE ... PERSISTENT FOR
    ALL, mysql.column_stats, information_schema.KEYWORDS, the mariadb client programs."""

    def __init__(self, dsn: str, guarded: Callable[[Callable], Any]):
        self.dsn = dsn
        self._guarded = guarded

    def run_script(self, statements: Sequence[str], before: Callable[[int, str], None] | None = None) -> None:
        loading.run_script(self.dsn, statements, before)

    def load_rows(self, table: str, columns: Sequence[str] | None, rows) -> int:
        return loading.load_rows(self.dsn, table, columns, rows)

    def analyze(self, tables: Sequence[str] | None = None, statistics_target: int | None = None) -> None:
        loading.analyze(self.dsn, tables, statistics_target)

    def vacuum(self, tables: Sequence[str] | None = None) -> None:
        loading.vacuum(self.dsn, tables)

    def column_statistics(self) -> dict[tuple[str, str, str], tuple]:
        return self._guarded(loading.column_statistics)

    def table_rows(self) -> dict[tuple[str, str], float]:
        """Each base table of the database, as (database, table), with the engine's estimate of its rows."""
        return self._guarded(loading.table_rows)

    def reserved_words(self) -> frozenset[str]:
        return self._guarded(loading.reserved_words)

    def run_parameterized(self, calls, timeout_ms: int | None = None) -> int:
        return loading.run_parameterized(self.dsn, calls, timeout_ms)

    def client_command(self, tool: str, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        return loading.client_command(self.dsn, tool, args)


class MariaDBBench:
    """``connectors.probing.BenchProbe`` for MariaDB: information_schema.TABLES' sizes and an operator's connection
    (``activity.MariaDBProbe``)."""

    def __init__(self, dsn: str, guarded: Callable[[Callable], Any]):
        self.dsn = dsn
        self._guarded = guarded

    def database_bytes(self) -> int:
        """Data and index bytes of the database's base tables (``information_schema.TABLES``; InnoDB's are its
        statistics)."""
        return self._guarded(activity.database_bytes)

    def table_bytes(self, table: str, schema: str | None = None) -> int:
        return self._guarded(lambda conn: activity.table_bytes(conn, table, schema))

    def invalid_indexes(self) -> list[str]:
        """None: a failed or interrupted MariaDB index build leaves no index behind."""
        return []

    def probe(self) -> activity.MariaDBProbe:
        return activity.MariaDBProbe(self.dsn)
