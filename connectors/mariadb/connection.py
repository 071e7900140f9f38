"""Connections to a MariaDB target: DSN parsing (``mariadb://`` URLs, and ``mysql://``, MariaDB's scheme until MySQL
is supported: ``connectors.factory.DEPRECATED_SCHEMES``), redaction, the short
name for people, PyMySQL connections whose errors become one clear line without the password, and ``quote``,
the one way an identifier is quoted.

A DSN is ``mariadb://user:password@host:port/database?option=value``: the password percent-encoded, port 3306 and
host ``localhost`` when not named; query options: ``connect_timeout`` (seconds), ``unix_socket``, ``charset``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, quote as url_quote, unquote, urlsplit

import pymysql
from pymysql.charset import charset_by_name

from advisor.core.errors import TargetUnreachable
from connectors import deadlines
from connectors.base import TAG, scrub
from connectors.text import check_dsn_parts

__all__ = ["TAG", "connect", "error_text", "parse_dsn", "quote", "redact", "target_name", "uses_local_identity"]

SCHEMES = ("mariadb", "mysql")  # mysql://: read as MariaDB until MySQL is supported (a notice says so)
OPTIONS = {"connect_timeout", "unix_socket", "charset", "read_timeout", "write_timeout"}
DEFAULT_PORT = 3306
MAX_TIMEOUT_S = 7 * 24 * 3600  # a DSN's timeout options: a week at most (a bigger number is a typo)


def quote(name: str) -> str:
    """``name`` as a quoted MariaDB identifier: in backticks, a backtick inside doubled (never formatted in).

    >>> quote("orders"), quote("we`ird"), quote("a b"), quote("naïve")
    ('`orders`', '`we``ird`', '`a b`', '`naïve`')
    """
    if "\x00" in name:
        raise ValueError("an identifier cannot contain a NUL character")
    return "`" + name.replace("`", "``") + "`"


def parse_dsn(dsn: str) -> dict[str, Any]:
    """The DSN's parts: ``user``, ``password``, ``host``, ``port`` (int), ``database`` and the query options.
    TargetUnreachable (without any part of the DSN) for one that is not a mariadb:// (or mysql://) URL.

    >>> p = parse_dsn("mariadb://bob:s%40cret@db.example:3307/shop?connect_timeout=3")
    >>> p["user"], p["password"], p["host"], p["port"], p["database"], p["connect_timeout"]
    ('bob', 's@cret', 'db.example', 3307, 'shop', '3')
    >>> parse_dsn("mariadb://db/x")["port"], parse_dsn("mysql://bob@db")["database"]
    (3306, '')
    """
    if "\x00" in (dsn or ""):
        raise TargetUnreachable("invalid DSN: it contains a NUL character")
    check_dsn_parts({"URL": (dsn or "").strip()})  # urlsplit would drop a tab or line break without a word
    try:
        url = urlsplit((dsn or "").strip())
        port = url.port
    except ValueError:
        raise TargetUnreachable("invalid DSN: the port is not a number (percent-encode the characters / ? # @ : "
                                "of the password: / is %2F, ? is %3F, # is %23)") from None
    if url.scheme.lower() not in SCHEMES:
        raise TargetUnreachable("invalid DSN: expected a URL such as mariadb://user:password@host:3306/database")
    if "@" in url.path or "@" in url.query:
        raise TargetUnreachable("invalid DSN: the URL's user:password@ part was not understood; percent-encode "
                                "the characters / ? # @ : of the password (/ is %2F, ? is %3F, # is %23)")
    database = unquote(url.path.lstrip("/"))
    params: dict[str, Any] = {
        "user": unquote(url.username) if url.username else "root",
        "host": url.hostname or "localhost",
        "port": port or DEFAULT_PORT,
        "database": database,
    }
    if url.password is not None:
        params["password"] = unquote(url.password)
    for key, value in parse_qsl(url.query, keep_blank_values=True):
        if key not in OPTIONS:
            raise TargetUnreachable(f"invalid DSN: unknown option {key!r} (known: {', '.join(sorted(OPTIONS))})")
        params[key] = value
    check_dsn_parts({**params, "host": unquote(params["host"]), "port": str(params["port"])})
    if "/" in database:
        raise TargetUnreachable("invalid DSN: the database name has a / in it (percent-encode it as %2F)")
    for key in ("connect_timeout", "read_timeout", "write_timeout"):
        if not str(params.get(key, "1")).isdigit() or int(params.get(key, "1")) > MAX_TIMEOUT_S:
            raise TargetUnreachable(f"invalid DSN: {key} is a whole number of seconds (at most {MAX_TIMEOUT_S})")
    if "charset" in params and charset_by_name(params["charset"]) is None:
        raise TargetUnreachable("invalid DSN: charset names no character set the driver knows (utf8mb4, latin1, "
                                "...)")
    return params


def uses_local_identity(dsn: str) -> bool:
    """Whether logging in with ``dsn`` may take who the advisor's process is for a credential: a ``unix_socket``
    (MariaDB's socket authentication logs OS user root in as MariaDB's root). Over TCP, PyMySQL and the client
    programs the advisor runs (``--protocol=TCP``) use only the DSN's user and password.

    >>> uses_local_identity("mariadb://root@localhost/mysql?unix_socket=/run/mysqld/mysqld.sock")
    True
    >>> uses_local_identity("mariadb://bob:pw@localhost/shop"), uses_local_identity("mariadb://bob@db/x?unix_socket=")
    (False, False)
    """
    return bool(parse_dsn(dsn).get("unix_socket"))


def redact(dsn: str) -> str:
    """The DSN without its password, safe to print or store; its scheme as given (a stored ``mysql://`` stays one).

    >>> redact("mariadb://bob:secret@db:3306/shop"), redact("mysql://bob:secret@db/shop")
    ('mariadb://bob@db:3306/shop', 'mysql://bob@db:3306/shop')
    """
    try:
        p = parse_dsn(dsn)
    except TargetUnreachable:
        return scrub(dsn)
    scheme = urlsplit(dsn.strip()).scheme.lower()
    query = "&".join(f"{k}={url_quote(str(v))}" for k, v in p.items() if k in OPTIONS)
    return (f"{scheme}://{url_quote(p['user'], safe='')}@{p['host']}:{p['port']}/{url_quote(p['database'], safe='')}"
            + (f"?{query}" if query else ""))


def target_name(dsn: str) -> str:
    """``host:port/database`` for people.

    >>> target_name("mariadb://bob:secret@db/shop")
    'db:3306/shop'
    """
    p = parse_dsn(dsn)
    return f"{p['host']}:{p['port']}/{p['database']}"


def error_text(e: BaseException, password: str | None = None) -> str:
    """The first line of a driver error's message (its code left out), with ``password`` masked should the
    server ever quote it back."""
    args = getattr(e, "args", ())
    text = str(args[1]) if len(args) > 1 else str(e)
    text = (text.strip().splitlines() or [type(e).__name__])[0]
    if password:
        text = text.replace(password, "***")
    return scrub(text)


def error_code(e: BaseException) -> int | None:
    args = getattr(e, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class BoundedConnection(pymysql.connections.Connection):
    """PyMySQL's connection, whose read or write that gets no answer within its timeout (the handshake's: the
    connect timeout) raises ``connectors.deadlines.hang`` naming the target, one line, instead of a driver error
    that reads like a dropped connection. Made by ``connect``."""

    where = "the target"
    handshake_s = 5.0

    def connect(self, sock=None):
        read, self._read_timeout = self._read_timeout, self.handshake_s  # a server that accepts and never greets
        self._greeting = True
        try:
            super().connect(sock)
        finally:
            self._read_timeout, self._greeting = read, False

    def _read_bytes(self, num_bytes):
        try:
            return super()._read_bytes(num_bytes)
        except pymysql.OperationalError as e:
            raise self._silent(e) from None

    def _write_bytes(self, data):
        try:
            return super()._write_bytes(data)
        except pymysql.OperationalError as e:
            raise self._silent(e) from None

    def _silent(self, e: pymysql.OperationalError) -> Exception:
        if isinstance(e.__context__, TimeoutError):
            return deadlines.hang(self.where, self._current_timeout or self.handshake_s,
                                  deadlines.CONNECTING if getattr(self, "_greeting", False) else deadlines.SETTING)
        return e


def connect(dsn: str, *, autocommit: bool = True, timeout_s: int = 5, database: str | None = None,
            local_infile: bool = False, answer_s: float | None = None) -> pymysql.connections.Connection:
    """A PyMySQL connection to the target (one statement per execute: multi-statements are not enabled), or
    TargetUnreachable with the server's reason. ``database`` overrides the DSN's (``""``: none); ``local_infile``
    lets ``LOAD DATA LOCAL INFILE`` send a file of ours (the loader's). A read or a write waits at most
    ``answer_s`` for the server (default ``connectors.deadlines.answer_s()``; the DSN's ``read_timeout`` and
    ``write_timeout`` win), the handshake ``connect_timeout``: then TargetUnreachable "did not answer"."""
    p = parse_dsn(dsn)
    where = f"{p['host']}:{p['port']}/{p['database']}"
    db = p["database"] if database is None else database
    wait = answer_s or deadlines.answer_s()
    try:
        conn = BoundedConnection(
            host=p["host"], port=p["port"], user=p["user"], password=p.get("password", ""),
            database=db or None, unix_socket=p.get("unix_socket"), charset=p.get("charset", "utf8mb4"),
            connect_timeout=int(p.get("connect_timeout", timeout_s)), autocommit=autocommit,
            read_timeout=float(p.get("read_timeout") or wait), write_timeout=float(p.get("write_timeout") or wait),
            local_infile=local_infile, defer_connect=True)
        conn.where, conn.handshake_s = where, float(int(p.get("connect_timeout", timeout_s)) or timeout_s)
        conn.connect()
        return conn
    except pymysql.Error as e:
        raise TargetUnreachable(f"cannot connect to {where}: {error_text(e, p.get('password'))}") from None
    except (OSError, ValueError, LookupError) as e:  # an unknown charset, a socket path that is no socket
        raise TargetUnreachable(f"cannot connect to {where}: {error_text(e, p.get('password'))}") from None


_PLACEHOLDER = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\$(\d+)")


def to_question_marks(statement: str) -> str:
    """``statement`` with each ``$n`` placeholder (the neutral form above connectors) turned into MariaDB's ``?``,
    quoted strings and identifiers left alone.

    >>> to_question_marks("SELECT '$1', `$2` FROM t WHERE a = $1 AND b = $2")
    "SELECT '$1', `$2` FROM t WHERE a = ? AND b = ?"
    """
    return _PLACEHOLDER.sub(lambda m: "?" if m.group(1) else m.group(0), statement)


def to_dollar_placeholders(digest_text: str) -> str:
    """A performance_schema digest's ``?`` turned into ``$1 .. $n`` in order (quoted text left alone); a list the
    digest collapsed (``IN (...)``, ``VALUES (...) /* , ... */``) becomes one placeholder, ``($n)``.

    >>> to_dollar_placeholders("SELECT * FROM `t` WHERE `a` = ? AND `b` IN (...) AND c = '?' LIMIT ?")
    "SELECT * FROM `t` WHERE `a` = $1 AND `b` IN ($2) AND c = '?' LIMIT $3"
    >>> to_dollar_placeholders("INSERT INTO `t` VALUES (...) /* , ... */")
    'INSERT INTO `t` VALUES ($1)'

    The digest puts a blank between a function's name and its ``(``, which MariaDB reads as no call of a built-in
    function (``COUNT ( * )`` is a syntax error unless IGNORE_SPACE): it is taken out, so that the text runs.

    >>> to_dollar_placeholders("SELECT COUNT ( * ) , `f` (?) FROM `t` WHERE `a` IN (...) AND ( `b` = 'x (' )")
    "SELECT COUNT( * ) , `f`($1) FROM `t` WHERE `a` IN ($2) AND ( `b` = 'x (' )"
    """
    count = 0

    def number(m: re.Match) -> str:
        nonlocal count
        if m.group("call"):
            name = m.group("call")[:-2]
            return name + ("(" if name.upper() not in _NOT_CALLS else " (")
        if m.group(0)[0] in "'\"`":
            return m.group(0)
        count += 1
        return f"(${count})" if m.group(0).startswith("(") else f"${count}"

    text = re.sub(r"(?P<call>(?:\b[A-Za-z_]\w*|`(?:[^`]|``)*`) \((?!\.\.\.\)))|"
                  r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|\(\.\.\.\)(?: /\* , \.\.\. \*/)?|\?",
                  number, digest_text)
    return text.strip()


# words a digest writes before a parenthesis that is no function call's (their blank stays)
_NOT_CALLS = frozenset({"AND", "OR", "NOT", "XOR", "IN", "WHERE", "ON", "SELECT", "FROM", "JOIN", "AS", "EXISTS",
                        "VALUES", "VALUE", "USING", "WHEN", "THEN", "ELSE", "BY", "HAVING", "LIKE", "BETWEEN",
                        "IS", "UNION", "ALL", "ANY", "SOME", "INTO", "SET", "WITH", "OVER", "RETURN", "CASE",
                        "INTERSECT", "EXCEPT", "LIMIT", "OFFSET", "DISTINCT", "END", "TABLE"})
