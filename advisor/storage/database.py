"""Where the store's SQL runs: an embedded DuckDB file (the default, one process at a time: DuckDB's file lock; the
others ask that process, ``advisor.storage.remote``) or a PostgreSQL database shared by any number of advisor
processes (``postgresql://`` or ``postgres://`` URLs, or libpq keyword DSNs: ``host=... dbname=...``). A value that
is neither a DSN nor a plausible path is refused (``store_kind``).

``Store`` writes one SQL for both: ``?`` placeholders, types and statements both engines accept; what differs (JSON
paths) is a method here. Each thread gets its own cursor (DuckDB) or connection (PostgreSQL, autocommit: the store
issues its own BEGIN / COMMIT through ``transaction``). Errors name a PostgreSQL store only by ``redacted`` (no
password).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import weakref
from pathlib import Path

from advisor.core.errors import InvalidInput, StoreError, StoreLocked
from advisor.core.inputs import control_character
from connectors import factory
from connectors.base import scrub

__all__ = ["Database", "DuckDatabase", "PostgresDatabase", "connect", "holder_text", "is_postgres", "redacted"]

# the key of the advisory lock held while a PostgreSQL store migrates (any 64-bit number no one else uses)
_MIGRATION_LOCK = 0x0AD715E5
# and the one held while a run is admitted (its database has no other run going on), by whichever process
_ADMISSION_LOCK = _MIGRATION_LOCK + 1


def is_postgres(location: str) -> bool:
    """True for a PostgreSQL store: a ``postgresql://`` URL or a libpq keyword DSN (``host=... dbname=...``), as
    targets take; False for a DuckDB file path. ``StoreError`` for a value that is neither (``store_kind``)."""
    return store_kind(location) == "postgres"


def store_kind(location: str) -> str:
    """``"postgres"`` or ``"duckdb"`` for the store at ``location``; a value that is neither a PostgreSQL DSN nor
    a plausible file path is refused with one line that never shows a password.

    >>> store_kind("postgresql://u:p@db/advisor"), store_kind("host=db dbname=advisor"), store_kind("a.duckdb")
    ('postgres', 'postgres', 'duckdb')
    >>> store_kind("host=db dbnme=advisor password=secret")
    Traceback (most recent call last):
    ...
    advisor.core.errors.StoreError: ADVISOR_STORE looks like a PostgreSQL keyword DSN but is not one (invalid connection option "dbnme"); give a DSN (postgresql://... or host=... dbname=...) or a file path
    >>> store_kind("mysql://db/advisor")
    Traceback (most recent call last):
    ...
    advisor.core.errors.StoreError: ADVISOR_STORE 'mysql://db/advisor' is a URL db-advisor cannot keep its store in; give a PostgreSQL DSN (postgresql://... or host=... dbname=...) or a DuckDB file path
    """
    shown = f"ADVISOR_STORE {redacted(location)!r}"
    if location.startswith(("postgresql://", "postgres://")):
        return "postgres"
    if location == ":memory:":
        return "duckdb"
    if re.match(r"\s*[A-Za-z_]+\s*=", location):
        why = factory.store_dsn_problem(location)
        if why is not None:
            raise StoreError(f"ADVISOR_STORE looks like a PostgreSQL keyword DSN but is not one ({why}); give a DSN "
                             "(postgresql://... or host=... dbname=...) or a file path") from None
        return "postgres"
    if "://" in location:
        raise StoreError(f"{shown} is a URL db-advisor cannot keep its store in; give a PostgreSQL DSN "
                         "(postgresql://... or host=... dbname=...) or a DuckDB file path")
    if not location.strip() or location != location.strip() or control_character(location) \
            or location.endswith("/") or Path(location).is_dir():
        raise StoreError(f"{shown} is not a file path db-advisor can keep its store in (a DuckDB file, e.g. "
                         "~/.local/share/db-advisor/advisor.duckdb) nor a PostgreSQL DSN")
    return "duckdb"


def redacted(location: str) -> str:
    """The store's name without a password, safe to print (``connectors.base.scrub``, the one masking rule).

    >>> redacted("postgresql://team:s3cret@db.example:5432/advisor?sslmode=require&password=other")
    'postgresql://team:***@db.example:5432/advisor?sslmode=require&password=***'
    >>> redacted("host=db password='two words' user=u")
    'host=db password=*** user=u'
    """
    return scrub(location)


def connect(location: str) -> "Database":
    """The database behind ``location``: PostgreSQL for a ``postgresql://`` URL, else a DuckDB file."""
    return PostgresDatabase(location) if is_postgres(location) else DuckDatabase(location)


def _private(path: Path) -> None:
    """Keep the store's files to this user, as PostgreSQL keeps its data directory: every file this process
    creates from now on is private (umask 077: DuckDB creates and removes its ``.wal`` beside the file as it
    goes), a directory created for the store is 0700, and a store file or WAL left readable by others is made
    0600. A directory that exists already is the user's choice and is left as it is."""
    os.umask(os.umask(0o077) | 0o077)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for f in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            if f.stat().st_mode & 0o077:
                os.chmod(f, 0o600)


class Database:
    """One store database, its per-thread sessions and its SQL dialect."""

    name: str  # what errors and ``Store.path`` show (never a password)
    shared: bool  # other processes may write it at the same time

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def session(self):
        """This thread's cursor-like object: ``execute(sql, params)`` returning something with ``fetchone`` and
        ``fetchall``."""
        s = getattr(self._local, "session", None)
        if s is None or getattr(s, "broken", False):  # a PostgreSQL connection that died: open a new one
            s = self._local.session = self._new_session()
        return s

    def _new_session(self):
        raise NotImplementedError

    @contextlib.contextmanager
    def exclusive(self):
        """A transaction no other process sharing the store runs beside (a run's admission: one run per database
        at a time); this process's own threads are kept apart by ``Store.lock``. A DuckDB file has one process."""
        with self.transaction():
            yield

    @contextlib.contextmanager
    def transaction(self):
        """BEGIN ... COMMIT on this thread's session (ROLLBACK on an error); nested blocks join the outer one."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        self.session.execute("BEGIN")
        self._local.depth = 1
        try:
            yield
        except BaseException:
            self._local.depth = 0
            with contextlib.suppress(Exception):
                self.session.execute("ROLLBACK")
            raise
        self._local.depth = 0
        self.session.execute("COMMIT")

    def migrating(self):
        """Held while the schema is read and migrated: other processes opening the store wait."""
        return contextlib.nullcontext()

    def version(self) -> int:
        """The count of writes that change lists (``bump``): a cache key for them."""
        raise NotImplementedError

    def bump(self) -> None:
        raise NotImplementedError

    def json_double(self, column: str, *path: str | int) -> str:
        """SQL for the JSON value at ``path`` in ``column`` as a double (NULL when absent)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class DuckDatabase(Database):
    shared = False

    def __init__(self, path: str):
        super().__init__()
        import duckdb

        self.name = path
        if path != ":memory:":
            _private(Path(path))
        self._writes, self._writes_lock = 0, threading.Lock()  # this process is the only writer: count in memory
        try:
            self._conn = duckdb.connect(path)
        except duckdb.IOException as e:
            first = str(e).splitlines()[0]
            holder = _lock_holder_pid(path)  # asked of the file's lock, not read from DuckDB's message
            if holder is not None or "lock" in first.lower():  # DuckDB's own words about its lock never shown
                raise StoreLocked(f"cannot open the store {path}: {holder_text(holder)} holds it (DuckDB lets one "
                                  "process open the file): wait for it to end, or keep the store on PostgreSQL "
                                  "(ADVISOR_STORE=postgresql://user@host/db), which any number of processes share",
                                  path, holder) from None
            raise StoreError(f"cannot open the store {path}: {first}") from None

    def _new_session(self):
        return _DuckSession(self._conn.cursor())  # DuckDB connections are not shared between threads

    def version(self) -> int:
        return self._writes

    def bump(self) -> None:
        with self._writes_lock:
            self._writes += 1

    def json_double(self, column: str, *path: str | int) -> str:
        steps = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        return f"CAST({column}->>'${steps}' AS DOUBLE PRECISION)"

    def close(self) -> None:
        self._conn.close()


_FLOCK = "hhqqi4x"  # struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (and padding)


def _lock_holder_pid(path: str) -> int | None:
    """The process holding the lock DuckDB takes on its file (an fcntl record lock; F_GETLK names its holder),
    else None (no lock held: the file failed to open for another reason)."""
    import fcntl
    import struct

    if path == ":memory:":
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        kind, _whence, _start, _len, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, probe))
        return pid if kind != fcntl.F_UNLCK and pid > 0 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def holder_text(pid: int | None) -> str:
    """The process ``pid`` in words: its id and command line (no password), for a line naming who holds the
    store."""
    if pid is None:
        return "another process"
    who = f"process {pid}"
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        command = " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a)
        if command:
            who += f" ({redacted(command)[:300]})"
    except OSError:
        pass
    return who


class PostgresDatabase(Database):
    shared = True

    def __init__(self, url: str):
        super().__init__()
        self._url = url
        self.name = redacted(url)
        self._sessions: weakref.WeakSet = weakref.WeakSet()  # one per thread; a finished thread's closes
        self._sessions_lock = threading.Lock()
        self.session  # noqa: B018 - connect now: a wrong URL fails when the store opens

    def _new_session(self):
        session = _PgSession(factory.store_session(self._url, self.name))
        with self._sessions_lock:
            self._sessions.add(session)
        return session

    @contextlib.contextmanager
    def migrating(self):
        with self.transaction():
            self.session.execute("SELECT pg_advisory_xact_lock(?)", [_MIGRATION_LOCK])
            yield

    @contextlib.contextmanager
    def exclusive(self):
        with self.transaction():
            self.session.execute("SELECT pg_advisory_xact_lock(?)", [_ADMISSION_LOCK])
            yield

    # every process sharing the store counts its writes in one row of ``meta``, so that each sees the others'
    def version(self) -> int:
        row = self.session.execute("SELECT value FROM meta WHERE key = 'writes'").fetchone()
        return int(row[0]) if row else 0

    def bump(self) -> None:
        self.session.execute("INSERT INTO meta VALUES ('writes', '1') ON CONFLICT (key) DO UPDATE "
                             "SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS VARCHAR)")

    def json_double(self, column: str, *path: str | int) -> str:
        steps = [str(p) if isinstance(p, int) else f"'{p}'" for p in path]
        return f"CAST({column}{''.join('->' + s for s in steps[:-1])}->>{steps[-1]} AS DOUBLE PRECISION)"

    def close(self) -> None:
        with self._sessions_lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.close()


class _PgSession:
    """The driver's session (``connectors.factory.store_session``) refusing what neither store can hold, so that
    both stores answer alike."""

    def __init__(self, session):
        self._session = session

    def close(self) -> None:
        self._session.close()

    @property
    def broken(self) -> bool:
        return self._session.broken

    def execute(self, sql: str, params=None):
        _refuse_nul(params)
        return self._session.execute(sql, params)


class _DuckSession:
    """A DuckDB cursor that refuses what a PostgreSQL store cannot hold, so that both stores answer alike."""

    def __init__(self, cursor):
        self._cursor = cursor

    def execute(self, sql: str, params=None):
        _refuse_nul(params)
        return self._cursor.execute(sql, params) if params is not None else self._cursor.execute(sql)


def _refuse_nul(params) -> None:
    """``InvalidInput`` when a text parameter holds a NUL byte: PostgreSQL's text columns cannot hold one, and
    a value written to or looked up in either store must mean the same in both.

    >>> _refuse_nul(["ok", 1, None])
    >>> _refuse_nul(["a" + chr(0) + "b"])
    Traceback (most recent call last):
    ...
    advisor.core.errors.InvalidInput: a text value holds a NUL byte (U+0000), which the store cannot hold
    """
    for p in params or ():
        if isinstance(p, str) and "\x00" in p:
            raise InvalidInput("a text value holds a NUL byte (U+0000), which the store cannot hold")
