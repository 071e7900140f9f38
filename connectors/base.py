"""The engine seam: what code above ``connectors`` may rely on, whatever the engine.

- ``Connector``: one live database (observe, settings catalog, what-if costs and plans, apply/revert, connections).
- ``WhatIf``: a hypothetical-index planning session on one database (HypoPG for PostgreSQL).
- ``Sandbox``: a throwaway local server the advisor starts itself (shadows, benches, the demo, tests).
- ``Shadow``: a sandbox loaded with a copy of a target's database, and a connector to that copy.
- ``TAG`` (the comment on every statement the advisor sends) and ``scrub`` (mask passwords in any DSN text).
- ``tool_error``: what a client program (pg_dump, pg_restore; mariadb-dump next) said went wrong, one line, so
  that every engine's shadow cloning reports a failed copy the same way.

Each engine implements these in its own package (``connectors/postgres``; ``connectors/mariadb`` next);
``connectors.factory`` is the one place that maps an engine (or a DSN) to those classes. Units: sizes in bytes,
planner costs in the engine's own cost units, times in seconds unless a name ends in ``_ms``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from advisor.core.domain import Applied, Change, Costed, Hardware, IndexChange, KnobSpec, Snapshot
from advisor.core.plans import Plan
from connectors.probing import Probe

# Every statement the advisor itself sends starts with this comment, so that capture can leave it out of the
# observed workload (statement statistics keep the first-seen text, comment included). Valid SQL in every engine.
TAG = "/* db-advisor */ "

TableRef = tuple[str, str]  # (schema, table); for MariaDB the schema is the database


def scrub(text: str) -> str:
    """``text`` with anything that looks like a password in a DSN (``password=...``, ``//user:secret@``) masked;
    for DSNs that cannot be parsed: a value runs to the next blank (a backslash-escaped one included) or is
    quoted, an unterminated quote running to the end.

    >>> scrub("host=db password=p&ss0rd user=u"), scrub("password='two words' x=1"), scrub("password=a\\\\ b c")
    ('host=db password=*** user=u', 'password=*** x=1', 'password=*** c')
    >>> scrub("password='never closed user=u"), scrub("postgresql://u:s3cret@db/x?password=other")
    ('password=***', 'postgresql://u:***@db/x?password=***')
    """
    text = re.sub(r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)+)", r"\1***", text)
    return re.sub(r"(//[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


# levels of a client program's own messages that say what went wrong ("pg_dump: error: ...", "pg_restore: detail:
# ...", "mariadb-dump: Got error: ..."); its warnings and progress are left out
_TOOL_LEVELS = ("error:", "fatal:", "detail:", "hint:", "got error:")
# what starts the SQL a program echoes (the statement that failed, not what went wrong): pg_dump's "Query was:",
# pg_restore's "Command was:", and the server's "LINE n:" (with a caret under it) and "QUERY:"
_ECHO = re.compile(r"^(?:(?:error|detail):\s*)?(?:(?:query|command) was:|LINE \d+:|QUERY:)", re.IGNORECASE)


def tool_error(tool: str, stderr: str | None, limit: int = 400) -> str:
    r"""What the client program ``tool`` said went wrong, from its ``stderr``, as one line of at most ``limit``
    characters with passwords masked: its own messages (``tool: error: ...`` with the lines that continue it, such
    as libpq's reason, and ``tool: detail:`` / ``hint:``), never the SQL it echoes (``Query was:``, ``Command
    was:``); when it said none of those, its first non-empty line; ``""`` when it said nothing.

    >>> tool_error("pg_dump", '''pg_dump: error: query failed: FATAL:  terminating connection due to administrator command
    ... server closed the connection unexpectedly
    ... \tThis probably means the server terminated abnormally
    ... \tbefore or while processing the request.
    ... pg_dump: detail: Query was: SELECT p.tableoid, p.oid, p.proname
    ... FROM pg_proc p
    ... LEFT JOIN pg_init_privs pip ON (p.oid = pip.objoid AND pip.classoid = 'pg_proc'::regclass)
    ... WHERE p.pronamespace <> 'pg_catalog'::regnamespace
    ...   OR p.proacl IS DISTINCT FROM pip.initprivs)
    ... ''')
    'pg_dump: error: query failed: FATAL: terminating connection due to administrator command; server closed the connection unexpectedly This probably means the server terminated abnormally before or while processing the request.'
    >>> tool_error("pg_dump", "pg_dump: error: aborting because of server version mismatch\n"
    ...                       "pg_dump: detail: server version: 16.2; pg_dump version: 15.6\n")
    'pg_dump: error: aborting because of server version mismatch | pg_dump: detail: server version: 16.2; pg_dump version: 15.6'
    >>> tool_error("pg_restore", 'pg_restore: error: could not execute query: ERROR:  relation "orders" already '
    ...            'exists\nCommand was: CREATE TABLE public.orders (\n    id integer\n);\n\n'
    ...            'pg_restore: warning: errors ignored on restore: 1\n')
    'pg_restore: error: could not execute query: ERROR: relation "orders" already exists'
    >>> tool_error("pg_dump", 'pg_dump: error: query failed: ERROR:  column "x" does not exist\nLINE 1: SELECT x '
    ...            'FROM pg_class\n               ^\npg_dump: detail: Query was: SELECT x FROM pg_class\n')
    'pg_dump: error: query failed: ERROR: column "x" does not exist'
    >>> tool_error("pg_dump", "could not connect to postgresql://bob:secret@db:5432/shop\nmore\n")
    'could not connect to postgresql://bob:***@db:5432/shop'
    >>> tool_error("pg_dump", "  \n"), tool_error("pg_dump", None)
    ('', '')
    """
    prefix = f"{tool}: "
    messages: list[list[str]] = []  # each: a line of the program's own and the lines that continue it
    for line in (stderr or "").splitlines():
        if line.startswith(prefix) or not messages:
            messages.append([line])
        else:
            messages[-1].append(line)
    kept = []
    for message in messages:
        head = message[0].removeprefix(prefix)
        if not message[0].startswith(prefix) or not head.lower().startswith(_TOOL_LEVELS) or _ECHO.match(head):
            continue
        text = " ".join(message[0].split())
        for line in message[1:]:
            if _ECHO.match(line.strip()):
                break  # the rest is the statement it echoes
            if line.strip():  # an indented line wraps the line above; another one is a sentence of its own
                text += (" " if line[:1].isspace() else "; ") + " ".join(line.split())
        kept.append(text)
    text = " | ".join(kept) or next((" ".join(ln.split()) for ln in (stderr or "").splitlines() if ln.strip()), "")
    text = scrub(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@runtime_checkable
class WhatIf(Protocol):
    """Hypothetical indexes on one open session: they exist for this session only, never for other clients.
    Close it (or leave its ``with`` block) when done. ``creates`` / ``drops`` count the hypothetical indexes
    made and removed so far."""

    creates: int
    drops: int

    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset[TableRef]) -> Costed:
        """Make the hypothetical indexes on ``tables`` exactly ``indexes``, then the plan's cost (cost units)."""

    def index_size(self, index: IndexChange) -> int:
        """The engine's size estimate of ``index`` in bytes."""

    def close(self) -> None: ...

    def __enter__(self) -> WhatIf: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Session(Protocol):
    """One open connection to a database for running outside SQL (workload statements, rewrites, loaders) one
    statement at a time under a statement timeout. Errors arrive as the advisor's own: ``StatementTimeout``
    (the timeout passed, or ``cancel()`` was called), ``StatementFailed`` (the server's message; the session stays
    usable) and ``TargetUnreachable`` (the connection is gone). Close it (or leave its ``with`` block) when done."""

    def run(self, statement: str, *, rollback: bool = False) -> list[tuple] | None:
        """Run exactly one statement (a smuggled second one is refused); its rows when it returns a result set,
        else None. ``rollback``: inside a transaction that is rolled back (a write leaves the data as it was)."""

    def cancel(self) -> None:
        """Stop the statement running now; safe to call from another thread."""

    def close(self) -> None: ...

    def __enter__(self) -> Session: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Connector(Protocol):
    """One live database of one engine. Every method opens its own short-lived connection unless it takes one;
    the target is only read, except by ``apply`` / ``revert`` (and ``reset_statement_stats``)."""

    engine: str  # "postgres", "mariadb": for the factory and for people; nothing above connectors branches on it
    dialect: str  # the engine's SQL dialect as sqlglot names it ("postgres", "mysql"): passed down as data
    dsn: str  # as given, password included: never print or store it (see ``display_name``)

    @property
    def display_name(self) -> str:
        """The DSN without its password, safe to print or store."""

    @property
    def target_name(self) -> str:
        """A short name for people: ``host:port/database``."""

    # --- connections -------------------------------------------------------------------------------------------

    def quote(self, name: str) -> str:
        """``name`` as a quoted identifier of the engine's SQL, by the driver's own tools (never formatted)."""

    def session(self, timeout_ms: int | None = None) -> Session:
        """A session for outside SQL with a statement timeout of ``timeout_ms`` (None or 0: none);
        TargetUnreachable with the server's reason when it cannot connect."""

    def connect(self, autocommit: bool = True) -> Any:
        """A DB-API 2 connection to the database (a context manager that closes it); TargetUnreachable with the
        server's reason when it cannot connect."""

    def execute_one(self, cursor: Any, query: Any) -> Any:
        """Run exactly one statement of outside text (workload or user SQL) on ``cursor``: a smuggled second
        statement is refused by the server. Returns the cursor."""

    def check_sql(self, statement: str) -> None:
        """Refuse one statement the database would not run, before any work is done with it: ``BadStatement``
        with the engine's own message (a syntax error, an unknown table or column) and the position in
        ``statement`` where the engine stopped (1-based characters), when it says. Nothing is executed: the
        statement is only parsed and analysed, in a read-only transaction that is rolled back."""

    def has_extension(self, name: str) -> bool:
        """Whether an optional server feature (a PostgreSQL extension, a MariaDB plugin) is installed."""

    def identity(self) -> dict[str, Any]:
        """Which database this is, beyond its DSN: the engine, the server's (cluster's) unique identifier when
        the engine has one, and the database's name and internal id. The same database answers the same
        identity under any DSN; a copy (a shadow, a restore elsewhere) does not (``advisor.core.identity``)."""

    # --- observing ---------------------------------------------------------------------------------------------

    def observe(self) -> Snapshot:
        """Statement stats, metrics, settings, schema with statistics, and indexes, as of now."""

    def knob_catalog(self) -> dict[str, KnobSpec]:
        """Every setting, by name, with type, unit, bounds and whether a change needs a restart."""

    def hardware(self) -> Hardware | None:
        """The server's memory and cores (``source="server"``) where the engine lets this role read them; None
        otherwise (the user then gives them: ``advisor.core.hardware.for_target``)."""

    def table_columns(self) -> dict[TableRef, tuple[str, ...]]:
        """Every user table's columns, in order."""

    def column_types(self) -> dict[TableRef, tuple[tuple[str, str, bool], ...]]:
        """Every user table's columns in order, each as (column, SQL type, declared NOT NULL)."""

    def unique_keys(self) -> dict[TableRef, tuple[tuple[str, ...], ...]]:
        """Every user table's unique keys (primary key, unique indexes without predicate or expression)."""

    def foreign_keys(self) -> tuple[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], ...]:
        """Every validated foreign key: (schema, table, columns, referenced table, referenced columns)."""

    def reset_statement_stats(self) -> None:
        """Forget the statement statistics gathered so far (the next observation starts from zero), and the
        constants sampled with them (pg_qualstats) where the role may."""

    def table_sample(self, schema: str, table: str, rows: int, seed: int) -> dict | None:
        """About ``rows`` random rows of a table, the same rows for the same seed, for sizing indexes before they
        are built: ``{"rows", "percent", "columns": [(name, type length, alignment bytes)], "ctids" (row ids),
        "values": [(stored size in bytes, 64-bit hash of the text) per column, per row]}``."""
        ...

    def sample_matching(self, schema: str, table: str, percent: float | None, seed: int, where: str) -> set[str]:
        """The row ids of ``table_sample``'s rows that the predicate ``where`` keeps (a partial index's)."""
        ...

    # --- planning ----------------------------------------------------------------------------------------------

    def plan(self, sql: str) -> Plan:
        """The planner's plan of ``sql`` (constants bound) as a neutral ``Plan``: costs, row estimates, tables
        read whole, indexes used. BadStatement when the engine cannot plan it."""

    def explain_cost(self, sql: str, hypothetical: Sequence[IndexChange] = ()) -> float:
        """The planner's total cost of ``sql`` (constants bound), optionally with hypothetical indexes."""

    def explain_plan(self, sql: str) -> dict:
        """The planner's plan of ``sql`` (constants bound) in the engine's JSON form."""

    def used_indexes(self, statements: Sequence[str]) -> list[set[str]]:
        """For each statement (constants bound), the names of the indexes its plan reads; one connection."""

    def timings_without(self, statement: str, hidden: Sequence[IndexChange], repeats: int = 3,
                        timeout_ms: int = 60_000) -> list[float]:
        """Milliseconds of ``repeats`` executions of ``statement`` with the built indexes ``hidden`` out of the
        planner's reach, nothing rebuilt afterwards (a shadow's diagnosis of which index misleads a plan)."""

    def whatif(self) -> WhatIf:
        """A hypothetical-index session on a connection of its own (closing the session closes it)."""

    def index_name(self, change: IndexChange) -> str:
        """The name ``apply`` gives the index (deterministic, within the engine's identifier limit)."""

    def index_sizes(self, indexes: Sequence[IndexChange]) -> dict[IndexChange, int | None]:
        """The real size in bytes of each built index (None for one that does not exist)."""

    # --- changing ----------------------------------------------------------------------------------------------

    def plan_changes(self, changes: Sequence[Change], catalog: dict[str, KnobSpec] | None = None) -> Applied:
        """Check every change and render the SQL that applies and reverts it, without running anything."""

    def apply(self, changes: Sequence[Change], lock_timeout_s: float | None = None) -> Applied:
        """Make the changes (all checked first; a failure midway undoes what was done); the result says
        exactly how to undo them. A statement that waits longer than ``lock_timeout_s`` for a lock held by
        another session gives up with ``ProductionLocked``."""

    def revert(self, applied: Applied, lock_timeout_s: float | None = None) -> None:
        """Undo what ``apply`` did (``lock_timeout_s`` as for ``apply``)."""

    # --- benches (issue 30) ------------------------------------------------------------------------------------

    def database_bytes(self) -> int:
        """The connected database's size on disk in bytes: its tables, indexes and the engine's own files of it
        (PostgreSQL: ``pg_database_size``)."""

    def analyze(self, tables: Sequence[str] | None = None) -> None:
        """Refresh the planner's statistics of ``tables`` (names in the connection's default schema; None: every
        table of the database), and where the engine keeps one its visibility map (PostgreSQL: VACUUM ANALYZE)."""

    def table_bytes(self, table: str, schema: str | None = None) -> int:
        """Bytes of ``table``'s rows on disk, without its indexes (``schema`` None: the connection's default)."""

    def invalid_indexes(self) -> list[str]:
        """Names of the indexes an interrupted or failed online build left unusable (engines whose builds leave
        nothing behind: none)."""

    def probe(self) -> Probe:
        """An operator's connection to the server (closing it releases what it holds)."""


@runtime_checkable
class Sandbox(Protocol):
    """A throwaway local server on a free loopback port, started from the system's binaries; ``stop()`` (or
    leaving its ``with`` block) stops it and removes its files. Settings are in the engine's configuration
    syntax and units (e.g. ``{"shared_buffers": "256MB"}``). Its directory holds an owner record
    (``connectors.local.write_owner``), so that ``reap_orphans`` stops and removes it once its owner is killed."""

    engine: str
    name: str
    host: str
    port: int
    user: str

    def start(self) -> Sandbox: ...

    def stop(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...

    def restart(self) -> None:
        """Restart the server (e.g. after a setting that needs one changed); SandboxError with its log's tail."""

    def recover(self, settings: dict[str, str]) -> None:
        """Bring back a server that crashed or will not start, with ``settings`` as its persisted overrides:
        what is left of the old server is ended and waited for (bounded) before it starts again."""

    def is_running(self) -> bool: ...

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Block until the server accepts connections; SandboxError after ``timeout_s`` seconds."""

    def dsn(self, dbname: str = ...) -> str:
        """The DSN of one of its databases (the server's default database when not named)."""

    def connector(self, dbname: str = ...) -> Connector:
        """A connector to one of its databases that restarts this server when a change needs it."""

    def create_database(self, dbname: str, template: str | None = None, extensions: bool = True) -> str:
        """Create a database (with the advisor's extensions unless told otherwise); its DSN."""

    def add_login(self, user: str, password: str) -> None:
        """A superuser login that must give ``password`` over TCP (as a production server asks); the sandbox's
        own access stays as it was."""

    def log_tail(self, lines: int = 5) -> str:
        """The server log's last lines, joined by `` | ``."""

    # --- benches (issue 30) ------------------------------------------------------------------------------------

    default_db: str  # the database every new server has (PostgreSQL: "postgres"): ``dsn()``'s and ``connector()``'s

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """The DSN of database ``dbname`` over TCP as ``user`` (None: the sandbox's own), with ``password`` when
        given, in the engine's DSN form (values quoted as that form needs): what a person pastes to reach it."""


@dataclass
class Shadow:
    """A sandbox holding a copy of a target's database ``dbname``, with a connector that can restart it.
    ``restore_warnings``: constraints a sampled copy broke (e.g. foreign keys to rows left out). Closing the
    shadow stops its server."""

    sandbox: Sandbox
    connector: Connector
    dbname: str
    restore_warnings: int = 0

    @classmethod
    def of(cls, sandbox: Sandbox, dbname: str) -> Shadow:
        """A sandbox's database used as a shadow as it is (benches, tests: nothing is copied)."""
        return cls(sandbox, sandbox.connector(dbname), dbname)

    @property
    def dsn(self) -> str:
        return self.connector.dsn

    def close(self) -> None:
        self.sandbox.stop()

    def __enter__(self) -> Shadow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

