"""``MariaDBBindingSource``: what MariaDB 10.11 knows about the constants of its captured statements
(``connectors.base.BindingSource``), for ``workloads.statements.binding`` to bind ``$1, $2 ...`` to executable SQL.

- examples: ``performance_schema.events_statements_history_long``, the last calls of each statement DIGEST with
  their text as sent (drivers escape the constants into it), the advisor's own (``TAG``) last; the history is a
  ring of the server's last statements, so an old or rare statement may have none;
- real constants: none apart from a whole example (MySQL drivers send no placeholders, so an example never has
  any): ``{}``;
- parameter types: MariaDB tells no parameter's type at the SQL level, so they are read from the statement:
  the column a ``$n`` is compared with (its information_schema type), ``bigint`` for LIMIT / OFFSET, "unknown"
  otherwise;
- column values: the JSON histogram of mysql.column_stats (``ANALYZE TABLE ... PERSISTENT``, see
  ``connectors.mariadb.loading``), else the sorted values of a small sample of the column (at most
  ``SAMPLE_ROWS`` rows read), as histogram bounds;
- literals: numbers bare for a numeric type, anything else escaped by PyMySQL for the connection.

One connection (autocommit, uninstrumented where the login may) for the source's life; driver errors arrive as
the advisor's (``TargetUnreachable`` for a lost connection, ``AdvisorError`` otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pymysql
import sqlglot
from sqlglot import exp

from advisor.core.domain import Statement
from advisor.core.errors import AdvisorError, TargetUnreachable
from connectors.mariadb.connection import TAG, connect, error_code, error_text, parse_dsn, quote
from connectors.mariadb.loading import UNINSTRUMENT, histogram
from connectors.mariadb.session import GONE

SAMPLE_ROWS = 1000
BOUNDS = 100  # histogram bounds taken from a sampled column
NUMERIC_TYPES = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "float",
                 "double", "real", "bit", "year"}
TYPE_DEFAULTS = {"date": "2000-01-01", "datetime": "2000-01-01 00:00:00", "timestamp": "2000-01-01 00:00:00",
                 "time": "00:00:00", "char": "", "varchar": "", "text": "", "tinytext": "", "mediumtext": "",
                 "longtext": "", "enum": ""}
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_PARAM = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\$(\d+)")
_MARK = re.compile(r"__p(\d+)__")
_WRAPPERS = (exp.Cast, exp.TryCast, exp.Paren, exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Interval,
             exp.DateAdd, exp.DateSub)
_PLUS = (exp.Add, exp.Sub, exp.DateAdd, exp.DateSub)

EXAMPLE_SQL = TAG + """
SELECT SQL_TEXT FROM performance_schema.events_statements_history_long
WHERE DIGEST = %s AND SQL_TEXT IS NOT NULL
ORDER BY SQL_TEXT LIKE '/* db-advisor */%%', EVENT_ID DESC LIMIT 1"""


def _base(type_name: str) -> str:
    """A column type without its size, sign or character set: ``decimal(15,2) unsigned`` is ``decimal``."""
    return re.split(r"[\s(]", type_name.strip().lower(), maxsplit=1)[0] if type_name.strip() else ""


def literal(escape, value: str, type_name: str) -> str:
    """A constant as SQL: bare for a number of a numeric type, else quoted by ``escape`` (PyMySQL's
    ``Connection.escape``, which knows the connection's escaping rules).

    >>> quoted = lambda v: "'" + pymysql.converters.escape_string(v) + "'"
    >>> literal(quoted, " 42 ", "int(11)"), literal(quoted, "42", "char(1)"), literal(quoted, "O'Brien", "unknown")
    ('42', "'42'", "'O\\\\'Brien'")
    """
    if _base(type_name) in NUMERIC_TYPES and _NUMBER.fullmatch(value.strip()):
        return value.strip()
    return escape(value)


def default_value(type_name: str) -> str | None:
    """A plausible value of a MariaDB column type (``1`` for numbers), None for one it does not know. "unknown"
    (a parameter compared with no column) is ``1``: a digest makes every constant a parameter, the ``1`` and ``0``
    of a ``CASE`` too, and MariaDB reads the quoted ``'1'`` as whatever type its place needs.

    >>> default_value("bigint(20) unsigned"), default_value("varchar(25)"), default_value("date"), default_value("x")
    ('1', '', '2000-01-01', None)
    >>> default_value("unknown")
    '1'
    """
    base = _base(type_name)
    return "1" if base in NUMERIC_TYPES or base == "unknown" else TYPE_DEFAULTS.get(base)


def parameter_columns(text: str, count: int) -> list[tuple[str, str] | str]:
    """Per parameter ``$1 .. $count`` of ``text`` (MySQL's SQL): the (table or '', column) it is compared with,
    "limit" for a count (LIMIT / OFFSET, an amount added to a value: ``INTERVAL $2 DAY``), "cast <type>" for one
    compared with no column but cast, or "" where the statement does not say.

    >>> parameter_columns("SELECT * FROM `t` AS x WHERE x.`a` = $1 AND $2 < b LIMIT $3", 4)
    [('t', 'a'), ('t', 'b'), 'limit', '']
    >>> parameter_columns("SELECT CAST($1 AS DATE), d < DATE_ADD(CAST($2 AS DATE), INTERVAL $3 DAY) FROM t", 3)
    ['cast date', ('t', 'd'), 'limit']
    """
    marked = _PARAM.sub(lambda m: f"'__p{m.group(1)}__'" if m.group(1) else m.group(0), text)
    out: list[tuple[str, str] | str] = [""] * count
    try:
        tree = sqlglot.parse_one(marked, read="mysql")
    except sqlglot.errors.SqlglotError:
        return out
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    tables = {t.name for t in tree.find_all(exp.Table)}
    for lit in tree.find_all(exp.Literal):
        m = _MARK.fullmatch(str(lit.this))
        if not m or not 1 <= int(m.group(1)) <= count or out[int(m.group(1)) - 1]:
            continue
        child, node, cast = lit, lit.parent, ""
        while isinstance(node, _WRAPPERS) and not (isinstance(node, _PLUS) and child is node.expression):
            if isinstance(node, (exp.Cast, exp.TryCast)) and not cast:
                cast = node.to.sql("mysql").lower()
            child, node = node, node.parent
        if isinstance(node, (exp.Limit, exp.Offset, exp.Fetch)) or isinstance(node, _PLUS):
            out[int(m.group(1)) - 1] = "limit"  # a count: of rows, or of days (units) added to a value
            continue
        col = None
        if isinstance(node, (exp.Between, exp.In, exp.Like, exp.ILike)) and isinstance(node.this, exp.Column):
            col = node.this
        elif isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)):
            other = node.expression if child is node.this else node.this
            col = other if isinstance(other, exp.Column) else None
        if col is not None:
            table = aliases.get(col.table, col.table) if col.table else (next(iter(tables)) if len(tables) == 1
                                                                        else "")
            out[int(m.group(1)) - 1] = (table, col.name)
        elif cast:
            out[int(m.group(1)) - 1] = "cast " + cast
    return out


class MariaDBBindingSource:
    """The binding facts of one MariaDB database on one connection of its own (a context manager)."""

    def __init__(self, dsn: str):
        self._password = parse_dsn(dsn).get("password")
        self.conn = connect(dsn)
        self._types: dict[tuple[str, str], str] | None = None
        try:
            with self.conn.cursor() as cur:
                cur.execute(UNINSTRUMENT)
        except pymysql.Error:
            pass

    def _rows(self, query: str, args: tuple = ()) -> list[tuple]:
        try:
            with self.conn.cursor() as cur:
                cur.execute(query, args or None)
                return [tuple(r) for r in cur.fetchall()]
        except pymysql.Error as e:
            if error_code(e) in GONE:
                raise TargetUnreachable(f"lost the connection while binding parameters: "
                                        f"{error_text(e, self._password)}") from None
            raise AdvisorError(f"binding parameters: {error_text(e, self._password)}") from None

    def example(self, statement: Statement) -> tuple[str, str | None]:
        """The last call of the statement's digest (or of one merged into it) in the statement history, its TAG
        removed; ``(statement.queryid, None)`` when the history holds none."""
        for digest in (statement.queryid, *statement.merged):
            rows = self._rows(EXAMPLE_SQL, (digest,))
            if rows and rows[0][0] and rows[0][0].strip():
                return digest, rows[0][0].strip().removeprefix(TAG.strip()).strip()
        return statement.queryid, None

    def real_constants(self, queryid: str, template: str) -> dict[int, list[str]]:
        return {}  # an example is always a whole call (the driver escaped its constants into the text)

    def _column_types(self) -> dict[tuple[str, str], str]:
        """Per (table, column) as the catalog spells them: the column's type."""
        if self._types is None:
            self._types = {(t, c): str(ty) for t, c, ty in self._rows(
                TAG + "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION")}
        return self._types

    def _column(self, table: str, column: str) -> tuple[str, str] | None:
        """The catalog's (table, column) for a name as a statement writes it (a digest upper-cases a column named
        like a key word: ``STATUS``); MariaDB's column names ignore case. Any table's when ``table`` is ''."""
        types = self._column_types()
        if (table, column) in types:
            return table, column
        return next(((t, c) for (t, c) in types if c.lower() == column.lower() and (t == table or not table)),
                    None)

    def parameter_types(self, text: str, count: int, amounts: Mapping[int, str]) -> list[str]:
        """The type of the column each parameter is compared with (``parameter_columns``), ``bigint`` for LIMIT
        and OFFSET, "unknown" elsewhere."""
        types = self._column_types()
        out = []
        for use in parameter_columns(text, count):
            if use == "limit":
                out.append("bigint")
            elif isinstance(use, tuple) and (found := self._column(*use)) is not None:
                out.append(types[found])
            elif isinstance(use, str) and use.startswith("cast "):
                out.append(use.removeprefix("cast "))
            else:
                out.append("unknown")
        return out

    def column_values(self, table: str, column: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """mysql.column_stats' JSON histogram of ``table.column`` (the first table's column of that name when
        table is ''): bounds and the values of single-value buckets; else the sorted values of up to
        ``SAMPLE_ROWS`` rows of it."""
        found = self._column(table, column)
        if found is None:
            return (), ()
        table, column = found
        rows = self._rows(TAG + "SELECT hist_type, histogram FROM mysql.column_stats WHERE db_name = DATABASE() "
                          "AND table_name = %s AND column_name = %s", (table, column))
        for hist_type, raw in rows:
            hist = histogram(hist_type, raw)
            if hist and hist[0]:
                return tuple(hist[0]), tuple(hist[1])
        values = sorted(v for (v,) in self._rows(
            TAG + f"SELECT {quote(column)} FROM {quote(table)} WHERE {quote(column)} IS NOT NULL LIMIT {SAMPLE_ROWS}"))
        if not values:
            return (), ()
        step = max(1, len(values) // BOUNDS)
        picked = values[::step] + ([values[-1]] if (len(values) - 1) % step else [])
        return tuple(str(v) for v in picked), ()

    def literal(self, value: str, type_name: str) -> str:
        return literal(self.conn.escape, value, type_name)

    def default_value(self, type_name: str) -> str | None:
        return default_value(type_name)

    def close(self) -> None:
        if self.conn.open:
            self.conn.close()

    def __enter__(self) -> MariaDBBindingSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
