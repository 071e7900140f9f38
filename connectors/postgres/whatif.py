"""Planner costs from EXPLAIN (FORMAT JSON), with or without HypoPG hypothetical indexes."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from advisor.core.domain import Costed, IndexChange
from advisor.core.errors import BadStatement
from advisor.core.sqltext import shorten
from connectors.postgres.changes import index_ddl
from connectors.postgres.connection import execute_one
from connectors.postgres.snapshot import require_extension


PLAN_TIMEOUT_MS = 1000  # what-if planning of one statement under one configuration (8-table joins can take long)


class PlanningTimeout(BadStatement):
    """EXPLAIN ran past the session's statement_timeout (the planning of a what-if call took too long)."""


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
        kind = PlanningTimeout if isinstance(e, psycopg.errors.QueryCanceled) else BadStatement
        raise kind(f"cannot plan statement: {msg}: {shorten(text, 120)}") from None
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


def plan_index_names(plan: dict) -> set[str]:
    """Names of the indexes a JSON plan scans (Index Scan, Index Only Scan, Bitmap Index Scan).

    >>> sorted(plan_index_names({"Plan": {"Node Type": "Nested Loop", "Plans": [
    ...     {"Node Type": "Index Scan", "Index Name": "a_idx"},
    ...     {"Node Type": "Bitmap Heap Scan", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "b_idx"}]}]}}))
    ['a_idx', 'b_idx']
    """
    out: set[str] = set()
    stack = [plan.get("Plan", plan)]
    while stack:
        node = stack.pop()
        if "Index Name" in node:
            out.add(node["Index Name"])
        stack.extend(node.get("Plans", ()))
    return out


def seq_scan_costs(plan: dict) -> dict[str, float]:
    """Per table name, the summed total cost of the plan's sequential scans (parallel ones included)."""
    out: dict[str, float] = {}
    stack = [plan["Plan"] if "Plan" in plan else plan]
    while stack:
        node = stack.pop()
        if node.get("Node Type") == "Seq Scan" and "Relation Name" in node:
            out[node["Relation Name"]] = out.get(node["Relation Name"], 0.0) + float(node.get("Total Cost", 0.0))
        stack.extend(node.get("Plans", ()))
    return out


class HypoPG:
    """What-if planning with HypoPG on one open connection (hypothetical indexes live in its backend only, so
    this never changes what other sessions see). Between calls it keeps the hypothetical indexes it made and
    only creates and drops the difference to the next configuration. Use as a context manager.

    ``plan(sql, indexes, tables)`` makes the hypothetical indexes on ``tables`` exactly ``indexes`` (indexes on
    other tables stay, they cannot change the plan), then EXPLAINs; ``index_size`` is HypoPG's estimate in bytes.

    Planning under hypothetical indexes is bounded by ``timeout_ms`` (statement_timeout on the session while it is
    open; 0 for none). A configuration whose planning times out is answered with the statement's cost without
    the hypothetical indexes on its tables (planned without a limit): its indexes are credited no benefit. Such
    answers are counted in ``timeouts``.
    """

    independent = True  # hypothetical indexes live in this session's backend: several sessions plan side by side

    def __init__(self, conn: psycopg.Connection, owns_connection: bool = False, timeout_ms: int = PLAN_TIMEOUT_MS):
        require_extension(conn, "hypopg")
        self.conn = conn
        self.owns_connection = owns_connection  # close() closes the connection too
        self.creates = 0
        self.drops = 0
        self.timeouts = 0
        self.timeout_ms = int(timeout_ms)
        self._live: dict[IndexChange, int] = {}  # hypothetical index -> its oid
        conn.execute("SELECT hypopg_reset()")
        self._saved_timeout = conn.execute("SELECT current_setting('statement_timeout')").fetchone()[0]
        self._set_timeout(str(self.timeout_ms))

    def _set_timeout(self, value: str) -> None:
        self.conn.execute("SELECT set_config('statement_timeout', %s, false)", (value,))

    def __enter__(self) -> "HypoPG":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if not self.conn.closed:
            try:
                self.conn.execute("SELECT hypopg_reset()")
                self._set_timeout(self._saved_timeout)
            except psycopg.Error:
                pass
            if self.owns_connection:
                self.conn.close()
        self._live.clear()

    def _create(self, index: IndexChange) -> int:
        oid = self._live.get(index)
        if oid is not None:
            return oid
        ddl = index_ddl(index, concurrently=False, named=False).as_string(self.conn)
        try:
            row = self.conn.execute("SELECT indexrelid FROM hypopg_create_index(%s)", (ddl,)).fetchone()
        except psycopg.errors.Error as e:
            msg = (e.diag.message_primary or str(e)).strip()
            raise BadStatement(f"cannot create hypothetical index {ddl}: {msg}") from None
        self.creates += 1
        self._live[index] = int(row[0])
        return self._live[index]

    def _drop(self, index: IndexChange) -> None:
        oid = self._live.pop(index)
        self.conn.execute("SELECT hypopg_drop_index(%s)", (oid,))
        self.drops += 1

    def plan(self, sql_text: str, indexes: Sequence[IndexChange], tables: frozenset[tuple[str, str]]) -> Costed:
        wanted = set(indexes)
        for index in [i for i in self._live if (i.schema, i.table) in tables and i not in wanted]:
            self._drop(index)
        for index in wanted:
            self._create(index)
        try:
            plan = explain_plan(self.conn, sql_text)
        except PlanningTimeout:  # the statement without the indexes, planned without a limit
            self.timeouts += 1 if wanted else 0
            for index in [i for i in self._live if (i.schema, i.table) in tables]:
                self._drop(index)
            self._set_timeout("0")
            try:
                plan = explain_plan(self.conn, sql_text)
            finally:
                self._set_timeout(str(self.timeout_ms))
        return Costed(float(plan["Plan"]["Total Cost"]), seq_scan_costs(plan))

    def index_size(self, index: IndexChange) -> int:
        """HypoPG's size estimate in bytes; an index made only to measure it is dropped again, so that it cannot
        linger in the plans of statements whose listed tables miss the table (e.g. behind a view)."""
        made = index not in self._live
        oid = self._create(index)
        size = int(self.conn.execute("SELECT hypopg_relation_size(%s)", (oid,)).fetchone()[0])
        if made:
            self._drop(index)
        return size
