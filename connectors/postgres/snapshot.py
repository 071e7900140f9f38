"""Reading one Snapshot of a PostgreSQL database: statement stats, metrics, schema, statistics, indexes."""

from __future__ import annotations

import time

import psycopg

from advisor.core.domain import ColumnStats, Snapshot, StatementStat, TableInfo
from advisor.core.errors import MissingExtension
from connectors.postgres.catalog import read_catalog
from connectors.postgres.connection import TAG
from connectors.postgres.indexes import read_indexes
from connectors.postgres.internal import is_internal

STATEMENTS_SQL = TAG + """
SELECT s.queryid::text, s.query, s.calls, s.total_exec_time, s.rows
FROM pg_stat_statements s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND s.toplevel"""

DATABASE_METRICS_SQL = TAG + """
SELECT numbackends, xact_commit, xact_rollback, blks_read, blks_hit, tup_returned, tup_fetched, tup_inserted,
       tup_updated, tup_deleted, temp_files, temp_bytes, deadlocks, pg_database_size(datname)
FROM pg_stat_database WHERE datname = current_database()"""
DATABASE_METRIC_NAMES = ("backends", "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned",
                         "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "temp_files", "temp_bytes",
                         "deadlocks", "database_bytes")

BGWRITER_SQL = TAG + """
SELECT checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend FROM pg_stat_bgwriter"""
BGWRITER_NAMES = ("checkpoints_timed", "checkpoints_req", "buffers_checkpoint", "buffers_clean", "buffers_backend")

TABLES_SQL = TAG + """
SELECT n.nspname, c.relname, (CASE WHEN c.reltuples < 0 THEN COALESCE(s.n_live_tup, 0) ELSE c.reltuples END)::float8, pg_total_relation_size(c.oid),
       COALESCE(s.seq_scan, 0), COALESCE(s.idx_scan, 0), COALESCE(s.n_tup_ins, 0), COALESCE(s.n_tup_upd, 0),
       COALESCE(s.n_tup_del, 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY 1, 2"""

COLUMNS_SQL = TAG + """
SELECT schemaname, tablename, attname, null_frac, n_distinct, avg_width, correlation
FROM pg_stats WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3"""


def has_extension(conn: psycopg.Connection, name: str) -> bool:
    row = conn.execute(TAG + "SELECT 1 FROM pg_extension WHERE extname = %s", (name,)).fetchone()
    return row is not None


def require_extension(conn: psycopg.Connection, name: str, preload: bool = False) -> None:
    if has_extension(conn, name):
        return
    dbname = conn.info.dbname
    hint = f"run CREATE EXTENSION {name} in database {dbname!r}"
    if preload:
        hint += f" (with {name} in shared_preload_libraries)"
    raise MissingExtension(f"extension {name} is not installed in database {dbname!r}: {hint}")


def read_statements(conn: psycopg.Connection) -> tuple[StatementStat, ...]:
    require_extension(conn, "pg_stat_statements", preload=True)
    try:
        rows = conn.execute(STATEMENTS_SQL).fetchall()
    except psycopg.errors.ObjectNotInPrerequisiteState:
        raise MissingExtension("pg_stat_statements is installed but not loaded: add it to "
                               "shared_preload_libraries and restart the server") from None
    # the application's statements: PostgreSQL's own and its tools' (catalog reads) left out
    return tuple(StatementStat(qid, q, int(calls), float(total), int(r)) for qid, q, calls, total, r in rows
                 if not is_internal(q))


def read_snapshot(conn: psycopg.Connection) -> Snapshot:
    statements = read_statements(conn)
    metrics: dict[str, float] = {}
    row = conn.execute(DATABASE_METRICS_SQL).fetchone()
    if row:
        metrics.update({k: float(v or 0) for k, v in zip(DATABASE_METRIC_NAMES, row)})
    row = conn.execute(BGWRITER_SQL).fetchone()
    if row:
        metrics.update({k: float(v or 0) for k, v in zip(BGWRITER_NAMES, row)})
    version = conn.execute(TAG + "SHOW server_version").fetchone()[0]
    return Snapshot(
        taken_at=time.time(),
        server_version=version,
        server=f"PostgreSQL {version.split()[0]}",
        database=conn.info.dbname,
        statements=statements,
        metrics=metrics,
        settings=tuple(read_catalog(conn).values()),
        tables=tuple(TableInfo(*r) for r in conn.execute(TABLES_SQL)),
        columns=tuple(ColumnStats(*r) for r in conn.execute(COLUMNS_SQL)),
        indexes=read_indexes(conn),
    )


COLUMNS_OF_TABLES_SQL = TAG + """
SELECT n.nspname, c.relname, array_agg(a.attname::text ORDER BY a.attnum)
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'm') AND a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
GROUP BY 1, 2"""


def table_columns(conn: psycopg.Connection) -> dict[tuple[str, str], tuple[str, ...]]:
    """Every user table's columns in order: (schema, table) -> column names."""
    return {(s, t): tuple(cols) for s, t, cols in conn.execute(COLUMNS_OF_TABLES_SQL)}


COLUMN_TYPES_SQL = TAG + """
SELECT n.nspname, c.relname, a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'm') AND a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY 1, 2, a.attnum"""


def column_types(conn: psycopg.Connection) -> dict[tuple[str, str], tuple[tuple[str, str, bool], ...]]:
    """Every user table's columns in order with their SQL type and NOT NULL: (schema, table) -> ((column, type,
    not null), ...)."""
    out: dict[tuple[str, str], list[tuple[str, str, bool]]] = {}
    for s, t, col, typ, not_null in conn.execute(COLUMN_TYPES_SQL):
        out.setdefault((s, t), []).append((col, typ, bool(not_null)))
    return {k: tuple(v) for k, v in out.items()}


KEYS_SQL = TAG + """
SELECT n.nspname, c.relname, array_agg(a.attname::text ORDER BY k.ord)
FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
WHERE i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
GROUP BY n.nspname, c.relname, i.indexrelid"""

FOREIGN_KEYS_SQL = TAG + """
SELECT n.nspname, c.relname, array(SELECT attname::text FROM unnest(f.conkey) WITH ORDINALITY u(k, o)
         JOIN pg_attribute ON attrelid = f.conrelid AND attnum = u.k ORDER BY u.o),
       rc.relname, array(SELECT attname::text FROM unnest(f.confkey) WITH ORDINALITY u(k, o)
         JOIN pg_attribute ON attrelid = f.confrelid AND attnum = u.k ORDER BY u.o)
FROM pg_constraint f JOIN pg_class c ON c.oid = f.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class rc ON rc.oid = f.confrelid
WHERE f.contype = 'f' AND f.convalidated AND n.nspname NOT IN ('pg_catalog', 'information_schema')"""


def unique_keys(conn: psycopg.Connection) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
    """Every user table's unique keys (primary key and unique indexes without a predicate or expression), each
    as its columns: (schema, table) -> ((column, ...), ...)."""
    out: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for s, t, cols in conn.execute(KEYS_SQL):
        out.setdefault((s, t), []).append(tuple(cols))
    return {k: tuple(v) for k, v in out.items()}


def foreign_keys(conn: psycopg.Connection) -> tuple[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], ...]:
    """Every validated foreign key: (schema, table, its columns, the referenced table, the referenced columns)."""
    return tuple((s, t, tuple(cols), rt, tuple(rcols)) for s, t, cols, rt, rcols in conn.execute(FOREIGN_KEYS_SQL))
