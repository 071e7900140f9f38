"""PostgreSQL's index facts (``IndexFacts``, read from the server) and its existing indexes as structured
columns (``IndexInfo``: method, key columns or expressions with their options, INCLUDE columns, partial
predicate), read from the catalog (pg_index, pg_opclass) rather than parsed from ``pg_get_indexdef`` text; and
what the catalog holds beyond the snapshot: the indexes behind constraints, when the scan counts started, the
columns' standard type names, and the schema unqualified table names resolve to."""

from __future__ import annotations

import psycopg

from advisor.core.domain import IndexInfo
from advisor.core.indexfacts import IndexFacts
from connectors.postgres.connection import TAG

# per key element k (1-based) of index x: its column, or its expression's text where indkey is 0
_KEYS = """array(SELECT COALESCE(a.attname::text, pg_get_indexdef(x.indexrelid, k.n, false))
             FROM generate_series(1, x.indnkeyatts) k(n)
             LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND x.indkey[k.n - 1] <> 0
                                     AND a.attnum = x.indkey[k.n - 1]
             ORDER BY k.n)"""
# its non-default operator class, then DESC / NULLS FIRST / NULLS LAST as pg_get_indexdef writes them
_OPTIONS = """array(SELECT concat_ws(' ', CASE WHEN NOT oc.opcdefault THEN oc.opcname END,
                                   CASE WHEN x.indoption[k.n - 1] & 1 = 1 THEN 'DESC' END,
                                   CASE x.indoption[k.n - 1] & 3 WHEN 2 THEN 'NULLS FIRST'
                                                                 WHEN 1 THEN 'NULLS LAST' END)
             FROM generate_series(1, x.indnkeyatts) k(n) LEFT JOIN pg_opclass oc ON oc.oid = x.indclass[k.n - 1]
             ORDER BY k.n)"""
_INCLUDE = """array(SELECT a.attname::text FROM generate_series(x.indnkeyatts + 1, x.indnatts) k(n)
             JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[k.n - 1] ORDER BY k.n)"""
_EXPRESSIONS = "array(SELECT x.indkey[k.n - 1] = 0 FROM generate_series(1, x.indnkeyatts) k(n) ORDER BY k.n)"

INDEXES_SQL = TAG + f"""
SELECT n.nspname, t.relname, i.relname, pg_get_indexdef(i.oid), pg_relation_size(i.oid),
       COALESCE(s.idx_scan, 0), x.indisunique, x.indisprimary, am.amname,
       {_KEYS}, {_OPTIONS}, {_INCLUDE}, COALESCE(pg_get_expr(x.indpred, x.indrelid), ''), {_EXPRESSIONS}
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_am am ON am.oid = i.relam
LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = x.indexrelid
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY 1, 2, 3"""

CONSTRAINT_INDEXES_SQL = TAG + ("SELECT c.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conindid "
                                "WHERE k.conindid <> 0 AND k.conrelid <> 0")
STATS_RESET_SQL = TAG + ("SELECT to_char(stats_reset, 'YYYY-MM-DD HH24:MI TZ') FROM pg_stat_database "
                         "WHERE datname = current_database()")


def read_indexes(conn: psycopg.Connection) -> tuple[IndexInfo, ...]:
    """Every index of the user tables, by schema, table and name."""
    return tuple(IndexInfo(s, t, name, definition, int(size), int(scans), bool(unique), bool(primary), method,
                           tuple(keys), tuple(options), tuple(include), predicate, tuple(bool(e) for e in exprs))
                 for s, t, name, definition, size, scans, unique, primary, method, keys, options, include,
                 predicate, exprs in conn.execute(INDEXES_SQL))


def constraint_indexes(conn: psycopg.Connection) -> set[str]:
    """Names of the indexes behind a constraint (an exclusion constraint's is neither unique nor primary)."""
    return {r[0] for r in conn.execute(CONSTRAINT_INDEXES_SQL)}


def stats_since(conn: psycopg.Connection) -> str | None:
    """When the database's statistics (index scan counts) were last reset, as ``YYYY-MM-DD HH24:MI TZ``."""
    row = conn.execute(STATS_RESET_SQL).fetchone()
    return row[0] if row and row[0] else None


INDEX_ENTRY_COST = 2.0  # cost units per index entry written: about half a random page (random_page_cost 4)
# types whose B-tree indexes are never deduplicated (the PostgreSQL documentation's list, as information_schema
# names them: arrays are ARRAY, domains and composites USER-DEFINED)
NO_DEDUP = ("numeric", "real", "double precision", "jsonb", "ARRAY", "USER-DEFINED", "int4range", "int8range",
            "numrange", "tsrange", "tstzrange", "daterange")
FACTS_SQL = TAG + ("SELECT current_setting('block_size')::int, current_setting('server_version_num')::int, "
                   "current_setting('max_index_keys')::int, current_setting('max_identifier_length')::int")
COLUMN_DATA_TYPES_SQL = TAG + """SELECT table_schema, table_name, column_name, data_type
FROM information_schema.columns WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"""


def index_facts(conn: psycopg.Connection) -> IndexFacts:
    """The server's B-tree page size, key and name limits; deduplication since PostgreSQL 13, INCLUDE since 11."""
    page, version, keys, name = conn.execute(FACTS_SQL).fetchone()
    return IndexFacts(page_bytes=int(page), deduplication=version >= 130000, include=version >= 110000,
                      partial=True, max_key_columns=int(keys), name_limit=int(name),
                      cost_unit="planner cost units (a sequential page read = 1)",
                      entry_cost=INDEX_ENTRY_COST, no_dedup_types=NO_DEDUP)


def default_schema(conn: psycopg.Connection) -> str:
    """The first schema of the search_path that exists (where an unqualified name resolves); public when none."""
    return conn.execute(TAG + "SELECT current_schema()").fetchone()[0] or "public"


def column_data_types(conn: psycopg.Connection) -> dict[tuple[str, str, str], str]:
    """(schema, table, column) -> information_schema's ``data_type`` of every user table's column."""
    return {(s, t, c): kind for s, t, c, kind in conn.execute(COLUMN_DATA_TYPES_SQL)}
