"""Planner costs from EXPLAIN (FORMAT JSON), with or without HypoPG hypothetical indexes."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from advisor.domain import IndexChange
from advisor.errors import BadStatement
from connectors.postgres.changes import index_ddl
from connectors.postgres.connection import execute_one
from connectors.postgres.snapshot import require_extension


def explain_plan(conn: psycopg.Connection, statement: str) -> dict:
    """The JSON plan of one statement whose parameters are bound (PG 15 has no GENERIC_PLAN)."""
    text = statement.strip().rstrip(";")
    if not text:
        raise BadStatement("empty statement")
    query = sql.SQL("EXPLAIN (FORMAT JSON) ") + sql.SQL(text)  # type: ignore[arg-type]
    try:
        row = execute_one(conn.cursor(), query).fetchone()
    except psycopg.errors.Error as e:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
            conn.rollback()
        msg = (e.diag.message_primary or str(e)).strip().splitlines()[0]
        raise BadStatement(f"cannot plan statement: {msg}: {_short(text)}") from None
    return row[0][0]


def explain_cost(conn: psycopg.Connection, statement: str, hypothetical: Sequence[IndexChange] = ()) -> float:
    """Total planner cost of ``statement``; hypothetical indexes exist only for this call."""
    if not hypothetical:
        return float(explain_plan(conn, statement)["Plan"]["Total Cost"])
    require_extension(conn, "hypopg")
    try:
        for change in hypothetical:
            ddl = index_ddl(change, concurrently=False, named=False).as_string(conn)
            try:
                conn.execute("SELECT * FROM hypopg_create_index(%s)", (ddl,))
            except psycopg.errors.Error as e:
                msg = (e.diag.message_primary or str(e)).strip()
                raise BadStatement(f"cannot create hypothetical index {ddl}: {msg}") from None
        return float(explain_plan(conn, statement)["Plan"]["Total Cost"])
    finally:
        conn.execute("SELECT hypopg_reset()")


def _short(text: str, n: int = 120) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."
