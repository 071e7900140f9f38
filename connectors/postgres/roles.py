"""The roles of a PostgreSQL database beyond a pipeline's (``connectors.base.Connector.loader`` and ``.bench``):
``PostgresLoader`` (``connectors.loader.Loader``, over ``connectors.postgres.loading``) and ``PostgresBench``
(``connectors.probing.BenchProbe``, over ``connectors.postgres.activity`` and ``upkeep``). Each holds the DSN and
the connector's ``guarded`` (one connection per call, driver errors said in one line)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connectors.postgres import activity, loading, upkeep


class PostgresLoader:
    """``connectors.loader.Loader`` for PostgreSQL: COPY, VACUUM ANALYZE, pg_stats, pg_get_keywords, pgbench."""

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
        return self._guarded(loading.table_rows)

    def reserved_words(self) -> frozenset[str]:
        return self._guarded(loading.reserved_words)

    def run_parameterized(self, calls, timeout_ms: int | None = None) -> int:
        return loading.run_parameterized(self.dsn, calls, timeout_ms)

    def client_command(self, tool: str, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        return loading.client_command(self.dsn, tool, args)


class PostgresBench:
    """``connectors.probing.BenchProbe`` for PostgreSQL: pg_database_size, pg_relation_size, pg_index.indisvalid and
    an operator's connection (``activity.PostgresProbe``)."""

    def __init__(self, dsn: str):
        self.dsn = dsn

    def database_bytes(self) -> int:
        return upkeep.database_bytes(self.dsn)

    def table_bytes(self, table: str, schema: str | None = None) -> int:
        return activity.table_bytes(self.dsn, table, schema)

    def invalid_indexes(self) -> list[str]:
        return activity.invalid_indexes(self.dsn)

    def probe(self) -> activity.PostgresProbe:
        return activity.PostgresProbe(self.dsn)
