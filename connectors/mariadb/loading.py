"""Loading a MariaDB database for the built-in workloads and generators: the engine SQL behind the
``connectors.loader.Loader`` role (``connectors.mariadb.roles``): ``run_script`` (the loader's own statements in one
session), ``load_rows`` (batched multi-row INSERTs from a CSV file or from rows of values), ``analyze`` (``ANALYZE
TABLE ... PERSISTENT FOR ALL``: InnoDB's index statistics and the engine-independent column statistics with JSON
histograms), ``vacuum`` (nothing: InnoDB purges old row versions itself), ``column_statistics`` / ``table_rows`` /
``reserved_words`` (mysql.column_stats, information_schema.TABLES, information_schema.KEYWORDS),
``run_parameterized`` and ``client_command`` (the ``mariadb`` client, its password in an option file's environment,
never on its command line).

The loader's connections switch off their performance_schema instrumentation where the login may and tag their
statements (``TAG``), so that loading is no part of an observed workload. Errors arrive as the advisor's:
``StatementFailed`` with the server's one-line message, ``TargetUnreachable`` when the connection is gone.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pymysql

from advisor.core.errors import AdvisorError, StatementFailed, StatementTimeout, TargetUnreachable
from advisor.core.sqltext import shorten
from connectors.mariadb.connection import TAG, connect, error_code, error_text, parse_dsn, quote
from connectors import deadlines
from connectors.mariadb.session import GONE, STOPPED, MariaDBSession

COPY_CHUNK = 1 << 20  # bytes of a CSV file read at a time
ROWS_PER_INSERT = 500  # rows of one multi-row INSERT (values escaped by PyMySQL, far below max_allowed_packet)
UNINSTRUMENT = TAG + "UPDATE performance_schema.threads SET INSTRUMENTED = 'NO' WHERE PROCESSLIST_ID = CONNECTION_ID()"
# a CSV field: quoted ("" inside is one "), or bare (no comma, quote or line end); then what ends it
_FIELD = re.compile(r'(?:"((?:[^"]|"")*)"|([^,"\r\n]*))(,|\r?\n|$)')


@contextmanager
def _connection(dsn: str, what: str, autocommit: bool = True, local_infile: bool = False
                ) -> Iterator[pymysql.connections.Connection]:
    """A connection of the loader's own (uninstrumented where the login may); PyMySQL's errors as the advisor's,
    one line naming ``what`` was being done."""
    password = parse_dsn(dsn).get("password")
    conn = connect(dsn, autocommit=autocommit, local_infile=local_infile, answer_s=deadlines.long_s())  # bulk work
    try:
        with conn.cursor() as cur:
            try:
                cur.execute(UNINSTRUMENT)
            except pymysql.Error:
                pass  # a login without UPDATE on performance_schema: its statements carry TAG all the same
        yield conn
    except pymysql.Error as e:
        if error_code(e) in GONE:
            raise TargetUnreachable(f"connection lost while {what}: {error_text(e, password)}") from None
        raise StatementFailed(f"{what}: {error_text(e, password)}", reason=error_text(e, password)) from None
    finally:
        if conn.open:
            conn.close()


def run_script(dsn: str, statements: Sequence[str], before: Callable[[int, str], None] | None = None) -> None:
    """Run ``statements`` one at a time in one autocommit session (a setting one makes holds for the ones after
    it); ``before`` hears (1-based number, statement) before each. The first failure stops it."""
    with MariaDBSession(dsn) as session:
        try:
            with session.conn.cursor() as cur:
                cur.execute(UNINSTRUMENT)
        except pymysql.Error:
            pass
        for i, statement in enumerate(statements, 1):
            if before:
                before(i, statement)
            session.run(TAG + statement)


def csv_rows(path: Path) -> Iterator[list[str | None]]:
    r"""The records of a CSV file after its header line: comma-separated, a field in double quotes may hold
    commas, line ends and doubled quotes; an empty unquoted field is None (NULL), an empty quoted one ''.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = f.write_text('a,b,c|1,,""|"x,""y"" z",2,|'.replace("|", chr(10)))
    >>> list(csv_rows(f))
    [['1', None, ''], ['x,"y" z', '2', None]]
    """
    text = Path(path).read_text(encoding="utf-8")
    at = text.find("\n") + 1 if "\n" in text else len(text)  # the header line
    while at < len(text):
        nl = text.find("\n", at)
        nl = len(text) if nl < 0 else nl
        line = text[at:nl].removesuffix("\r")
        if '"' not in line:  # the usual line: no quoting, split on commas
            yield [f or None for f in line.split(",")]
            at = nl + 1
            continue
        if '""' not in line and line.count('"') % 2 == 0:  # whole quoted fields, none empty: Python's csv reads it
            yield [f or None for f in next(csv.reader([line]))]
            at = nl + 1
            continue
        row: list[str | None] = []
        while True:  # a record with quoted fields (they may span lines)
            m = _FIELD.match(text, at)
            if m is None:
                line_no = text.count("\n", 0, at) + 1
                raise StatementFailed(f"{path}: malformed CSV on line {line_no} (a quote inside an unquoted "
                                      f"field)", reason="malformed CSV")
            quoted, bare, end = m.group(1), m.group(2), m.group(3)
            row.append(quoted.replace('""', '"') if quoted is not None else (bare or None))
            at = m.end()
            if end != ",":
                break
            if at >= len(text):  # a trailing comma at the very end: one more empty field
                row.append(None)
                break
        yield row


def _batches(rows: Iterable[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    batch: list[Sequence[Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _plain_csv(path: Path) -> bool:
    """Whether LOAD DATA reads the CSV file as ``csv_rows`` does: no ``""`` (an empty quoted field, or a quote
    inside one, which LOAD DATA would read otherwise) and no carriage return; read in chunks."""
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(COPY_CHUNK):
            if b'""' in tail + chunk or b"\r" in chunk:
                return False
            tail = chunk[-1:]
    return True


def _load_data(conn: pymysql.connections.Connection, table: str, columns: Sequence[str], path: Path) -> int:
    """``LOAD DATA LOCAL INFILE`` of a plain CSV file (``_plain_csv``): its header line skipped, an empty field
    NULL. LOCAL makes the server turn bad values into warnings: any warning is the load's error."""
    names = [f"@v{i}" for i in range(len(columns))]
    sets = ", ".join(f"{quote(c)} = NULLIF({v}, '')" for c, v in zip(columns, names))
    with conn.cursor() as cur:
        cur.execute(TAG + f"LOAD DATA LOCAL INFILE %s INTO TABLE {quote(table).replace('%', '%%')} "
                    "CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
                    f"LINES TERMINATED BY '\\n' IGNORE 1 LINES ({', '.join(names)}) SET {sets.replace('%', '%%')}",
                    (str(path),))
        loaded = cur.rowcount
        cur.execute(TAG + "SHOW WARNINGS LIMIT 5")
        warned = [message for level, _code, message in cur.fetchall() if level != "Note"]
        if warned:
            conn.rollback()
            raise StatementFailed(f"loading {table}: {warned[0]}", reason=str(warned[0]))
    return loaded


def load_rows(dsn: str, table: str, columns: Sequence[str] | None, rows: Path | Iterable[Sequence[Any]]) -> int:
    """Append rows to ``table`` in one transaction: a plain CSV file (``_plain_csv``) with ``LOAD DATA LOCAL
    INFILE``, any other (``csv_rows``) or rows of Python values (None is NULL) with multi-row INSERTs, into
    ``columns`` (all, in order, when None). Returns the rows loaded."""
    path = Path(rows) if isinstance(rows, (str, Path)) else None
    source = csv_rows(path) if path is not None else rows
    loaded = 0
    with _connection(dsn, f"loading {table}", autocommit=False, local_infile=True) as conn, \
            conn.cursor() as cur:
        if columns is None:
            cur.execute(TAG + "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                        "AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (table,))
            columns = [c for (c,) in cur.fetchall()]
            if not columns:
                raise StatementFailed(f"loading {table}: no such table", reason=f"no such table: {table}")
        if path is not None and _plain_csv(path):
            loaded = _load_data(conn, table, columns, path)
            conn.commit()
            return loaded
        head = TAG + f"INSERT INTO {quote(table)} ({', '.join(map(quote, columns))}) VALUES "
        for batch in _batches(source, ROWS_PER_INSERT):
            cur.execute(head + ", ".join("(" + ", ".join(map(conn.escape, row)) + ")" for row in batch))
            loaded += len(batch)
        conn.commit()
    return loaded


def _table_list(conn: pymysql.connections.Connection, tables: Sequence[str] | None) -> list[str]:
    if tables:
        return list(tables)
    with conn.cursor() as cur:
        cur.execute(TAG + "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
                    "AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1")
        return [t for (t,) in cur.fetchall()]


def analyze(dsn: str, tables: Sequence[str] | None = None, statistics_target: int | None = None) -> None:
    """``ANALYZE TABLE ... PERSISTENT FOR ALL COLUMNS (...) INDEXES (...)`` of ``tables`` (every base table when
    None): InnoDB's index statistics and the engine-independent statistics in mysql.column_stats, with JSON
    equal-height histograms (``histogram_type=JSON_HB``: bucket bounds as text). ``statistics_target`` is the
    histogram's bucket count (``histogram_size``, at most 255); the server's default (254) when None."""
    with _connection(dsn, "analyzing") as conn, conn.cursor() as cur:
        cur.execute(TAG + "SET SESSION histogram_type = 'JSON_HB'")
        if statistics_target:
            cur.execute(TAG + "SET SESSION histogram_size = %s", (max(1, min(255, int(statistics_target))),))
        for table in _table_list(conn, tables):
            cur.execute(TAG + f"ANALYZE TABLE {quote(table)} PERSISTENT FOR ALL")
            for _t, _op, kind, text in cur.fetchall():
                if str(kind).lower() == "error":
                    raise StatementFailed(f"analyzing {table}: {text}", reason=str(text))


def vacuum(dsn: str, tables: Sequence[str] | None = None) -> None:
    """Nothing: InnoDB's purge threads reclaim the row versions of updates and deletes by themselves (OPTIMIZE
    TABLE would rebuild the table, which is no such upkeep). The connection is still opened, so that an
    unreachable target is reported as on any engine."""
    with _connection(dsn, "vacuuming"):
        pass


STATS_SQL = TAG + """
SELECT DATABASE(), s.table_name, s.column_name, s.nulls_ratio, s.avg_frequency, s.avg_length, s.hist_type,
       s.histogram, s.min_value, s.max_value
FROM mysql.column_stats s WHERE s.db_name = DATABASE()"""


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)


def histogram(hist_type: str | None, raw: Any) -> tuple[list[str], list[str], list[float]] | None:
    """A JSON_HB histogram as (bucket bounds in ascending order, values of single-value buckets, their fractions
    of the rows); None for none or one of the binary types (their fractions of a min..max range are not
    decoded).

    >>> histogram("JSON_HB", '{"histogram_hb": [{"start": "1", "size": 0.5, "ndv": 1},'
    ...           ' {"start": "2", "end": "9", "size": 0.5, "ndv": 8}]}')
    (['1', '2', '9'], ['1'], [0.5])
    >>> histogram("DOUBLE_PREC_HB", b"\\x00"), histogram(None, None)
    (None, None)
    """
    if hist_type != "JSON_HB" or raw is None:
        return None
    try:
        buckets = json.loads(raw.decode() if isinstance(raw, bytes) else raw).get("histogram_hb") or []
    except (ValueError, AttributeError):
        return None
    bounds = [str(b["start"]) for b in buckets if "start" in b]
    if buckets and "end" in buckets[-1]:
        bounds.append(str(buckets[-1]["end"]))
    common = [(str(b["start"]), float(b.get("size", 0))) for b in buckets if b.get("ndv") == 1 and "start" in b]
    common.sort(key=lambda vf: -vf[1])
    return bounds, [v for v, _ in common], [f for _, f in common]


def column_statistics(conn: pymysql.connections.Connection) -> dict[tuple[str, str, str], tuple]:
    """Per (database, table, column) of mysql.column_stats (after ``analyze``): (nulls_ratio, distinct values as
    minus a fraction of the rows (1 / avg_frequency), avg_length in bytes, most common values as text (the
    histogram's single-value buckets), their fractions, histogram bounds as text). Where MariaDB keeps no histogram (a
    unique column) the bounds are the column's minimum and maximum (one bucket); the value lists are None without
    either. Columns never analyzed are absent."""
    out: dict[tuple[str, str, str], tuple] = {}
    with conn.cursor() as cur:
        cur.execute(STATS_SQL)
        for db, table, column, nulls, avg_freq, avg_len, hist_type, raw, low, high in cur.fetchall():
            hist = histogram(hist_type, raw)
            if hist is None and low is not None and high is not None:
                hist = [_text(low), _text(high)], None, None
            distinct = -min(1.0, 1.0 / float(avg_freq)) if avg_freq else 0.0
            out[(db, table, column)] = (float(nulls or 0), distinct, float(avg_len or 0),
                                        hist[1] if hist else None, hist[2] if hist else None,
                                        hist[0] if hist else None)
    return out


def table_rows(conn: pymysql.connections.Connection) -> dict[tuple[str, str], float]:
    """Per (database, table): InnoDB's estimate of its rows (information_schema.TABLES.TABLE_ROWS)."""
    with conn.cursor() as cur:
        cur.execute(TAG + "SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'")
        return {(s, t): float(r) for s, t, r in cur.fetchall()}


def reserved_words(conn: pymysql.connections.Connection) -> frozenset[str]:
    """The key words of information_schema.KEYWORDS that the server's parser refuses as a bare name: each is
    tried as a column, alias and table name in a ``PREPARE`` (parsed, never run; about 700 of them, a few ms)."""
    out = set()
    with conn.cursor() as cur:
        cur.execute(TAG + "SELECT WORD FROM information_schema.KEYWORDS")
        words = [str(w) for (w,) in cur.fetchall()]
        for word in words:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word):
                continue  # operators (&&, <=): never a name
            try:
                cur.execute(TAG + f"PREPARE db_advisor_word FROM 'SELECT {word}.{word} FROM (SELECT 1 AS {word}) "
                            f"AS {word}'")
            except pymysql.Error as e:
                if error_code(e) in GONE:
                    raise
                out.add(word.lower())
        try:
            cur.execute(TAG + "DEALLOCATE PREPARE db_advisor_word")
        except pymysql.Error as e:  # the last word was refused: nothing is prepared
            if error_code(e) in GONE:
                raise
    return frozenset(out)


_PARAM = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\$(\d+)")


def bind_text(conn: pymysql.connections.Connection, statement: str, values: Sequence[Any]) -> str:
    """``statement`` with each ``$n`` (outside quotes) replaced by ``values[n-1]`` escaped by PyMySQL for this
    connection (numbers bare, strings quoted, None as NULL, dates as quoted text)."""
    return _PARAM.sub(lambda m: conn.escape(values[int(m.group(1)) - 1]) if m.group(1) else m.group(0), statement)


def run_parameterized(dsn: str, calls: Iterable[tuple[str, Sequence[Any]]], timeout_ms: int | None = None) -> int:
    """Run each (statement with ``$1 .. $n``, values) in one session as MySQL drivers send it by default
    (Connector/J, PyMySQL, mysqlclient: the values escaped into the text by the client): performance_schema
    records its digest with ``?`` in place of each constant, and the whole call with its constants in the
    statement history, as it does for an application. (SQL-level PREPARE / EXECUTE would be recorded as
    ``EXECUTE s USING ...``, the statement itself under no digest; PyMySQL has no binary protocol.) Rows are
    fetched and dropped. Returns the statements run; the first failure stops it (StatementTimeout,
    StatementFailed)."""
    ran = 0
    with MariaDBSession(dsn, timeout_ms) as session:
        for statement, values in calls:
            text = bind_text(session.conn, statement, values)
            try:
                with session.conn.cursor() as cur:
                    cur.execute(text)
                    cur.fetchall()
            except pymysql.Error as e:
                message = error_text(e, session._password)
                if error_code(e) in STOPPED:
                    raise StatementTimeout(f"statement stopped after {timeout_ms} ms: {shorten(statement, 80)}") from None
                if error_code(e) in GONE:
                    raise TargetUnreachable(f"connection lost: {message}") from None
                raise StatementFailed(message, reason=message) from None
            ran += 1
    return ran


# --- client programs ------------------------------------------------------------------------------------------

CLIENTS = ("mariadb", "mysql", "mariadb-dump", "mysqldump", "mariadb-slap", "mysqlslap", "mariadb-admin")


def client_command(dsn: str, tool: str, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The command line that runs the MariaDB client program ``tool`` (``mariadb``, ``mariadb-dump`` ...) with
    ``args`` against ``dsn``, and its environment: host, port and user on the command line, the password in
    ``MYSQL_PWD`` (never on the command line). AdvisorError for a program that is no MariaDB client (pgbench is
    PostgreSQL's) or one that is not installed."""
    if tool not in CLIENTS:
        raise AdvisorError(f"{tool} is not a MariaDB client program (known: {', '.join(CLIENTS)})")
    path = next((Path(d) / tool for d in ("/usr/bin", "/usr/local/bin") if (Path(d) / tool).exists()), None)
    if path is None:
        raise AdvisorError(f"{tool} not found in /usr/bin: install the MariaDB client (mariadb-client)")
    p = parse_dsn(dsn)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL")}
    if p.get("password"):
        env["MYSQL_PWD"] = p["password"]
    where = [f"--socket={p['unix_socket']}"] if p.get("unix_socket") else [f"--host={p['host']}",
                                                                         f"--port={p['port']}"]
    connection = ["--no-defaults", *where, f"--user={p['user']}"]
    return [str(path), *connection, *args, *([p["database"]] if p["database"] else [])], env
