"""The one factory from a target to its engine's parts: connector, sandbox and shadow cloning; and
``reap_orphans(base_dir=None)``, which stops and removes the sandboxes of every engine (each engine's stopper is
registered here, its sandbox module imported when an orphan is found) whose owner process was killed, and returns
their directories. An engine's modules (and its driver) are imported on first use (``Engine``).

Code above ``connectors`` (pipelines, the service, benches, workloads) asks this module, and only this module, for
engine-specific objects; it then talks to them through the protocols of ``connectors.base``. Supporting another
engine means a package under ``connectors/`` plus one entry in ``ENGINES`` (its DSN schemes are already known).
The servers the advisor starts for itself (demo, playground, benches) are of ``DEFAULT_ENGINE`` unless told;
``supported(engine)`` refuses an engine it does not run, in one line, before anything is made.

Learned indexes are engines too (the system under test of a learned-index tuning run): ``learned_index(name)``
gives one (``learned_indexes()`` names them), ``binary_search_baseline()`` the sorted array they are compared
with; ``OpStream`` and the op codes are what their runs execute, ``Measurement`` what a run returns. The compiled
engines (numba, pygm) load on first use.

>>> engine_of("postgresql://bob:secret@db.example:5432/shop")
'postgres'
>>> engine_of("host=db.example dbname=shop user=bob")
'postgres'
>>> engine_of("mariadb://bob:secret@db.example/shop"), engine_of("mysql://db.example/shop")
('mariadb', 'mariadb')
"""

from __future__ import annotations

import contextvars
import importlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say
from connectors.base import TAG, Connector, Sandbox, Shadow, scrub
from connectors.local import free_port, reap_orphans, register_engine, stop_all
from connectors.replica import Replica, ReplicaUnavailable

if TYPE_CHECKING:
    from connectors.learned.base import LearnedIndexEngine

__all__ = ["DEFAULT_ENGINE", "ENGINES", "SCHEMES", "TAG", "Connector",  # and the learned-index names (__getattr__)
           "Engine", "Sandbox", "Shadow", "binary_search_baseline",
           "build_replica", "client_tool", "clone", "connect", "connector", "engine_of", "free_port", "learned_index",
           "learned_indexes", "open_replica", "reap_orphans", "replica_notes", "redact", "sandbox", "scheme_notice",
           "stop_all", "store_dsn_problem", "store_session",
           "supported", "target_name", "uses_local_identity"]


class Engine:
    """One engine's parts: ``connector(dsn, restart=None)``; ``sandbox(name, settings=None, ...)``, a class with a
    static ``client_tool(name)``; ``clone(connector, *, sample_percent, sample_min_rows, extra_settings, say)``;
    ``local_identity(dsn)``: whether the DSN logs in by the advisor's own OS identity (``uses_local_identity``);
    ``replica``: the class of its warm replicas (``build(target, directory, say)``, ``open(directory)``, and where
    it has any, ``notes(target)``: what its build would do without, said, no blocker), None where the engine has
    none yet. ``stop_orphan(root, owner_record)``: how ``reap_orphans`` stops a server of the engine whose owner
    was killed (its sandbox module's).

    Each part is given as ``"module:name"`` and imported on first use: the engines' drivers (psycopg, pymysql,
    sqlglot) take most of a second to import, which commands that only read the store (and ``--help``) skip."""

    def __init__(self, connector: str, sandbox: str, clone: str, local_identity: str, replica: str | None = None):
        self._where = {"connector": connector, "sandbox": sandbox, "clone": clone, "local_identity": local_identity,
                       "replica": replica, "stop_orphan": sandbox.partition(":")[0] + ":stop_orphan"}

    def __getattr__(self, part: str) -> Any:
        where = self.__dict__.get("_where", {})
        if part not in where:
            raise AttributeError(part)
        value = None
        if where[part] is not None:
            module, _, name = where[part].partition(":")
            value = getattr(importlib.import_module(module), name)
        setattr(self, part, value)  # imported once
        return value


DEFAULT_ENGINE = "postgres"  # the engine of the servers the advisor starts for itself (demo, benches) unless told

ENGINES: dict[str, Engine] = {
    "postgres": Engine("connectors.postgres.connector:PostgresConnector", "connectors.postgres.sandbox:PostgresSandbox",
                       "connectors.postgres.shadow:create_shadow", "connectors.postgres.connection:uses_local_identity",
                       "connectors.postgres.replica:PostgresReplica"),
    "mariadb": Engine("connectors.mariadb.connector:MariaDBConnector", "connectors.mariadb.sandbox:MariaDBSandbox",
                      "connectors.mariadb.shadow:create_shadow", "connectors.mariadb.connection:uses_local_identity",
                      "connectors.mariadb.replica:MariaDBReplica"),
}



def _stopper(engine: str) -> Callable[[Path, dict], None]:
    return lambda root, record: ENGINES[engine].stop_orphan(root, record)


for _name in ENGINES:  # reap_orphans stops any engine's orphans, its sandbox module imported only when one is found
    register_engine(_name, _stopper(_name))

# URL schemes of every engine the advisor knows of, supported or not yet
SCHEMES = {"postgresql": "postgres", "postgres": "postgres", "mariadb": "mariadb", "mysql": "mariadb"}
# schemes read as another engine's for now, with the line said when one is given (``scheme_notice``)
DEPRECATED_SCHEMES = {"mysql": "mysql:// is read as MariaDB for now and will mean MySQL once MySQL is supported: "
                               "write mariadb:// for a MariaDB target"}
_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]*)://")
_KEYWORD = re.compile(r"^\s*[A-Za-z_]+\s*=")


def engine_of(dsn: str) -> str:
    """The engine a DSN is for: ``postgresql://`` / ``postgres://`` URLs and libpq ``key=value`` strings are
    PostgreSQL; ``mariadb://`` is MariaDB, and so is ``mysql://`` until MySQL is supported (``scheme_notice``).
    AdvisorError for an engine not supported (yet) or a
    DSN of no known form; the message never repeats the DSN (it may hold a password)."""
    m = _SCHEME.match(dsn or "")
    if m:
        scheme = m.group(1).lower()
        if scheme not in SCHEMES:
            raise AdvisorError(f"unknown database URL scheme {scheme!r}: expected one of "
                               f"{', '.join(s + '://' for s in SCHEMES)}")
        name = SCHEMES[scheme]
    elif _KEYWORD.match(dsn or ""):
        name = "postgres"  # libpq's key=value form
    else:
        raise AdvisorError("cannot tell the database engine of this DSN: expected a URL such as "
                           "postgresql://user@host:5432/dbname or libpq key=value pairs (host=... dbname=...)")
    _engine(name)  # refuses an engine that is known but not supported yet
    return name


def scheme_notice(dsn: str) -> str | None:
    """The one line to say about a DSN whose URL scheme will change meaning (``DEPRECATED_SCHEMES``); None for
    any other DSN. The DSN still opens as before (a stored ``mysql://`` target included).

    >>> scheme_notice("mysql://bob:secret@db/shop")[:36], scheme_notice("mariadb://bob@db/shop")
    ('mysql:// is read as MariaDB for now ', None)
    """
    m = _SCHEME.match(dsn or "")
    return DEPRECATED_SCHEMES.get(m.group(1).lower()) if m else None


def _engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise AdvisorError(f"engine {name} is not supported yet (supported: {', '.join(ENGINES)})") from None


def supported(engine: str) -> str:
    """``engine`` when the advisor runs it; AdvisorError naming the engines it runs otherwise (a bench checks its
    engine with it before it makes anything)."""
    _engine(engine)
    return engine


def connector(dsn: str, restart: Callable[[], None] | None = None) -> Connector:
    """The connector for the database at ``dsn``. ``restart`` restarts its server, when the caller can (a
    sandbox's ``restart``); without one a change that needs a restart is reported as pending."""
    return _engine(engine_of(dsn)).connector(dsn, restart=restart)


def sandbox(engine: str = DEFAULT_ENGINE, name: str = "sandbox", settings: dict[str, str] | None = None,
            **options: Any) -> Sandbox:
    """A new, not yet started sandbox server of ``engine`` (use it as a context manager, or ``start()`` it).
    ``settings`` are in the engine's configuration syntax; ``options`` go to the engine's sandbox (``keep``,
    ``base_dir``, and ``durable=False``: crash safety traded for speed, as the engine does it)."""
    return _engine(engine).sandbox(name, settings=settings, **options)


_BASE: contextvars.ContextVar[tuple] = contextvars.ContextVar("shadow_base", default=())


@contextmanager
def shadows_start_from(changes: Sequence) -> Iterator[None]:
    """Shadows cloned inside this block start from the target's state plus ``changes`` (e.g. the indexes a
    whole-advisor run validated, so that its rewrite and knob steps measure against the database as it will be).
    The changes are applied to each new shadow, never to the target."""
    token = _BASE.set(tuple(changes))
    try:
        yield
    finally:
        _BASE.reset(token)


def clone(target: Connector, *, sample_percent: float | None = None, sample_min_rows: int = 100_000,
          extra_settings: dict[str, str] | None = None, say: Say | None = None, replica: Any = None) -> Shadow:
    """A running shadow of ``target``'s database on a sandbox of its engine (the target is only read): the whole
    database, or with ``sample_percent`` in (0, 100] a sample of tables with more than ``sample_min_rows`` rows,
    or with ``replica`` (a warm ``connectors.replica.Replica`` of the target) a thin clone of it; plus the changes
    of an enclosing ``shadows_start_from``. Close it (or leave its ``with`` block) to stop its server."""
    if replica is not None:
        shadow = replica.clone(say, settings=extra_settings)
    else:
        shadow = _engine(target.engine).clone(target, sample_percent=sample_percent, sample_min_rows=sample_min_rows,
                                              extra_settings=extra_settings, say=say)
        if sample_percent:
            shadow.method, shadow.note = "sampled copy", f"{sample_percent:g}% of each large table"
    base = _BASE.get()
    if base:
        try:  # a progress callback may raise (a cancelled run): the shadow is stopped then too
            if say:
                say(f"shadow: applying {len(base)} change(s) validated earlier in this run")
            shadow.connector.apply(base)
        except BaseException:
            shadow.close()
            raise
    return shadow


def _replicas(engine: str) -> Any:
    kind = _engine(engine).replica
    if kind is None:
        raise ReplicaUnavailable(f"warm replicas of {engine} targets are not supported yet: runs make full copies")
    return kind


def build_replica(target: Connector, directory: Path, say: Say | None = None) -> Replica:
    """A warm replica of ``target``, built in ``directory`` and started (``connectors.replica``): minutes for a large
    database, said through ``say``; ReplicaUnavailable with the reason (and what fixes it) when none can be had."""
    return _replicas(target.engine).build(target, directory, say or (lambda _m: None))


def replica_notes(target: Connector) -> list[str]:
    """What a warm replica of ``target`` would be built without, one line each with its fix (a slower seed, say);
    none of them keeps it from being built (``replica_requirements`` says what does). Only reads the target."""
    notes = getattr(_replicas(target.engine), "notes", None)
    return notes(target) if notes is not None else []


def open_replica(engine: str, directory: Path) -> Replica:
    """The replica built earlier in ``directory`` (not started: ``ensure_running`` does)."""
    return _replicas(engine).open(directory)


def connect(dsn: str, autocommit: bool = True) -> Any:
    """A DB-API 2 connection to the database at ``dsn`` (a context manager that closes it); TargetUnreachable
    with the server's reason when it cannot connect."""
    return connector(dsn).connect(autocommit=autocommit)


def uses_local_identity(dsn: str) -> bool:
    """Whether logging in with ``dsn`` may borrow who the advisor's process is (its OS user, its files) instead of
    the credentials in the DSN: a Unix socket where the server trusts the OS user (PostgreSQL's peer, MariaDB's
    unix_socket authentication), or an option naming a credential file of the advisor's. Each engine says what
    counts (its connection module's ``uses_local_identity``). The service refuses such a DSN from a face whose
    caller is not the advisor's OS user (REST, the UI); the command line, run by that user, may use one.
    AdvisorError for a DSN that cannot be parsed."""
    return _engine(engine_of(dsn)).local_identity(dsn)


def redact(dsn: str) -> str:
    """The DSN without its password, safe to print or store (also for a DSN that cannot be parsed)."""
    try:
        return connector(dsn).display_name
    except AdvisorError:
        return scrub(dsn)


def target_name(dsn: str) -> str:
    """``host:port/database``: a short name for people."""
    return connector(dsn).target_name


def client_tool(engine: str, name: str) -> str:
    """Path of one of the engine's installed client programs (e.g. ``pgbench``, ``pg_dump``)."""
    return _engine(engine).sandbox.client_tool(name)


# --- the advisor's own store in a PostgreSQL database (``advisor.storage.database`` writes its SQL) ---------------

def store_session(url: str, name: str):
    """A new connection to the store's PostgreSQL database at ``url``, taking ``?`` placeholders; StoreError
    (``name``, never the password) when it cannot be opened."""
    from connectors.postgres import store

    return store.open_session(url, name)


def store_dsn_problem(location: str) -> str | None:
    """Why ``location`` (libpq ``key=value`` pairs) is not a PostgreSQL DSN; None when it is one."""
    from connectors.postgres import store

    return store.keyword_dsn_problem(location)


LEARNED_INDEXES = ("alex", "pgm")
_LEARNED_NAMES = {"LearnedIndexEngine": "base", "Measurement": "base", "INSERT": "ops", "LOOKUP": "ops",
                  "OP_NAMES": "ops", "RANGE": "ops", "OpStream": "ops"}


def __getattr__(name: str) -> Any:
    """The learned-index names this module gives (``OpStream``, the op codes, ``Measurement``...), imported on
    first use: they need numpy, which a command that only reads the store does not."""
    if name not in _LEARNED_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"connectors.learned.{_LEARNED_NAMES[name]}"), name)


def learned_indexes() -> tuple[str, ...]:
    """The learned index engines a tuning run can tune."""
    return LEARNED_INDEXES


def learned_index(name: str) -> LearnedIndexEngine:
    """The learned index engine ``name`` ("alex": the numba ALEX-like index; "pgm": pygm's PGM-index, read-only);
    AdvisorError naming the known ones otherwise."""
    from connectors.learned.alex import AlexEngine
    from connectors.learned.pgm import PGMEngine
    engines = {"alex": AlexEngine, "pgm": PGMEngine}
    if name not in engines:
        raise AdvisorError(f"unknown learned index {name!r}: expected one of {', '.join(LEARNED_INDEXES)}")
    return engines[name]()


def binary_search_baseline() -> LearnedIndexEngine:
    """``sorted-array``: binary search over a sorted array in the same kind of compiled loop (inserts shift)."""
    from connectors.learned.sorted_array import SortedArrayEngine
    return SortedArrayEngine()
