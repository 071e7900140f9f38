"""MariaDB's index facts (``IndexFacts``: InnoDB's 16 KiB pages, no deduplication, no INCLUDE nor partial
indexes, 32 key parts, 64-character names), and what its catalog says beyond the snapshot: the indexes behind a
constraint (the primary key, unique indexes, and the indexes InnoDB needs for each foreign key, on both sides),
when the usage counts started (the server's start: performance_schema counts from there), how often each index
was read (performance_schema ``table_io_waits_summary_by_index_usage``), the columns' standard type names and
the database unqualified names resolve to (the DSN's). ``timings_without`` times a statement with built indexes
IGNORED, restoring them afterwards (MariaDB's DDL is not transactional).

Every function takes an open PyMySQL connection whose default database is the target's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pymysql

from advisor.core.domain import IndexChange
from advisor.core.indexfacts import IndexFacts
from connectors.mariadb.changes import MAX_IDENTIFIER, index_name
from connectors.mariadb.connection import TAG, error_code
from connectors.mariadb.session import STOPPED
from connectors.mariadb.whatif import toggle_sql

MAX_KEY_PARTS = 32  # the most key parts of one index (MariaDB 10.11, InnoDB: error 1070 past it)
# cost units per index entry written: about half a random page read (a page read is 1 in MariaDB 10.11's model)
INDEX_ENTRY_COST = 0.5

KEYS_SQL = TAG + """
SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE,
       GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX SEPARATOR '\\0')
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() GROUP BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME,
NON_UNIQUE"""
FOREIGN_SQL = TAG + """
SELECT TABLE_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION SEPARATOR '\\0'), REFERENCED_TABLE_NAME,
       GROUP_CONCAT(REFERENCED_COLUMN_NAME ORDER BY ORDINAL_POSITION SEPARATOR '\\0')
FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL AND REFERENCED_TABLE_SCHEMA = DATABASE()
GROUP BY TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME"""
USAGE_SQL = TAG + """
SELECT OBJECT_SCHEMA, OBJECT_NAME, INDEX_NAME, COUNT_READ
FROM performance_schema.table_io_waits_summary_by_index_usage
WHERE OBJECT_SCHEMA = DATABASE() AND INDEX_NAME IS NOT NULL"""
STARTED_SQL = TAG + """
SELECT DATE_FORMAT(NOW() - INTERVAL VARIABLE_VALUE SECOND, '%Y-%m-%d %H:%i'),
       IF(@@time_zone = 'SYSTEM', @@system_time_zone, @@time_zone)
FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'"""
COLUMN_DATA_TYPES_SQL = TAG + """SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()"""


def _rows(conn: pymysql.connections.Connection, query: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(query)
        return list(cur.fetchall())


def index_facts(conn: pymysql.connections.Connection) -> IndexFacts:
    """InnoDB's B-tree page size (``@@innodb_page_size``, 16 KiB by default), its key and name limits."""
    (page,), = _rows(conn, TAG + "SELECT @@innodb_page_size")
    return IndexFacts(page_bytes=int(page), deduplication=False, include=False, partial=False,
                      max_key_columns=MAX_KEY_PARTS, name_limit=MAX_IDENTIFIER,
                      cost_unit="MariaDB optimizer cost units (Last_query_cost: a random page read = 1)",
                      entry_cost=INDEX_ENTRY_COST, no_dedup_types=(), whatif_builds=True)


def constraint_indexes(conn: pymysql.connections.Connection) -> set[str]:
    """The primary key, every unique index, and every index that can serve a foreign key (its leading columns
    are the key's, on the referencing or the referenced table): InnoDB refuses to drop the last one of those,
    and the advisor never proposes any of them."""
    keys = {}
    out = set()
    for _schema, table, name, non_unique, columns in _rows(conn, KEYS_SQL):
        keys[(table, name)] = tuple(str(columns).split("\0"))
        if not int(non_unique):
            out.add(str(name))
    for table, columns, parent, referenced in _rows(conn, FOREIGN_SQL):
        for side, cols in ((table, tuple(str(columns).split("\0"))), (parent, tuple(str(referenced).split("\0")))):
            out.update(name for (t, name), key in keys.items() if t == side and key[:len(cols)] == cols)
    return out


def index_usage(conn: pymysql.connections.Connection) -> dict[tuple[str, str, str], int] | None:
    """Rows read through each index of the database since the server started, per (database, table, index);
    None when performance_schema is off (nothing is counted)."""
    (on,), = _rows(conn, TAG + "SELECT @@performance_schema")
    if not int(on):
        return None
    return {(s, t, i): int(n) for s, t, i, n in _rows(conn, USAGE_SQL)}


def stats_since(conn: pymysql.connections.Connection) -> str | None:
    """When the index usage counts started: the server's start (``Uptime`` ago), ``YYYY-MM-DD HH:MM TZ``."""
    rows = _rows(conn, STARTED_SQL)
    return f"{rows[0][0]} {rows[0][1]}".strip() if rows and rows[0][0] else None


def default_schema(conn: pymysql.connections.Connection) -> str:
    """The DSN's database: where an unqualified table name resolves."""
    (name,), = _rows(conn, TAG + "SELECT DATABASE()")
    return str(name or "")


def column_data_types(conn: pymysql.connections.Connection) -> dict[tuple[str, str, str], str]:
    """(database, table, column) -> information_schema's ``DATA_TYPE`` (``int``, ``varchar``, ``decimal`` ...)."""
    return {(s, t, c): str(kind) for s, t, c, kind in _rows(conn, COLUMN_DATA_TYPES_SQL)}


def timings_without(conn: pymysql.connections.Connection, statement: str, hidden: Sequence[IndexChange],
                    repeats: int, timeout_ms: int, warmup: int = 1) -> list[float]:
    """Milliseconds of ``repeats`` executions of ``statement`` (``warmup`` unmeasured first) with the built indexes
    ``hidden`` IGNORED, made visible again afterwards whatever happens. An execution over ``timeout_ms``
    (``max_statement_time``) counts as ``timeout_ms``, and so do the runs left (not made)."""
    tables: dict[tuple[str, str], list[str]] = {}
    for ix in hidden:
        tables.setdefault((ix.schema, ix.table), []).append(index_name(ix))
    with conn.cursor() as cur:
        cur.execute(TAG + "SET SESSION max_statement_time = %s", (max(1, int(timeout_ms)) / 1000.0,))
        done: list[tuple[str, str]] = []
        try:
            for (schema, table), names in sorted(tables.items()):
                cur.execute(TAG + toggle_sql(schema, table, {n: False for n in names}))
                done.append((schema, table))
            out: list[float] = []
            for k in range(repeats + max(0, warmup)):
                started = time.perf_counter()
                try:
                    cur.execute(statement)  # no arguments: the text goes as it is
                    cur.fetchall()
                except pymysql.Error as e:
                    if error_code(e) not in STOPPED:
                        raise
                    return out + [float(timeout_ms)] * (repeats - len(out))
                if k >= warmup:
                    out.append((time.perf_counter() - started) * 1000)
            return out
        finally:
            cur.execute(TAG + "SET SESSION max_statement_time = 0")
            for schema, table in done:
                cur.execute(TAG + toggle_sql(schema, table, {n: True for n in tables[(schema, table)]}))
