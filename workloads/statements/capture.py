"""Turning statement-stat snapshots into a Workload: the delta between two snapshots, minus noise, one statement
per normalized text.

The engine may keep several entries for one statement: pg_stat_statements' queryid depends on the types the
parameters were bound as (``WHERE id = $1`` called with an int4, an int8 and a numeric is three queryids), and it
keeps one entry per role that ran a statement. Entries with the same normalized text are one statement of the workload: their calls, time
and rows are summed under the busiest entry's queryid, and the others are listed in ``Statement.merged``.

Left out: the advisor's own statements (tagged ``/* db-advisor */``) and utility statements (SET, BEGIN, COPY,
DDL ...). Statements of the engine itself and its tools (reads of system catalogs or statistics views) are the
engine's fact: its connector's snapshot leaves them out (``Connector.observe``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from advisor.core.domain import Snapshot, Statement, StatementStat, Workload
from connectors.base import TAG

REPLAYABLE_HEADS = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "VALUES", "TABLE", "MERGE")
TAG_PREFIX = TAG.strip()
_LEADING_COMMENTS = re.compile(r"^\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*)*", re.S)


def statement_head(sql: str) -> str:
    body = _LEADING_COMMENTS.sub("", sql, count=1).lstrip("( \n\t")
    return body.split(None, 1)[0].upper() if body else ""


def is_workload_statement(sql: str) -> bool:
    """Whether a normalized statement the engine captured belongs to the application's workload: not the
    advisor's own, and a statement that can be replayed (a query or a write, not a utility statement)."""
    if sql.lstrip().startswith(TAG_PREFIX):
        return False
    return statement_head(sql) in REPLAYABLE_HEADS


def workload_delta(after: Snapshot, before: Snapshot | None = None) -> Workload:
    """Statements that ran between ``before`` and ``after`` (all since the last stats reset if no ``before``).

    A statement whose counters went down (stats were reset in between) counts from zero.
    """
    previous = _by_queryid(before.statements) if before else {}
    ran: list[Statement] = []
    for stat in _by_queryid(after.statements).values():
        if not is_workload_statement(stat.query):
            continue
        prev = previous.get(stat.queryid)
        calls, total, rows = stat.calls, stat.total_ms, stat.rows
        if prev is not None and prev.calls <= stat.calls:
            calls, total, rows = calls - prev.calls, total - prev.total_ms, rows - prev.rows
        if calls <= 0:
            continue
        ran.append(Statement(stat.queryid, stat.query, calls, max(total, 0.0), max(rows, 0)))
    out = merge_same_text(ran)
    out.sort(key=lambda s: s.total_ms, reverse=True)
    interval = after.taken_at - before.taken_at if before else None
    return Workload(tuple(out), interval)


def _by_queryid(stats: Sequence[StatementStat]) -> dict[str, StatementStat]:
    """One entry per queryid (the engine keeps one per role that ran it), counters summed."""
    out: dict[str, StatementStat] = {}
    for s in stats:
        o = out.get(s.queryid)
        out[s.queryid] = s if o is None else StatementStat(s.queryid, o.query, o.calls + s.calls,
                                                           o.total_ms + s.total_ms, o.rows + s.rows)
    return out


def merge_same_text(statements: Sequence[Statement]) -> list[Statement]:
    """One statement per normalized text: calls, time and rows summed under the busiest one's queryid (the first
    given on a tie), the other queryids in ``merged``; statements with another text stay apart.

    >>> a, b = Statement("1", "SELECT * FROM t WHERE id = $1", 10, 5.0, 10), Statement("2", "SELECT 1", 1, 1.0, 1)
    >>> c = Statement("3", "SELECT * FROM t WHERE id = $1", 30, 9.0, 30)
    >>> merge_same_text([a, b, c])
    [Statement(queryid='3', sql='SELECT * FROM t WHERE id = $1', calls=40, total_ms=14.0, rows=40, merged=('1',)), \
Statement(queryid='2', sql='SELECT 1', calls=1, total_ms=1.0, rows=1, merged=())]
    """
    groups: dict[str, list[Statement]] = {}
    for st in statements:
        groups.setdefault(st.sql, []).append(st)
    out = []
    for group in groups.values():
        busiest = max(group, key=lambda s: s.calls)  # max keeps the first of equals
        others = tuple(q for st in group if st is not busiest for q in (st.queryid, *st.merged))
        out.append(replace(busiest, calls=sum(s.calls for s in group), total_ms=sum(s.total_ms for s in group),
                           rows=sum(s.rows for s in group), merged=(*busiest.merged, *others)))
    return out  # in the order each text was first given
