"""Turning statement-stat snapshots into a Workload: the delta between two snapshots, minus noise.

Left out: the advisor's own statements (tagged ``/* db-advisor */``), utility statements (SET, BEGIN, COPY,
DDL ...) and statements that only read the system catalogs or statistics views.
"""

from __future__ import annotations

import re

from advisor.core.domain import Snapshot, Statement, Workload

REPLAYABLE_HEADS = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "VALUES", "TABLE", "MERGE")
TAG_PREFIX = "/* db-advisor */"
# Any pg_* name (system catalogs, statistics views, admin functions: PostgreSQL reserves the prefix; pg_dump's
# catalog queries, which land in pg_stat_statements whenever a shadow is copied, are all of this kind) and the
# advisor's own extensions and settings functions.
_CATALOG = re.compile(r"\b(pg_\w+|information_schema|hypopg\w*|current_setting|set_config|version)\b", re.I)
_LEADING_COMMENTS = re.compile(r"^\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*)*", re.S)


def statement_head(sql: str) -> str:
    body = _LEADING_COMMENTS.sub("", sql, count=1).lstrip("( \n\t")
    return body.split(None, 1)[0].upper() if body else ""


def is_workload_statement(sql: str) -> bool:
    """Whether a normalized statement belongs to the application's workload."""
    if sql.lstrip().startswith(TAG_PREFIX):
        return False
    if statement_head(sql) not in REPLAYABLE_HEADS:
        return False
    return not _CATALOG.search(sql)


def workload_delta(after: Snapshot, before: Snapshot | None = None) -> Workload:
    """Statements that ran between ``before`` and ``after`` (all since the last stats reset if no ``before``).

    A statement whose counters went down (stats were reset in between) counts from zero.
    """
    previous = {s.queryid: s for s in before.statements} if before else {}
    out: list[Statement] = []
    for stat in after.statements:
        if not is_workload_statement(stat.query):
            continue
        prev = previous.get(stat.queryid)
        calls, total, rows = stat.calls, stat.total_ms, stat.rows
        if prev is not None and prev.calls <= stat.calls:
            calls, total, rows = calls - prev.calls, total - prev.total_ms, rows - prev.rows
        if calls <= 0:
            continue
        out.append(Statement(stat.queryid, stat.query, calls, max(total, 0.0), max(rows, 0)))
    out.sort(key=lambda s: s.total_ms, reverse=True)
    interval = after.taken_at - before.taken_at if before else None
    return Workload(tuple(out), interval)
