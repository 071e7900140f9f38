"""Plans of the fake engine: SQLite's ``EXPLAIN QUERY PLAN`` as a neutral ``Plan``. SQLite states no costs: a node's
cost here is the rows it reads (a whole table's rows for a SCAN, about log2 of them for a SEARCH through an index),
so that an index that turns a scan into a search lowers the cost, as on the other engines. Also the DDL of an
index (``create_index_sql``) and its deterministic name."""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3

from advisor.core.domain import Costed, IndexChange
from advisor.core.plans import FULL_SCAN, INDEX_ONLY, INDEX_SCAN, OTHER, Plan, PlanNode

_STEP = re.compile(r"^(SCAN|SEARCH) (\S+)(?: USING (COVERING INDEX|INDEX|INTEGER PRIMARY KEY) ?(\S+)?)?")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def index_name(ix: IndexChange) -> str:
    """``ix``'s name: its own, else ``<table>_<columns>_<hash>``, within 60 characters."""
    if ix.name:
        return ix.name
    digest = hashlib.sha1(repr((ix.table, ix.columns, ix.include, ix.where)).encode()).hexdigest()[:6]
    return f"{ix.table}_{'_'.join(ix.columns)}"[:50] + f"_{digest}"


def create_index_sql(ix: IndexChange, name: str | None = None) -> str:
    sql = (f"CREATE INDEX {quote(name or index_name(ix))} ON {quote(ix.table)} "
           f"({', '.join(quote(c) for c in ix.columns)})")
    return sql + (f" WHERE {ix.where}" if ix.where else "")


def _rows(conn: sqlite3.Connection, table: str, seen: dict[str, float]) -> float:
    if table not in seen:
        try:
            seen[table] = float(conn.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()[0])
        except sqlite3.Error:  # an alias, or a subquery's name: no table of that name
            seen[table] = 1.0
    return seen[table]


def to_plan(conn: sqlite3.Connection, sql: str) -> Plan:
    """The plan of ``sql`` as a tree of ``PlanNode``; sqlite3.Error when SQLite cannot plan it."""
    steps = conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
    rows: dict[str, float] = {}
    made: dict[int, list[PlanNode]] = {}
    for node_id, parent, _unused, detail in reversed(steps):  # children before parents
        m = _STEP.match(detail)
        children = tuple(reversed(made.pop(node_id, [])))
        if m:
            verb, table, using, index = m.groups()
            n = _rows(conn, table, rows)
            access = FULL_SCAN if verb == "SCAN" and not using else (
                INDEX_ONLY if using == "COVERING INDEX" else INDEX_SCAN)
            cost = n if access == FULL_SCAN else math.log2(n + 1) + 1
            node = PlanNode(detail, access, table=table, index=index if using and "INDEX" in using and
                            "PRIMARY" not in using else None, rows=cost, cost=cost)
        else:
            node = PlanNode(detail, OTHER)
        node = PlanNode(node.operation, node.access, node.table, node.index, node.rows,
                        node.cost + sum(c.cost for c in children), children)
        made.setdefault(parent, []).append(node)
    top = tuple(reversed(made.get(0, [])))
    cost = sum(n.cost for n in top)
    return Plan(cost=cost, rows=max((n.rows for n in top), default=0.0), root=PlanNode("QUERY PLAN", OTHER,
                                                                                    cost=cost, children=top))


def costed(conn: sqlite3.Connection, sql: str) -> Costed:
    plan = to_plan(conn, sql)
    return Costed(plan.cost, plan.full_scans())
