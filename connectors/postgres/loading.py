"""Loading a PostgreSQL database for the built-in workloads and generators: the engine SQL behind the
``connectors.loader.Loader`` role (``connectors.postgres.roles``): ``run_script`` (the loader's own statements in one
session), ``load_rows`` (COPY from a CSV file or from rows of values), ``analyze`` (VACUUM ANALYZE, optionally under
a statistics target), ``vacuum``, ``run_parameterized`` (statements with values bound server-side, as an application
sends them), ``column_statistics`` / ``table_rows`` / ``reserved_words`` (pg_stats, pg_class, pg_get_keywords) and
``client_command`` (a client program such as pgbench, its secrets in the environment, never on its command line).

Errors arrive as the advisor's: ``StatementFailed`` with the server's one-line message, ``TargetUnreachable`` when
the connection is gone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from advisor.core.errors import AdvisorError, StatementFailed, StatementTimeout, TargetUnreachable
from advisor.core.sqltext import shorten
from connectors.postgres.binaries import pg_bin_dir
from connectors import deadlines
from connectors.postgres.connection import TAG, connect
from connectors.postgres.session import PostgresSession

COPY_CHUNK = 1 << 20  # bytes of a CSV file sent per write


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """psycopg's errors as the advisor's, one line naming ``what`` was being done."""
    try:
        yield
    except psycopg.OperationalError as e:
        raise TargetUnreachable(f"connection lost while {what}: {_line(e)}") from None
    except psycopg.Error as e:
        raise StatementFailed(f"{what}: {_line(e)}", reason=_line(e)) from None


def _line(e: psycopg.Error) -> str:
    diag = getattr(e, "diag", None)
    text = (diag.message_primary if diag is not None and diag.message_primary else str(e)).strip()
    return text.splitlines()[0] if text else type(e).__name__


def run_script(dsn: str, statements: Sequence[str], before: Callable[[int, str], None] | None = None) -> None:
    """Run ``statements`` one at a time in one autocommit session (a setting one of them makes, such as a random
    seed, holds for the ones after it); ``before`` hears (1-based number, statement) before each."""
    with PostgresSession(dsn) as session:
        for i, statement in enumerate(statements, 1):
            if before:
                before(i, statement)
            session.run(statement)


def load_rows(dsn: str, table: str, columns: Sequence[str] | None, rows: Path | Iterable[Sequence[Any]]) -> int:
    """Append rows to ``table`` with COPY in one transaction: from a CSV file (a header line, comma-separated,
    an empty unquoted field is NULL) or from rows of Python values (None is NULL), into ``columns`` (all, in
    order, when None). Returns the rows loaded."""
    target = sql.Identifier(table)
    if columns:
        target = sql.SQL("{} ({})").format(target, sql.SQL(", ").join(map(sql.Identifier, columns)))
    with _translated(f"loading {table}"), connect(dsn, autocommit=False, answer_s=deadlines.long_s()) as conn:
        with conn.cursor() as cur:
            if isinstance(rows, (str, Path)):
                copy = sql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER true)").format(target)
                with cur.copy(copy) as cp, open(rows, "rb") as f:
                    while chunk := f.read(COPY_CHUNK):
                        cp.write(chunk)
            else:
                with cur.copy(sql.SQL("COPY {} FROM STDIN").format(target)) as cp:
                    for row in rows:
                        cp.write_row(row)
            loaded = cur.rowcount
        conn.commit()
    return max(0, loaded)


def _tables(tables: Sequence[str] | None) -> sql.Composable:
    return sql.SQL("") if not tables else sql.SQL(" {}").format(sql.SQL(", ").join(map(sql.Identifier, tables)))


def analyze(dsn: str, tables: Sequence[str] | None = None, statistics_target: int | None = None) -> None:
    """VACUUM ANALYZE ``tables`` (every table when None), with ``default_statistics_target`` at
    ``statistics_target`` for this session when given (ANALYZE samples 300 x target rows of each table)."""
    with _translated("analyzing"), connect(dsn, answer_s=deadlines.long_s()) as conn:
        if statistics_target:
            conn.execute("SELECT set_config('default_statistics_target', %s, false)", (str(int(statistics_target)),))
        conn.execute(sql.SQL("VACUUM ANALYZE{}").format(_tables(tables)))


def vacuum(dsn: str, tables: Sequence[str] | None = None) -> None:
    """VACUUM ``tables`` (every table when None): dead rows of updates and deletes reclaimed, statistics kept."""
    with _translated("vacuuming"), connect(dsn, answer_s=deadlines.long_s()) as conn:
        conn.execute(sql.SQL("VACUUM{}").format(_tables(tables)))


STATS_SQL = TAG + """
SELECT s.schemaname::text, s.tablename::text, s.attname::text, s.null_frac, s.n_distinct, s.avg_width,
       CASE WHEN t.typcategory IN ('N', 'S', 'D', 'B') THEN s.most_common_vals::text::text[] END,
       s.most_common_freqs::float8[],
       CASE WHEN t.typcategory IN ('N', 'S', 'D', 'B') THEN s.histogram_bounds::text::text[] END
FROM pg_stats s
JOIN pg_namespace n ON n.nspname = s.schemaname
JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = s.attname
JOIN pg_type t ON t.oid = a.atttypid
WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema') AND s.schemaname NOT LIKE 'pg_toast%'
ORDER BY s.inherited"""

ROWS_SQL = TAG + """
SELECT n.nspname::text, c.relname::text, greatest(c.reltuples, 0)::float8
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%'"""

KEYWORDS_SQL = TAG + "SELECT word FROM pg_get_keywords() WHERE catcode <> 'U'"


def column_statistics(conn: psycopg.Connection) -> dict[tuple[str, str, str], tuple]:
    """Per (schema, table, column) of pg_stats: (null_frac, n_distinct, avg_width, most common values as text,
    their frequencies, histogram bounds as text); the value lists None for types without a text order."""
    stats: dict[tuple[str, str, str], tuple] = {}
    for s, t, c, *rest in conn.execute(STATS_SQL):
        stats[(s, t, c)] = tuple(rest)  # inherited rows come last and win, as the generator always read them
    return stats


def table_rows(conn: psycopg.Connection) -> dict[tuple[str, str], float]:
    """Per (schema, table): the planner's estimate of its rows (pg_class.reltuples, 0 before any ANALYZE)."""
    return {(s, t): r for s, t, r in conn.execute(ROWS_SQL)}


def reserved_words(conn: psycopg.Connection) -> frozenset[str]:
    """The key words that cannot be a bare identifier (every category but unreserved)."""
    return frozenset(w for (w,) in conn.execute(KEYWORDS_SQL))


# --- client programs ------------------------------------------------------------------------------------------

ON_COMMAND_LINE = {"host": "--host", "port": "--port", "user": "--username"}
ENVIRONMENT = {
    "password": "PGPASSWORD", "passfile": "PGPASSFILE", "hostaddr": "PGHOSTADDR", "service": "PGSERVICE",
    "options": "PGOPTIONS", "application_name": "PGAPPNAME", "connect_timeout": "PGCONNECT_TIMEOUT",
    "client_encoding": "PGCLIENTENCODING", "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY", "sslcrl": "PGSSLCRL", "sslcrldir": "PGSSLCRLDIR",
    "sslsni": "PGSSLSNI", "requirepeer": "PGREQUIREPEER", "gssencmode": "PGGSSENCMODE",
    "channel_binding": "PGCHANNELBINDING", "target_session_attrs": "PGTARGETSESSIONATTRS",
    "krbsrvname": "PGKRBSRVNAME", "gsslib": "PGGSSLIB", "ssl_min_protocol_version": "PGSSLMINPROTOCOLVERSION",
    "ssl_max_protocol_version": "PGSSLMAXPROTOCOLVERSION", "load_balance_hosts": "PGLOADBALANCEHOSTS",
}


def client_connection(dsn: str, tool: str) -> tuple[list[str], dict[str, str]]:
    """A libpq client program's connection arguments (the database name last) and its environment, from the
    DSN: host, port and user on the command line, every other parameter (the password included) through its
    ``PG*`` variable; ``PG*`` variables of our own environment are not passed on (the DSN alone says where)."""
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as e:
        raise TargetUnreachable(f"invalid DSN: {(str(e).strip().splitlines() or ['?'])[0]}") from None
    args: list[str] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for key, value in params.items():
        if key in ON_COMMAND_LINE:
            args += [ON_COMMAND_LINE[key], value]
        elif key in ENVIRONMENT:
            env[ENVIRONMENT[key]] = value
        elif key != "dbname":
            raise AdvisorError(f"{tool} cannot be given the connection parameter {key!r}")
    return args + [params.get("dbname") or params.get("user") or "postgres"], env


def client_command(dsn: str, tool: str, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The command line that runs the installed client program ``tool`` (pgbench, psql ...) with ``args``
    against ``dsn``, and the environment to run it in (the connection's secrets are there)."""
    path = pg_bin_dir() / tool
    if not path.exists():
        raise AdvisorError(f"{tool} not found in {path.parent}: install the PostgreSQL client tools")
    connection, env = client_connection(dsn, tool)
    return [str(path), *args, *connection], env


_PARAM = re.compile(r"\$(\d+)")


def run_parameterized(dsn: str, calls: Iterable[tuple[str, Sequence[Any]]], timeout_ms: int | None = None) -> int:
    """Run each (statement with ``$1 .. $n``, values) in one session with the values bound server-side, as an
    application's driver sends them (the server sees and records the ``$n`` text); rows fetched and dropped.
    Returns the statements run; the first failure stops it (StatementTimeout, StatementFailed)."""
    ran = 0
    with PostgresSession(dsn, timeout_ms) as session:
        for statement, values in calls:
            order: list[Any] = []

            def placeholder(m: re.Match, order: list[Any] = order, values: Sequence[Any] = values) -> str:
                order.append(values[int(m.group(1)) - 1])
                return "%s"

            query = _PARAM.sub(placeholder, statement.replace("%", "%%"))
            try:
                with session.conn.cursor() as cur:
                    cur.execute(query, order)  # type: ignore[arg-type]  # the workload's own text
                    cur.fetchall()
            except psycopg.errors.QueryCanceled:
                raise StatementTimeout(f"statement stopped after {timeout_ms} ms: {shorten(statement, 80)}") from None
            except psycopg.OperationalError as e:
                raise TargetUnreachable(f"connection lost: {_line(e)}") from None
            except psycopg.Error as e:
                raise StatementFailed(_line(e), reason=_line(e)) from None
            ran += 1
    return ran
