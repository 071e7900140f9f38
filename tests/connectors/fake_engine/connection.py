"""Connections of the fake engine: DSNs ``sqlite://user:password@localhost/<path of the database file>`` (the
password stands in for a server's, so that redaction is checked as on a real engine), the short name for people,
and sqlite3 connections that close when their ``with`` block ends."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlsplit

from advisor.core.errors import TargetUnreachable

TAG = "/* db-advisor */ "


def parse_dsn(dsn: str) -> dict:
    """The DSN's parts: ``user``, ``password``, ``path`` (the database file). TargetUnreachable otherwise.

    >>> parse_dsn("sqlite://bob:pw@localhost/tmp/x/shop.sqlite")["path"]
    '/tmp/x/shop.sqlite'
    """
    url = urlsplit((dsn or "").strip())
    if url.scheme.lower() != "sqlite" or not url.path.endswith(".sqlite"):
        raise TargetUnreachable("invalid DSN: expected sqlite://user@localhost/<path>.sqlite")
    return {"user": unquote(url.username or ""), "password": unquote(url.password or ""), "path": unquote(url.path)}


def redact(dsn: str) -> str:
    p = parse_dsn(dsn)
    return f"sqlite://{p['user']}@localhost{p['path']}"


def target_name(dsn: str) -> str:
    return f"localhost/{Path(parse_dsn(dsn)['path']).stem}"


def uses_local_identity(dsn: str) -> bool:
    return False  # a file of the advisor's own sandbox: no OS identity is borrowed


class Closing(sqlite3.Connection):
    """A sqlite3 connection that its ``with`` block closes (as the DB-API connections of the other engines)."""

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self.close()


def connect(dsn: str) -> Closing:
    """An autocommit connection to the DSN's database file (which must exist: SQLite would make an empty one)."""
    path = parse_dsn(dsn)["path"]
    try:
        return sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None, factory=Closing,
                               check_same_thread=False)
    except sqlite3.Error as e:
        raise TargetUnreachable(f"cannot open {target_name(dsn)}: {e}") from None
