"""The advisor's own store kept in a PostgreSQL database: the driver's part of it. ``advisor.storage.database``
writes the store's SQL (``?`` placeholders); this module opens its connections, binds the placeholders on the
client and turns the driver's errors into the store's (``StoreError``, ``InvalidInput``), never showing a
password. Reached through ``connectors.factory`` (``store_session``, ``store_dsn_problem``, ``dsn_password``).
"""

from __future__ import annotations

import contextlib
import functools
import re

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.string import TextLoader

from advisor.core.errors import InvalidInput, StoreError
from connectors.text import scrub


def keyword_dsn_problem(location: str) -> str | None:
    """Why ``location``, written as libpq ``key=value`` pairs, is not a DSN; None when it is one.

    >>> keyword_dsn_problem("host=db dbname=advisor") is None
    True
    >>> keyword_dsn_problem("host=db dbnme=advisor password=secret")
    'invalid connection option "dbnme"'
    """
    try:
        conninfo_to_dict(location)
    except Exception as e:  # noqa: BLE001 - psycopg's ProgrammingError; its text may quote the password
        option = re.search(r'invalid connection option "(\w+)"', str(e))
        return f'invalid connection option "{option.group(1)}"' if option else "it does not read as key=value pairs"
    return None


def dsn_password(location: str) -> str | None:
    """The password a PostgreSQL DSN (URL or keyword form) holds, to keep it out of any message."""
    try:
        return conninfo_to_dict(location).get("password")
    except Exception:  # noqa: BLE001 - a DSN that does not parse never connected
        return None


def open_session(url: str, name: str) -> StoreSession:
    """A new autocommit connection to the store at ``url`` (``name``: how messages call it, no password)."""
    try:
        conn = psycopg.connect(url, autocommit=True, cursor_factory=psycopg.ClientCursor,
                               application_name="db-advisor store", connect_timeout=10)
    except psycopg.Error as e:
        raise StoreError(f"cannot open the store {name}: {_reason(e, url)}") from None
    for json_type in ("json", "jsonb"):  # the store parses its JSON itself
        conn.adapters.register_loader(json_type, TextLoader)
    return StoreSession(conn)


def _reason(e: BaseException, url: str) -> str:
    """The first line of the error with quoted fragments (libpq quotes the part of the URL it refuses, which may
    hold the password) and the password itself left out."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = next((ln.split("failed:", 1)[1].strip() for ln in lines if "failed:" in ln), None) \
        or (lines[0] if lines else type(e).__name__)
    text = scrub(re.sub(r"'[^']*'", "'...'", re.sub(r'"[^"]*"', '"..."', text)))
    for secret in re.findall(r"//[^:/@\s]*:([^@\s]+)@", url) + [dsn_password(url)]:
        if secret:
            text = text.replace(secret, "***")
    return text


class StoreSession:
    """A psycopg connection that takes the store's ``?`` placeholders (bound on the client, so that
    ``? IS NULL`` needs no parameter type)."""

    def __init__(self, conn):
        self._conn = conn

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()

    __del__ = close

    @property
    def broken(self) -> bool:
        return bool(self._conn.closed)

    def execute(self, sql: str, params=None):
        try:
            if not params:  # no placeholders to bind: the text goes as it is (a literal % stays single)
                return self._conn.execute(sql)
            return self._conn.execute(_placeholders(sql), params)
        except psycopg.errors.UniqueViolation as e:  # two processes registered one name at once: the loser
            raise StoreError(f"it exists already ({(e.diag.message_detail or '').strip()})") from None
        except psycopg.OperationalError as e:  # the store's server went away: the next call reconnects
            first = (str(e).strip().splitlines() or ["?"])[0]
            raise StoreError(f"lost the connection to the store: {first}") from None
        except psycopg.DataError as e:  # a value the store's columns cannot hold: the caller's input, never a 500
            first = (str(e).strip().splitlines() or ["?"])[0]
            raise InvalidInput(f"the store refused a value: {first}") from None


@functools.lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """``sql`` with ``?`` as psycopg's ``%s`` (and a literal ``%`` doubled).

    >>> _placeholders("SELECT ? WHERE name LIKE 'a%'")
    "SELECT %s WHERE name LIKE 'a%%'"
    """
    return sql.replace("%", "%%").replace("?", "%s")
