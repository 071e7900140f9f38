"""PostgreSQL's database size on disk (``pg_database_size``, bytes), which benches ask for by name (``connectors.base.Connector``'s benches block), on one short-lived connection of the target's."""

from __future__ import annotations

from connectors.postgres.connection import TAG, connect


def database_bytes(dsn: str) -> int:
    """Bytes on disk of the database ``dsn`` names (tables, indexes, TOAST, its catalogs)."""
    with connect(dsn) as conn:
        return int(conn.execute(TAG + "SELECT pg_database_size(current_database())").fetchone()[0])

