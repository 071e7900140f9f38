"""Opening connections to a target, with errors translated into one clear line."""

from __future__ import annotations

import re

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from advisor.core.errors import TargetUnreachable
from connectors.base import TAG, scrub

__all__ = ["APP_NAME", "TAG", "connect", "execute_one", "parse_dsn", "redact", "scrub", "target_name"]

APP_NAME = "db-advisor"


def parse_dsn(dsn: str) -> dict[str, str]:
    """The DSN's parameters; accepts ``key=value`` strings and ``postgresql://`` URLs."""
    try:
        return {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as e:
        raise TargetUnreachable(f"invalid DSN: {_unquoted(e)}") from None


def redact(dsn: str) -> str:
    """The DSN without its password, safe to print or store."""
    try:
        params = parse_dsn(dsn)
    except TargetUnreachable:
        return scrub(dsn)
    params.pop("password", None)
    return make_conninfo(**params)


def target_name(dsn: str) -> str:
    """``host:port/database`` for people (the local socket and port 5432 when the DSN names none)."""
    p = parse_dsn(dsn)
    return f"{p.get('host', 'localhost')}:{p.get('port', '5432')}/{p.get('dbname', p.get('user', 'postgres'))}"


def connect(dsn: str, *, autocommit: bool = True, timeout_s: int = 5) -> psycopg.Connection:
    """A connection to the target, or TargetUnreachable with the server's reason."""
    params = parse_dsn(dsn)
    params.setdefault("connect_timeout", str(timeout_s))
    params.setdefault("application_name", APP_NAME)
    where = f"{params.get('host', 'local socket')}:{params.get('port', '5432')}/{params.get('dbname', '')}"
    try:
        return psycopg.connect(make_conninfo(**params), autocommit=autocommit)
    except psycopg.OperationalError as e:
        raise TargetUnreachable(f"cannot connect to {where}: {_first_line(e)}") from None
    except psycopg.Error as e:  # a parameter libpq refuses (connect_timeout=abc, ...)
        raise TargetUnreachable(f"cannot connect to {where}: invalid DSN: {_unquoted(e)}") from None


def _unquoted(e: BaseException) -> str:
    """The first line of ``e`` with every quoted fragment left out: libpq quotes the part of the DSN it refuses,
    and that part may be (or hold) the password.

    >>> _unquoted(ValueError('invalid percent-encoded token: "SECRET%ZZ"'))
    'invalid percent-encoded token: "..."'
    >>> _unquoted(ValueError("bad value for connect_timeout: 'abc'"))
    "bad value for connect_timeout: '...'"
    """
    return re.sub(r"'[^']*'", "'...'", re.sub(r'"[^"]*"', '"..."', _first_line(e)))


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # libpq prefixes every attempt with 'connection to server at ... failed:'; keep the reason
    for ln in lines:
        if "failed:" in ln:
            return ln.split("failed:", 1)[1].strip() or ln
    return lines[0] if lines else type(e).__name__


def execute_one(cur: psycopg.Cursor, query) -> psycopg.Cursor:
    """Run exactly one statement of outside text (workload or user SQL).

    psycopg sends a query without parameters over the simple protocol, where ``SELECT 1; DROP TABLE t`` runs
    both statements. ``binary=True`` forces the extended protocol (an unnamed statement, so no plan caching
    that would distort timings), and the server rejects more than one command.
    """
    return cur.execute(query, binary=True)
