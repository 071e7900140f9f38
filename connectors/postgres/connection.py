"""Opening connections to a target, with errors translated into one clear line."""

from __future__ import annotations

import os
import re

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from advisor.core.errors import TargetUnreachable
from connectors import deadlines
from connectors.base import TAG, scrub
from connectors.text import check_dsn_parts

__all__ = ["APP_NAME", "TAG", "connect", "execute_one", "keyword_dsn", "parse_dsn", "redact", "scrub", "target_name",
           "uses_local_identity"]

APP_NAME = "db-advisor"


def parse_dsn(dsn: str) -> dict[str, str]:
    """The DSN's parameters; accepts ``key=value`` strings and ``postgresql://`` URLs. A ``service=NAME`` found
    in the libpq service file is expanded beneath the DSN's own parameters (as libpq does), so that the name,
    the shadow's database and the display show where the service points."""
    if "\x00" in dsn:  # libpq would stop reading there, and take what is left of a password for a port
        raise TargetUnreachable("invalid DSN: it contains a NUL character")
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as e:
        raise TargetUnreachable(f"invalid DSN: {_unquoted(e)}") from None
    check_dsn_parts(params)  # a line break or NUL in a user, password, host or option: refused, never passed on
    _check_misread(dsn, params)
    service = _service(params["service"]) if "service" in params else None
    if service is not None:  # not found: left to libpq, which says so when it connects
        params = {**service, **{k: v for k, v in params.items() if k != "service"}}
    return params


_PAIR = re.compile(r"^\s*[A-Za-z_]+\s*=")
_PORTS = re.compile(r"^[\s\d,]*$")
_URL = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://(.*)$", re.DOTALL)


def _check_misread(dsn: str, params: dict[str, str]) -> None:
    """Refuse the DSNs libpq reads in a way that moves the password into a value shown to people (the name,
    progress lines, error messages), without repeating any part of the DSN:

    - a URL whose ``@`` libpq did not take as the end of ``user:password`` (a ``/`` in the password that is not
      percent-encoded): the password becomes part of the database name;
    - a port that is no number (``postgresql://user:password/db``, without the ``@host``, or with a ``/ ? #``
      in the password, reads the password as the port);
    - a value that is itself a ``key=value`` pair (``host= password=...``: an empty value takes the next pair).
    """
    url = _URL.match(dsn)
    authority, path = (re.split(r"(?=[/?])", url.group(1), maxsplit=1) + [""])[:2] if url else ("", "")
    if "@" not in authority and "@" in path.split("?", 1)[0]:
        raise TargetUnreachable("invalid DSN: the URL's user:password@ part was not understood; percent-encode "
                                "the characters / ? # @ : of the password (/ is %2F, ? is %3F, # is %23)")
    if not _PORTS.match(params.get("port", "")):
        raise TargetUnreachable("invalid DSN: the port is not a number (a URL whose user:password has no @host "
                                "after it, or a / ? # in the password, reads the password as host:port)")
    for key, value in params.items():
        if key != "password" and _PAIR.match(value):
            raise TargetUnreachable(f"invalid DSN: the value of {key} looks like another key=value pair; write an "
                                    f"empty value as {key}=''")


def _service(name: str) -> dict[str, str] | None:
    """The parameters of service ``name``: from PGSERVICEFILE (else ~/.pg_service.conf), then from
    PGSYSCONFDIR/pg_service.conf, libpq's order; None when no file defines it."""
    files = [os.environ.get("PGSERVICEFILE") or os.path.expanduser("~/.pg_service.conf")]
    if os.environ.get("PGSYSCONFDIR"):
        files.append(os.path.join(os.environ["PGSYSCONFDIR"], "pg_service.conf"))
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        found, params = False, {}
        for line in (ln.strip() for ln in lines):
            if line.startswith("["):
                if found:
                    break
                found = line.rstrip("]").strip("[").strip() == name
            elif found and "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                params[key.strip()] = value.strip()
        if found:
            return params
    return None


# options naming a file of the advisor's OS user that holds a credential (a password file, a client certificate's
# key, a service file that may hold a password), and a service found in such a file
IDENTITY_FILES = ("passfile", "sslcert", "sslkey", "servicefile", "service")


def uses_local_identity(dsn: str) -> bool:
    """Whether logging in with ``dsn`` may take who the advisor's process is for a credential: a Unix socket (a
    ``host`` that is a directory or an abstract ``@name``, or no host at all: libpq's default socket), where peer
    authentication logs the OS user in, or an option naming a file of the advisor's that holds a credential
    (``IDENTITY_FILES``). A host reached by ``hostaddr`` goes over TCP.

    >>> uses_local_identity("host=/var/run/postgresql dbname=shop"), uses_local_identity("dbname=shop user=bob")
    (True, True)
    >>> uses_local_identity("postgresql://bob@%2Fvar%2Frun%2Fpostgresql/shop")
    True
    >>> uses_local_identity("host=db.example,/tmp port=5432,5432"), uses_local_identity("host=db sslkey=/root/k")
    (True, True)
    >>> uses_local_identity("postgresql://bob:pw@db.example/shop"), uses_local_identity("hostaddr=10.0.0.1 user=b")
    (False, False)
    """
    p = parse_dsn(dsn)
    given = conninfo_to_dict(dsn)  # a service found is expanded by parse_dsn: its name is in the DSN as given
    if any(p.get(k) or given.get(k) for k in IDENTITY_FILES):
        return True
    hosts = (p.get("host") or "").split(",")
    addrs = (p.get("hostaddr") or "").split(",")
    addrs += [addrs[-1] if len(addrs) == 1 else ""] * max(0, len(hosts) - len(addrs))
    return any(not addr.strip() and (not host.strip() or host.strip()[0] in "/@")
               for host, addr in zip(hosts, addrs))


def redact(dsn: str) -> str:
    """The DSN without its password, safe to print or store."""
    try:
        params = parse_dsn(dsn)
    except TargetUnreachable:
        return scrub(dsn)
    params.pop("password", None)
    return make_conninfo(**params)


def keyword_dsn(host: str, port: int, dbname: str, user: str, password: str | None = None) -> str:
    """A libpq ``key=value`` DSN, with ``password`` when given.

    >>> keyword_dsn("127.0.0.1", 5433, "shop", "bob", "it's a pw")
    "host=127.0.0.1 port=5433 dbname=shop user=bob password='it\\\\'s a pw'"
    """
    tail = f" password={_quoted(password)}" if password else ""
    return f"host={host} port={port} dbname={dbname} user={user}{tail}"


def _quoted(value: str) -> str:
    r"""A libpq keyword value: as it is when it is one plain word, else in single quotes with ' and \\ escaped.

    >>> _quoted("playground"), _quoted("it's a pw")
    ('playground', "'it\\'s a pw'")
    """
    if value and all(c.isalnum() or c in "-_.+/@:" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def target_name(dsn: str) -> str:
    """``host:port/database`` for people (the local socket and port 5432 when the DSN names none)."""
    p = parse_dsn(dsn)
    return f"{p.get('host', 'localhost')}:{p.get('port', '5432')}/{p.get('dbname', p.get('user', 'postgres'))}"


class BoundedConnection(psycopg.Connection):
    """psycopg's connection, whose every wait for the server (a statement's answer, a fetch, a commit) gives up
    after ``answer_s`` seconds: the connection is closed and ``connectors.deadlines.hang`` names the target, one
    line (libpq has no read timeout of its own, and a stopped server's kernel still answers TCP keepalives). The
    connection itself is bounded by libpq's ``connect_timeout``. Made by ``connect``."""

    answer_s: float | None = None
    where = "the target"

    def wait(self, gen, interval=0.1, timeout=None):  # psycopg's one place that waits on the socket
        try:
            return super().wait(gen, interval, timeout if timeout is not None else self.answer_s)
        except psycopg.errors._WaitTimeout:
            self.pgconn.finish()  # a half-read answer leaves the protocol unusable: the connection goes
            raise deadlines.hang(self.where, timeout or self.answer_s or 0) from None


def connect(dsn: str, *, autocommit: bool = True, timeout_s: int = 5,
            answer_s: float | None = None) -> psycopg.Connection:
    """A connection to the target, or TargetUnreachable with the server's reason. A wait for the server's answer
    lasts at most ``answer_s`` (default ``connectors.deadlines.answer_s()``), the connection itself the DSN's
    ``connect_timeout`` (default ``timeout_s``): then TargetUnreachable "did not answer"."""
    params = parse_dsn(dsn)
    params.setdefault("connect_timeout", str(timeout_s))
    params.setdefault("application_name", APP_NAME)
    where = f"{params.get('host', 'local socket')}:{params.get('port', '5432')}/{params.get('dbname', '')}"
    # what libpq and the server quote back may be any value of the DSN: only the names where points to are kept
    known = {params.get(k) for k in ("host", "port", "dbname", "user")} - {None, "", params.get("password")}
    try:
        conn = BoundedConnection.connect(make_conninfo(**params), autocommit=autocommit)
        conn.answer_s, conn.where = answer_s or deadlines.answer_s(), where
        return conn
    except psycopg.errors.ConnectionTimeout:
        raise deadlines.hang(where, float(params["connect_timeout"]), deadlines.CONNECTING) from None
    except psycopg.OperationalError as e:
        raise TargetUnreachable(f"cannot connect to {where}: {_unquoted(e, known)}") from None
    except psycopg.Error as e:  # a parameter libpq refuses (connect_timeout=abc, ...)
        raise TargetUnreachable(f"cannot connect to {where}: invalid DSN: {_unquoted(e, known)}") from None


def _unquoted(e: BaseException, keep: set = frozenset()) -> str:
    """The first line of ``e`` with every quoted fragment left out but ``keep`` and libpq's keywords: libpq and
    the server quote the part of the DSN they refuse, and that part may be (or hold) the password.

    >>> _unquoted(ValueError('invalid percent-encoded token: "SECRET%ZZ"'))
    'invalid percent-encoded token: "..."'
    >>> _unquoted(ValueError("bad value for connect_timeout: 'abc'"))
    "bad value for connect_timeout: '...'"
    >>> _unquoted(ValueError('invalid integer value "x" for connection option "port"'))
    'invalid integer value "..." for connection option "port"'
    >>> _unquoted(ValueError('FATAL:  database "shop" does not exist'), {"shop"})
    'FATAL:  database "shop" does not exist'
    """
    keep = set(keep) | _keywords()

    def mask(m: re.Match) -> str:
        return m.group(0) if m.group(0)[1:-1] in keep else m.group(0)[0] + "..." + m.group(0)[0]

    return re.sub(r"'[^']*'", mask, re.sub(r'"[^"]*"', mask, _first_line(e)))


def _keywords(cache: list = []) -> set[str]:  # noqa: B006 - computed once
    """libpq's connection keywords (host, port, sslmode, ...): naming one repeats nothing of a DSN."""
    if not cache:
        cache.append({d.keyword.decode() for d in psycopg.pq.Conninfo.get_defaults()})
    return cache[0]


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
