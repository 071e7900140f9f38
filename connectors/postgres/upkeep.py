"""PostgreSQL's database upkeep that benches and loaders ask for by name (``connectors.base.Connector``'s benches
block): the database's size on disk (``pg_database_size``, bytes) and refreshing planner statistics with the
visibility map (``VACUUM ANALYZE``). Each opens one short-lived connection of the target's."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from connectors.postgres.connection import TAG, connect


def database_bytes(dsn: str) -> int:
    """Bytes on disk of the database ``dsn`` names (tables, indexes, TOAST, its catalogs)."""
    with connect(dsn) as conn:
        return int(conn.execute(TAG + "SELECT pg_database_size(current_database())").fetchone()[0])


def analyze(dsn: str, tables: Sequence[str] | None = None) -> None:
    """``VACUUM ANALYZE`` the tables named (in the search path), or the whole database when None."""
    with connect(dsn) as conn:
        if tables is None:
            conn.execute("VACUUM ANALYZE")
            return
        for table in tables:
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
