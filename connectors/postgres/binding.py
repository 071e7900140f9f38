"""``PostgresBindingSource``: what PostgreSQL 15 knows about the constants of normalized statements
(``connectors.base.BindingSource``), for ``workloads.statements.binding`` to bind ``$1, $2 ...`` to executable SQL.

- examples: ``pg_qualstats_example_query(queryid)``, one real call of the statement with its constants (the text
  it was first seen in, so an EXPLAIN, PREPARE ... AS or DECLARE ... CURSOR FOR around it is removed: ``unwrap``);
- real constants: ``pg_qualstats()``, each qual's constants with their position in the example;
- parameter types: ``PREPARE`` of the normalized text and ``pg_prepared_statements.parameter_types`` (asked again
  with the types declared where PostgreSQL cannot infer them: ``$2::date + $4`` is ``date + integer``);
- column values: ``pg_stats`` histogram bounds and most common values;
- literals: numbers bare, anything else a quoted literal rendered by psycopg (typed by its context).

One connection (autocommit) for the source's life; psycopg's errors arrive as the advisor's (``BadStatement`` for
a statement PostgreSQL will not prepare, ``TargetUnreachable`` for a lost connection, ``AdvisorError`` otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import psycopg
from psycopg import sql

from advisor.core.domain import Statement
from advisor.core.errors import AdvisorError, BadStatement, TargetUnreachable
from connectors.postgres.connection import TAG, connect
from connectors.postgres.snapshot import has_extension

NUMERIC_TYPES = {"smallint", "integer", "bigint", "numeric", "real", "double precision", "oid"}
TYPE_DEFAULTS = {"date": "2000-01-01", "interval": "1 day", "boolean": "true", "text": "",
                 "character varying": "", "character": "", "timestamp without time zone": "2000-01-01 00:00:00",
                 "timestamp with time zone": "2000-01-01 00:00:00+00"}
# the type of an amount added to a value of the key's type: date + integer, timestamp + interval
AMOUNT_TYPES = {"date": "integer", "timestamp": "interval", "timestamptz": "interval"}
_PARAM = re.compile(r"\$(\d+)")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
# what may stand before the statement in the text pg_qualstats keeps as its example (the queryid is the inner
# statement's), after leading blanks and comments: EXPLAIN with its options (a list that starts with an option's
# name, not a parenthesised query), PREPARE name (types) AS, DECLARE name ... CURSOR FOR
_LEAD = re.compile(r"\s+|/\*(?:[^*]|\*(?!/))*\*/|--[^\n]*(?:\n|\Z)")
_WRAPPER = re.compile(r"""(?:
      EXPLAIN\b\s*(?:\(\s*(?!(?:SELECT|WITH|VALUES|TABLE)\b)[A-Za-z](?:[^()']|'[^']*')*\)\s*)?
      (?:(?:ANALYZE|ANALYSE|VERBOSE)\b\s*)*
    | PREPARE\s+(?:"[^"]+"|\w+)\s*(?:\((?:[^()]|\([^()]*\))*\)\s*)?AS\b\s*
    | DECLARE\s+(?:"[^"]+"|\w+)\s+(?:(?:BINARY|ASENSITIVE|INSENSITIVE|NO\s+SCROLL|SCROLL)\s+)*CURSOR\s+
      (?:WITH(?:OUT)?\s+HOLD\s+)?FOR\b\s*)""", re.IGNORECASE | re.VERBOSE)
_PREPARED = "advisor_bind"


def unwrap(text: str) -> str:
    """The statement inside an example's text: an EXPLAIN, PREPARE ... AS or DECLARE ... CURSOR FOR around it
    removed (a statement a DBA once EXPLAINed, or a driver ran through a cursor, keeps that text as its example).

    >>> unwrap("EXPLAIN (FORMAT JSON, COSTS off) SELECT 1")
    'SELECT 1'
    >>> unwrap("/* app */ explain analyze verbose SELECT * FROM t WHERE a = 2")
    'SELECT * FROM t WHERE a = 2'
    >>> unwrap('PREPARE "p1" (int, date) AS SELECT * FROM t WHERE a = $1')
    'SELECT * FROM t WHERE a = $1'
    >>> unwrap("DECLARE c1 NO SCROLL CURSOR WITH HOLD FOR SELECT a FROM t")
    'SELECT a FROM t'
    >>> unwrap("SELECT explain FROM prepare")
    'SELECT explain FROM prepare'
    >>> unwrap("EXPLAIN (SELECT 1)"), unwrap("EXPLAIN"), unwrap('PREPARE p (numeric(10,2)) AS SELECT $1')
    ('(SELECT 1)', 'EXPLAIN', 'SELECT $1')
    >>> unwrap(" " * 40 + "SELECT 1") == " " * 40 + "SELECT 1"  # blanks before an unwrapped statement stay
    True
    """
    at = 0
    while (lead := _LEAD.match(text, at)) and lead.end() > at:
        at = lead.end()
    match = _WRAPPER.match(text, at)
    rest = text[match.end():] if match else ""
    return rest if rest.strip() else text


def literal(value: str, type_name: str) -> str:
    """A constant as SQL: bare for numbers of a numeric type, a quoted literal (typed by context) otherwise.

    >>> literal(" 42 ", "integer"), literal("42", "text"), literal("O'Brien", "character varying")
    ('42', "'42'", "'O''Brien'")
    """
    if type_name in NUMERIC_TYPES and _NUMBER.fullmatch(value.strip()):
        return value.strip()
    return sql.Literal(value).as_string(None)


def default_value(type_name: str) -> str | None:
    """A plausible value of a type PostgreSQL names (``1`` for numbers; a modifier like ``(10)`` ignored).

    >>> default_value("bigint"), default_value("character varying(25)"), default_value("date"), default_value("x")
    ('1', '', '2000-01-01', None)
    """
    if type_name in NUMERIC_TYPES:
        return "1"
    return TYPE_DEFAULTS.get(re.sub(r"\(.*\)", "", type_name).strip())


def _message(e: psycopg.Error) -> str:
    diag = getattr(e, "diag", None)
    text = (diag.message_primary if diag is not None and diag.message_primary else str(e)).strip()
    return text.splitlines()[0] if text else type(e).__name__


class PostgresBindingSource:
    """The binding facts of one PostgreSQL database on one connection of its own (a context manager)."""

    def __init__(self, dsn: str):
        self.conn = connect(dsn)
        try:
            self._qualstats = self._guarded(lambda: has_extension(self.conn, "pg_qualstats"))
        except BaseException:
            self.conn.close()
            raise

    def _guarded(self, fn):
        try:
            return fn()
        except psycopg.OperationalError as e:
            raise TargetUnreachable(f"lost the connection while binding parameters: {_message(e)}") from None
        except psycopg.Error as e:
            raise AdvisorError(f"binding parameters: {_message(e)}") from None

    def example(self, statement: Statement) -> tuple[str, str | None]:
        """pg_qualstats' example call of ``statement`` and the queryid it is kept under: the statement's own, else
        that of an entry merged into it (the same text with parameters bound as other types)."""
        if not self._qualstats:
            return statement.queryid, None
        for queryid in (statement.queryid, *statement.merged):
            row = self._guarded(lambda q=queryid: self.conn.execute(
                TAG + "SELECT pg_qualstats_example_query(%s::bigint)", (q,)).fetchone())
            if row and row[0] and row[0].strip():
                return queryid, unwrap(row[0])
        return statement.queryid, None

    def real_constants(self, queryid: str, template: str) -> dict[int, list[str]]:
        """Per parameter of ``template`` (pg_qualstats' example), the constants real calls used for it (as SQL),
        most frequent first: pg_qualstats keeps each qual's constants with their position in the example."""
        if not self._qualstats:
            return {}
        rows = self._guarded(lambda: self.conn.execute(
            TAG + """
            SELECT constant_position, constvalue FROM pg_qualstats()
            WHERE queryid = %s::bigint AND constant_position IS NOT NULL AND constvalue IS NOT NULL
            GROUP BY 1, 2 ORDER BY sum(occurences) DESC, 2""", (queryid,)).fetchall())
        out: dict[int, list[str]] = {}
        for position, value in rows:
            m = _PARAM.match(template, int(position))
            if m and value not in out.setdefault(int(m.group(1)), []):
                out[int(m.group(1))].append(value)
        return {k: v for k, v in out.items() if v}

    def parameter_types(self, text: str, count: int, amounts: Mapping[int, str]) -> list[str]:
        """The types PostgreSQL infers for the parameters; where it cannot (``$2::date + $4``: date + unknown is
        ambiguous), it is asked again with the ``amounts`` (parameter -> the type it is added to) declared as the
        type such an amount has (``AMOUNT_TYPES``)."""
        hints = {k: AMOUNT_TYPES[t] for k, t in amounts.items() if t in AMOUNT_TYPES}
        prepare = sql.SQL("PREPARE {} AS ").format(sql.Identifier(_PREPARED)) + sql.SQL(text)  # type: ignore[arg-type]
        try:
            self._prepare(prepare)
        except psycopg.errors.Error as e:
            if not hints:
                raise BadStatement(f"cannot prepare statement: {_message(e)}") from None
            declared = sql.SQL(", ").join(sql.SQL(hints.get(k, "unknown")) for k in range(1, count + 1))
            head = sql.SQL("PREPARE {} ({}) AS ").format(sql.Identifier(_PREPARED), declared)
            try:
                self._prepare(head + sql.SQL(text))  # type: ignore[arg-type]
            except psycopg.errors.Error as e2:
                raise BadStatement(f"cannot prepare statement: {_message(e2)}") from None

        def read() -> list[str]:
            try:
                row = self.conn.execute(TAG + "SELECT parameter_types::text[] FROM pg_prepared_statements "
                                        "WHERE name = %s", (_PREPARED,)).fetchone()
                return list(row[0]) if row else []
            finally:
                # only our own: DEALLOCATE ALL would also drop the statements psycopg prepares for its repeats
                self.conn.execute(sql.SQL("DEALLOCATE {}").format(sql.Identifier(_PREPARED)))

        return self._guarded(read)

    def _prepare(self, prepare: sql.Composed) -> None:
        """PREPARE exactly one statement (the extended protocol: a smuggled second one is refused)."""
        try:
            self.conn.cursor().execute(prepare, binary=True)
        except psycopg.OperationalError as e:
            raise TargetUnreachable(f"lost the connection while binding parameters: {_message(e)}") from None

    def column_values(self, table: str, column: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``pg_stats``' histogram bounds and most common values of ``table.column`` (any table's when table is
        '', public's first)."""
        row = self._guarded(lambda: self.conn.execute(
            TAG + """
            SELECT histogram_bounds::text::text[], most_common_vals::text::text[]
            FROM pg_stats WHERE attname = %s AND (tablename = %s OR %s = '')
            ORDER BY (tablename = %s) DESC, schemaname = 'public' DESC LIMIT 1""",
            (column, table, table, table)).fetchone())
        return (tuple(row[0] or ()), tuple(row[1] or ())) if row else ((), ())

    def literal(self, value: str, type_name: str) -> str:
        return literal(value, type_name)

    def default_value(self, type_name: str) -> str | None:
        return default_value(type_name)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> PostgresBindingSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
