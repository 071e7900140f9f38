"""Binding normalized statements (``$1, $2 ...``) to constants so they can be replayed and EXPLAINed on PG 15.

In order of preference:
1. the statement has no parameters: it runs as it is;
2. pg_qualstats kept an example of the statement with its real constants (``pg_qualstats_example_query``);
3. parameter types from PREPARE, values from the column each parameter is compared with (pg_stats: the median
   of the histogram, else the most common value), type-based defaults where no column is involved (LIMIT 100).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
import sqlglot
from psycopg import sql
from sqlglot import exp

from advisor.core.domain import Statement, Workload
from advisor.core.errors import BadStatement
from connectors.base import TAG, Connector

NUMERIC_TYPES = {"smallint", "integer", "bigint", "numeric", "real", "double precision", "oid"}
TYPE_DEFAULTS = {"date": "2000-01-01", "interval": "1 day", "boolean": "true", "text": "",
                 "character varying": "", "character": "", "timestamp without time zone": "2000-01-01 00:00:00",
                 "timestamp with time zone": "2000-01-01 00:00:00+00"}
_PARAM = re.compile(r"\$(\d+)")


@dataclass(frozen=True)
class BoundStatement:
    queryid: str
    normalized: str
    sql: str  # executable: every parameter replaced by a constant
    weight: float  # calls in the observed interval
    source: str  # literal | qualstats | statistics
    is_write: bool
    rows_per_call: float = 1.0  # rows returned or written per call in the observed interval


def substitute(text: str, value_for: Callable[[int], str]) -> str:
    """Replace each ``$n`` outside quotes and comments with ``value_for(n)`` (already rendered SQL)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            j = i + 1
            while j < n:
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(text[i:j])
            i = j
        elif ch == "$" and (m := _PARAM.match(text, i)) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            out.append(value_for(int(m.group(1))))
            i = m.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parameters(text: str) -> list[int]:
    found: set[int] = set()
    substitute(text, lambda k: found.add(k) or "")
    return sorted(found)


def _bound_value(values: dict[int, str]) -> Callable[[int], str]:
    def value_for(k: int) -> str:
        if k not in values:
            raise BadStatement(f"no value bound for ${k}")
        return values[k]

    return value_for


def render(value: str, pg_type: str) -> str:
    """A constant as SQL: bare for numbers, a quoted literal (typed by context) otherwise."""
    if pg_type in NUMERIC_TYPES and re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", value.strip()):
        return value.strip()
    return sql.Literal(value).as_string(None)


class Binder:
    """Binds statements of one database. Holds one connection; use as a context manager."""

    def __init__(self, connector: Connector):
        self.connector = connector
        self.conn: psycopg.Connection | None = None
        self._qualstats = False

    def __enter__(self) -> "Binder":
        self._qualstats = self.connector.has_extension("pg_qualstats")
        self.conn = self.connector.connect()
        return self

    def __exit__(self, *exc) -> None:
        if self.conn is not None:
            self.conn.close()

    def bind(self, statement: Statement) -> BoundStatement:
        params = parameters(statement.sql)
        if not params:
            return self._bound(statement, statement.sql, "literal")
        example = self._example(statement.queryid)
        if example is not None and not parameters(example):
            return self._bound(statement, example, "qualstats")
        types = self._parameter_types(statement.sql, len(params))
        columns = _compared_columns(statement.sql)
        values: dict[int, str] = {}
        for k in params:
            pg_type = types[k - 1] if k - 1 < len(types) else "unknown"
            value = self._column_value(columns.get(k), statement.sql) if k in columns else None
            if value is None:
                value = "100" if columns.get(k) == ("", "", "LIMIT") else _type_default(pg_type)
            if value is None:
                raise BadStatement(f"cannot bind ${k} of type {pg_type} in: {' '.join(statement.sql.split())[:100]}")
            values[k] = render(value, pg_type)
        return self._bound(statement, substitute(statement.sql, _bound_value(values)), "statistics")

    def _bound(self, st: Statement, text: str, source: str) -> BoundStatement:
        return BoundStatement(st.queryid, st.sql, text, float(st.calls), source, st.is_write,
                              st.rows / st.calls if st.calls else 1.0)

    def _example(self, queryid: str) -> str | None:
        if not self._qualstats:
            return None
        row = self.conn.execute(TAG + "SELECT pg_qualstats_example_query(%s::bigint)", (queryid,)).fetchone()
        return row[0] if row and row[0] else None

    def _parameter_types(self, text: str, count: int) -> list[str]:
        name = "advisor_bind"
        try:
            prepare = sql.SQL("PREPARE {} AS ").format(sql.Identifier(name)) + sql.SQL(text)  # type: ignore[arg-type]
            self.connector.execute_one(self.conn.cursor(), prepare)
        except psycopg.errors.Error as e:
            raise BadStatement(f"cannot prepare statement: {(e.diag.message_primary or str(e)).strip()}") from None
        try:
            row = self.conn.execute(TAG + "SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = %s",
                                    (name,)).fetchone()
            return list(row[0]) if row else []
        finally:
            # only our own: DEALLOCATE ALL would also drop the statements psycopg prepares for its repeated queries
            self.conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(name)))

    def _column_value(self, ref: tuple[str, str, str] | None, text: str) -> str | None:
        if ref is None or ref[2] == "LIMIT":
            return None
        table, column, _ = ref
        row = self.conn.execute(
            TAG + """
            SELECT (histogram_bounds::text::text[])[(array_length(histogram_bounds::text::text[], 1) + 1) / 2],
                   (most_common_vals::text::text[])[1]
            FROM pg_stats WHERE attname = %s AND (tablename = %s OR %s = '')
            ORDER BY (tablename = %s) DESC LIMIT 1""", (column, table, table, table)).fetchone()
        if not row:
            return None
        return row[0] if row[0] is not None else row[1]


def _type_default(pg_type: str) -> str | None:
    if pg_type in NUMERIC_TYPES:
        return "1"
    base = re.sub(r"\(.*\)", "", pg_type).strip()
    return TYPE_DEFAULTS.get(base)


def _compared_columns(text: str) -> dict[int, tuple[str, str, str]]:
    """For each parameter compared with a column, (table, column, operator); LIMIT parameters as ('', '', 'LIMIT')."""
    marked = substitute(text, lambda k: f"'__p{k}__'")
    try:
        tree = sqlglot.parse_one(marked, read="postgres")
    except sqlglot.errors.SqlglotError:
        return {}
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    out: dict[int, tuple[str, str, str]] = {}
    for lit in tree.find_all(exp.Literal):
        m = re.match(r"__p(\d+)__", str(lit.this))
        if not m:
            continue
        k = int(m.group(1))
        node = lit.parent
        while isinstance(node, (exp.Cast, exp.Interval, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Paren, exp.Tuple)):
            node = node.parent
        if isinstance(node, exp.Limit):
            out[k] = ("", "", "LIMIT")
            continue
        col = None
        if isinstance(node, (exp.Between, exp.In, exp.Like, exp.ILike)):
            col = node.this if isinstance(node.this, exp.Column) else None
        elif isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            col = next((s for s in (node.this, node.expression) if isinstance(s, exp.Column)), None)
        if col is not None:
            out[k] = (aliases.get(col.table, col.table) if col.table else "", col.name, type(node).__name__)
    return out


def bind_workload(connector: Connector, workload: Workload) -> tuple[list[BoundStatement], list[tuple[Statement, str]]]:
    """Bound statements, and the statements that could not be bound with the reason."""
    bound: list[BoundStatement] = []
    skipped: list[tuple[Statement, str]] = []
    with Binder(connector) as binder:
        for st in workload.statements:
            try:
                bound.append(binder.bind(st))
            except BadStatement as e:
                skipped.append((st, str(e)))
    return bound, skipped
