"""The bench role of a MariaDB database (``connectors.base.Connector.bench``): ``MariaDBBench``
(``connectors.probing.BenchProbe``, over ``connectors.mariadb.activity``). Its loader role is the shared
``connectors.loader.ModuleLoader`` over ``connectors.mariadb.loading``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connectors.mariadb import activity


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
