"""The bench role of a PostgreSQL database (``connectors.base.Connector.bench``): ``PostgresBench``
(``connectors.probing.BenchProbe``, over ``connectors.postgres.activity`` and ``upkeep``). Its loader role is the shared
``connectors.loader.ModuleLoader`` over ``connectors.postgres.loading``."""

from __future__ import annotations


from connectors.postgres import activity, upkeep


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
