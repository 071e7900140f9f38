"""Reading a MariaDB database: the system-variable catalog, one ``Snapshot`` (statement digests, global status,
tables, column statistics, indexes) and the schema facts (columns, types, unique and foreign keys).

Every function takes an open PyMySQL connection whose default database is the target's; "schema" in a
``TableRef`` is the database name. Units: times in ms (performance_schema counts picoseconds), sizes in bytes.
"""

from __future__ import annotations

import re

import time
from collections import defaultdict

import pymysql

from advisor.core.domain import ColumnStats, IndexInfo, KnobSpec, Snapshot, StatementStat, TableInfo
from connectors.mariadb.connection import TAG, quote, to_dollar_placeholders
from connectors.mariadb.indexes import index_usage

PICOSECONDS_PER_MS = 1e9
# statements that are no application workload to tune: schema changes, administration, statements about the
# session, and those reading the server's own schemas
SKIPPED_HEADS = ("SHOW", "SET", "EXPLAIN", "CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "RENAME", "OPTIMIZE",
                 "CHECK", "REPAIR", "INSTALL", "UNINSTALL", "LOCK", "UNLOCK", "PREPARE", "DEALLOCATE", "EXECUTE", "KILL", "USE", "ANALYZE", "FLUSH",
                 "TRUNCATE `performance_schema`", "TRUNCATE TABLE `performance_schema`", "COMMIT", "ROLLBACK",
                 "BEGIN", "START", "DESCRIBE", "DESC", "SAVEPOINT", "RELEASE")
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
# how mariadb-dump (a shadow being cloned, a backup) reads a whole table, or a sampled clone's share of one
_NAME = r"`(?:[^`]|``)+`"
_DUMP_READ = re.compile(rf"^SELECT SQL_NO_CACHE (?:\*|{_NAME}(?: , {_NAME})*) FROM {_NAME}(?: WHERE RAND \( \? \) < \?)?$",
                        re.IGNORECASE)
_SKIP_TEXT = ("`information_schema`", "`performance_schema`", "`mysql` .", "information_schema .",
              "performance_schema .")

# A digest drops comments, so the advisor's own statements (which start with TAG) are told apart by the texts in
# the statement history: a digest is left out when the history holds it only with TAG, never without (one the
# application also runs stays, counted whole). The advisor's own connections are also uninstrumented where the
# login may (connector._guarded), so that they reach no digest at all.
STATEMENTS_SQL = TAG + """
SELECT DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, SUM_ROWS_SENT + SUM_ROWS_AFFECTED
FROM performance_schema.events_statements_summary_by_digest d
WHERE SCHEMA_NAME = DATABASE() AND DIGEST IS NOT NULL
  AND NOT (DIGEST IN (SELECT DIGEST FROM performance_schema.events_statements_history_long
                      WHERE SQL_TEXT LIKE '/* db-advisor */%' AND DIGEST IS NOT NULL)
           AND DIGEST NOT IN (SELECT DIGEST FROM performance_schema.events_statements_history_long
                              WHERE SQL_TEXT NOT LIKE '/* db-advisor */%' AND DIGEST IS NOT NULL))"""

CATALOG_SQL = TAG + """
SELECT LOWER(VARIABLE_NAME), VARIABLE_TYPE, GLOBAL_VALUE, DEFAULT_VALUE, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE,
       ENUM_VALUE_LIST, READ_ONLY, VARIABLE_SCOPE, GLOBAL_VALUE_ORIGIN, VARIABLE_COMMENT
FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_SCOPE <> 'SESSION ONLY' ORDER BY 1"""

TABLES_SQL = TAG + """
SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(TABLE_ROWS, 0), COALESCE(DATA_LENGTH, 0) + COALESCE(INDEX_LENGTH, 0)
FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' ORDER BY 2"""

TABLESPACES_SQL = TAG + """
SELECT NAME, ALLOCATED_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE CONCAT(DATABASE(), '/%')"""

INDEX_COLUMNS_SQL = TAG + """
SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME, NON_UNIQUE, SEQ_IN_INDEX, CARDINALITY, INDEX_TYPE,
       SUB_PART
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX"""

INDEX_SIZES_SQL = TAG + """
SELECT table_name, index_name, stat_value * @@innodb_page_size FROM mysql.innodb_index_stats
WHERE database_name = DATABASE() AND stat_name = 'size'"""

COLUMNS_SQL = TAG + """
SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION"""

FOREIGN_KEYS_SQL = TAG + """
SELECT k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_NAME,
       k.REFERENCED_COLUMN_NAME
FROM information_schema.KEY_COLUMN_USAGE k
WHERE k.TABLE_SCHEMA = DATABASE() AND k.REFERENCED_TABLE_NAME IS NOT NULL
ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION"""

_TYPES = {"BOOLEAN": "bool", "DOUBLE": "real", "ENUM": "enum"}
# integers named like sizes or buffers that count things (threads, pages, rows, entries, percent), not bytes
NOT_BYTES = frozenset({"thread_cache_size", "thread_pool_size", "host_cache_size", "delayed_queue_size",
                       "gtid_cleanup_batch_size", "innodb_buffer_pool_dump_pct", "innodb_change_buffer_max_size",
                       "innodb_ft_max_token_size", "innodb_ft_min_token_size", "innodb_lru_flush_size",
                       "innodb_purge_batch_size", "max_join_size", "metadata_locks_cache_size",
                       "profiling_history_size", "key_cache_file_hash_size", "aria_pagecache_file_hash_size"})
_ORIGINS = {"COMPILE-TIME": "default", "CONFIG": "configuration file", "COMMAND-LINE": "command line",
            "SQL": "session", "AUTO": "override", "ENVIRONMENT": "environment variable"}


def _rows(conn: pymysql.connections.Connection, query: str, args: tuple = ()) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(query, args or None)
        return list(cur.fetchall())


# variables only the optimizer reads that change a statement's time only by changing its plan (its estimates);
# not the search limits (optimizer_search_depth, optimizer_prune_level, eq_range_index_dive_limit): they are tuned
# for the optimizer's own time, which a statement's time includes, often with the same plan
PLANNER_VARIABLES = frozenset({"optimizer_use_condition_selectivity"})


def knob_spec(name: str, vartype: str, value: str | None, default: str | None, lo: str | None, hi: str | None,
              enums: str | None, read_only: str, scope: str, origin: str | None, comment: str | None) -> KnobSpec:
    """One row of information_schema.SYSTEM_VARIABLES as a ``KnobSpec``: integers whose name says size or
    buffer are in bytes (unit ``B``), those of ``NOT_BYTES`` and performance_schema's sizes aside; a read-only
    variable needs a restart (context ``postmaster``), a global one
    is set with SET GLOBAL (``sighup``: no restart), one with a session value also per session (``user``).

    >>> s = knob_spec("sort_buffer_size", "BIGINT UNSIGNED", "2097152", "2097152", "1024", "18446744073709551615",
    ...               None, "NO", "SESSION", "COMPILE-TIME", "")
    >>> s.vartype, s.unit, s.min_value, s.context, s.needs_restart, s.source
    ('integer', 'B', 1024.0, 'user', False, 'default')
    >>> s = knob_spec("innodb_flush_method", "ENUM", "fsync", "O_DIRECT", None, None, "fsync,O_DIRECT", "YES",
    ...               "GLOBAL", "CONFIG", "")
    >>> s.vartype, s.enum_values, s.needs_restart, s.setting
    ('enum', ('fsync', 'O_DIRECT'), True, 'fsync')
    >>> knob_spec("autocommit", "BOOLEAN", "ON", "ON", None, None, "OFF,ON", "NO", "SESSION", None, "").setting
    'on'
    """
    kind = _TYPES.get(vartype) or ("integer" if "INT" in vartype else "string")
    unit = "B" if kind == "integer" and any(w in name for w in ("size", "buffer")) and name not in NOT_BYTES \
        and not name.startswith("performance_schema_") else None
    setting = "" if value is None else str(value)
    boot = None if default is None else str(default)
    if kind == "bool":
        setting, boot = setting.lower(), boot.lower() if boot else boot
    context = "postmaster" if read_only == "YES" else ("sighup" if scope == "GLOBAL" else "user")
    return KnobSpec(
        name=name, vartype=kind, unit=unit, setting=setting, boot_value=boot,
        min_value=float(lo) if lo not in (None, "") and kind in ("integer", "real") else None,
        max_value=float(hi) if hi not in (None, "") and kind in ("integer", "real") else None,
        enum_values=tuple(v for v in (enums or "").split(",") if v) if kind in ("enum", "bool") else (),
        context=context, category=name.split("_", 1)[0], description=comment or "",
        source=_ORIGINS.get(origin or "", "default"), sourcefile=None, plans_only=name in PLANNER_VARIABLES)


def read_catalog(conn: pymysql.connections.Connection) -> dict[str, KnobSpec]:
    return {row[0]: knob_spec(*row) for row in _rows(conn, CATALOG_SQL)}


def is_workload(digest_text: str) -> bool:
    """Whether a digest is the application's: not a statement about the session or the server's own schemas.

    >>> is_workload("SELECT * FROM `t` WHERE `a` = ?"), is_workload("SHOW GLOBAL STATUS")
    (True, False)
    >>> is_workload("SELECT * FROM `information_schema` . `TABLES`"), is_workload("SET SESSION `x` = ?")
    (False, False)

    A dump's reads (a shadow cloned by mariadb-dump, a backup) are no workload either:

    >>> is_workload("SELECT SQL_NO_CACHE `id` , `b` FROM `items` "), is_workload("RELEASE SAVEPOINT `sp` ")
    (False, False)
    >>> is_workload("SELECT SQL_NO_CACHE `id` FROM `items` WHERE RAND ( ? ) < ?"), is_workload("SELECT @@`x` ")
    (False, False)
    >>> is_workload("SELECT SQL_NO_CACHE `a` FROM `items` WHERE `b` = ?")  # an application's own hint stays
    True
    """
    head = digest_text.lstrip().upper()
    lowered = digest_text.lower()
    return (not head.startswith(SKIPPED_HEADS) and not head.startswith("SELECT @@")
            and not any(s in lowered for s in _SKIP_TEXT) and not _DUMP_READ.match(digest_text.strip()))


def read_statements(conn: pymysql.connections.Connection) -> tuple[StatementStat, ...]:
    """The statement digests of this database (``?`` turned into ``$1..$n``), the advisor's own left out."""
    out = []
    for digest, text, calls, picos, rows in _rows(conn, STATEMENTS_SQL):
        if text and is_workload(text):
            out.append(StatementStat(str(digest), to_dollar_placeholders(text.strip()), int(calls),
                                     float(picos) / PICOSECONDS_PER_MS, int(rows or 0)))
    return tuple(out)


def read_metrics(conn: pymysql.connections.Connection) -> dict[str, float]:
    """SHOW GLOBAL STATUS: every numeric counter, lower-cased names."""
    out: dict[str, float] = {}
    for name, value in _rows(conn, TAG + "SHOW GLOBAL STATUS"):
        try:
            out[str(name).lower()] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def index_columns(conn: pymysql.connections.Connection) -> dict[tuple[str, str, str], dict]:
    """Per (database, table, index): its columns in order, uniqueness, cardinality and type."""
    out: dict[tuple[str, str, str], dict] = {}
    for schema, table, index, column, non_unique, _seq, card, kind, sub_part in _rows(conn, INDEX_COLUMNS_SQL):
        entry = out.setdefault((schema, table, index), {"columns": [], "unique": not int(non_unique),
                                                        "cardinality": [], "type": kind})
        entry["columns"].append(column if sub_part is None else f"{column}({sub_part})")
        entry["cardinality"].append(card)
    return out


def read_indexes(conn: pymysql.connections.Connection) -> tuple[IndexInfo, ...]:
    sizes = {(t, i): int(b) for t, i, b in _rows(conn, INDEX_SIZES_SQL)}
    usage = index_usage(conn)  # rows read through each index (performance_schema), None when it is off
    out = []
    for (schema, table, index), e in index_columns(conn).items():
        cols = ", ".join(quote(c) if "(" not in c else c for c in e["columns"])
        unique = "UNIQUE " if e["unique"] and index != "PRIMARY" else ""
        definition = (f"PRIMARY KEY ({cols})" if index == "PRIMARY" else
                      f"CREATE {unique}INDEX {quote(index)} ON {quote(table)} ({cols}) USING {e['type']}")
        prefixed = tuple("(" in c for c in e["columns"])  # a column prefix b(10) is no plain key column
        scans = -1 if usage is None else usage.get((schema, table, index), 0)  # -1: not counted
        out.append(IndexInfo(schema, table, index, definition, sizes.get((table, index), 0), scans, e["unique"],
                             index == "PRIMARY", str(e["type"]).lower(), tuple(e["columns"]),
                             ("",) * len(e["columns"]), (), "", prefixed))
    return tuple(out)


def read_columns(conn: pymysql.connections.Connection) -> tuple[ColumnStats, ...]:
    """What is cheap: n_distinct from the cardinality of an index whose first column it is (0 = unknown);
    null_frac unknown (0), average width unknown (0)."""
    distinct: dict[tuple[str, str, str], float] = {}
    for (schema, table, _index), e in index_columns(conn).items():
        if e["cardinality"] and e["cardinality"][0] is not None and "(" not in e["columns"][0]:
            key = (schema, table, e["columns"][0])
            distinct[key] = max(distinct.get(key, 0.0), float(e["cardinality"][0]))
    return tuple(ColumnStats(s, t, c, 0.0, distinct.get((s, t, c), 0.0), 0, None)
                 for s, t, c, _type, _null in _rows(conn, COLUMNS_SQL))


def read_tables(conn: pymysql.connections.Connection) -> tuple[TableInfo, ...]:
    """The database's base tables: estimated rows, and their bytes on disk. information_schema.TABLES's
    DATA_LENGTH + INDEX_LENGTH comes from InnoDB's persistent statistics, which lag a bulk load (200,000 fresh rows
    read as 64 kB); a table's own tablespace file (``tablespace_bytes``) says what it holds now, and the larger
    of the two is taken."""
    files = tablespace_bytes(conn)
    return tuple(TableInfo(s, t, float(r), max(int(b), files.get(f"{s}/{t}", 0)))
                 for s, t, r, b in _rows(conn, TABLES_SQL))


def tablespace_bytes(conn: pymysql.connections.Connection) -> dict[str, int]:
    """Per ``database/table``: the bytes its file-per-table tablespace takes on disk
    (INNODB_SYS_TABLESPACES.ALLOCATED_SIZE); {} where the advisor's account may not read it (it needs PROCESS)."""
    try:
        return {str(n): int(b or 0) for n, b in _rows(conn, TABLESPACES_SQL)}
    except pymysql.MySQLError:
        return {}


def read_snapshot(conn: pymysql.connections.Connection) -> Snapshot:
    (version, database), = _rows(conn, TAG + "SELECT VERSION(), DATABASE()")
    tables = read_tables(conn)
    return Snapshot(taken_at=time.time(), server_version=str(version), database=str(database or ""),
                    statements=read_statements(conn), metrics=read_metrics(conn),
                    settings=tuple(read_catalog(conn).values()), tables=tables, columns=read_columns(conn),
                    indexes=read_indexes(conn), server=f"MariaDB {str(version).split('-')[0]}")


def column_types(conn: pymysql.connections.Connection) -> dict[tuple[str, str], tuple[tuple[str, str, bool], ...]]:
    out: dict[tuple[str, str], list[tuple[str, str, bool]]] = defaultdict(list)
    for schema, table, column, ctype, nullable in _rows(conn, COLUMNS_SQL):
        out[(schema, table)].append((column, str(ctype), nullable == "NO"))
    return {k: tuple(v) for k, v in out.items()}


def table_columns(conn: pymysql.connections.Connection) -> dict[tuple[str, str], tuple[str, ...]]:
    return {k: tuple(c for c, _t, _n in v) for k, v in column_types(conn).items()}


def unique_keys(conn: pymysql.connections.Connection) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
    out: dict[tuple[str, str], list[tuple[str, ...]]] = defaultdict(list)
    for (schema, table, _index), e in index_columns(conn).items():
        if e["unique"] and not any("(" in c for c in e["columns"]):  # a prefix key is unique on the prefix only
            out[(schema, table)].append(tuple(e["columns"]))
    return {k: tuple(v) for k, v in out.items()}


def foreign_keys(conn: pymysql.connections.Connection) -> tuple[tuple[str, str, tuple[str, ...], str,
                                                                       tuple[str, ...]], ...]:
    keys: dict[tuple[str, str, str], tuple[list[str], str, list[str]]] = {}
    for schema, table, name, column, ref_table, ref_column in _rows(conn, FOREIGN_KEYS_SQL):
        entry = keys.setdefault((schema, table, name), ([], ref_table, []))
        entry[0].append(column)
        entry[2].append(ref_column)
    return tuple((s, t, tuple(cols), ref, tuple(ref_cols)) for (s, t, _n), (cols, ref, ref_cols) in keys.items())
