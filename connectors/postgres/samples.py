"""Random samples of a table's rows, for sizing indexes before they are built (``advisor.tuning.indexes.sizing``):
per sampled row its ``ctid`` and, per column, the value's stored size (``pg_column_size``, bytes) and a 64-bit hash
of its text; the table's columns with their type's length and alignment; its row count (``pg_class.reltuples``).
``TABLESAMPLE BERNOULLI`` with a fixed seed (``REPEATABLE``), so that a second query (the rows a partial index's
predicate keeps) reads the same rows; the whole table when it is no larger than the sample. Identifiers are quoted
by psycopg."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from connectors.base import TAG

ALIGNMENTS = {"c": 1, "s": 2, "i": 4, "d": 8}  # pg_type.typalign, in bytes


def _source(schema: str, table: str, percent: float | None, seed: int) -> sql.Composable:
    name = sql.Identifier(schema, table)
    if percent is None:
        return name
    return sql.SQL("{} TABLESAMPLE BERNOULLI ({}) REPEATABLE ({})").format(name, sql.Literal(percent),
                                                                           sql.Literal(seed))


def table_sample(conn: Any, schema: str, table: str, rows: int, seed: int) -> dict | None:
    """About ``rows`` random rows of ``schema.table``: ``{"rows": table rows, "percent": the sample's percentage
    (None: the whole table), "columns": [(name, type length, alignment bytes)], "ctids": [...], "values": [(size,
    hash) per column, per row]}``; None when the table has no columns or rows."""
    cur = conn.cursor()
    cur.execute(sql.SQL(TAG + "SELECT a.attname, t.typlen, t.typalign FROM pg_attribute a JOIN pg_type t ON "
                        "t.oid = a.atttypid WHERE a.attrelid = {}::regclass AND a.attnum > 0 AND NOT "
                        "a.attisdropped ORDER BY a.attnum").format(sql.Literal(sql.Identifier(schema, table)
                                                                               .as_string(conn))))
    columns = [(name, int(length), ALIGNMENTS.get(str(align), 8)) for name, length, align in cur.fetchall()]
    cur.execute(sql.SQL(TAG + "SELECT reltuples FROM pg_class WHERE oid = {}::regclass").format(
        sql.Literal(sql.Identifier(schema, table).as_string(conn))))
    total = float(cur.fetchone()[0])
    percent = None if total <= rows else min(100.0, 100.0 * rows / total)
    parts = sql.SQL(", ").join(sql.SQL("pg_column_size({c}), hashtextextended({c}::text, 0)").format(
        c=sql.Identifier(name)) for name, _, _ in columns)
    cur.execute(sql.SQL(TAG + "SELECT ctid::text, {} FROM {}").format(parts, _source(schema, table, percent, seed)))
    fetched = cur.fetchall()
    if not columns or not fetched:
        return None
    return {"rows": float(len(fetched)) if percent is None else total, "percent": percent, "columns": columns,
            "ctids": [r[0] for r in fetched],
            "values": [[(r[1 + 2 * k], r[2 + 2 * k]) for k in range(len(columns))] for r in fetched]}


def sample_matching(conn: Any, schema: str, table: str, percent: float | None, seed: int, where: str) -> set[str]:
    """The ``ctid``s of the sampled rows (the same sample as ``table_sample``) that ``where`` keeps: a partial
    index's predicate, as the advisor wrote it for the index."""
    cur = conn.cursor()
    cur.execute(sql.SQL(TAG + "SELECT ctid::text FROM {} WHERE {}").format(_source(schema, table, percent, seed),
                                                                             sql.SQL(where)))
    return {r[0] for r in cur.fetchall()}
