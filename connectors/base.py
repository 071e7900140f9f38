"""The engine seam: what code above ``connectors`` may rely on, whatever the engine.

- ``Connector``: one live database, what a pipeline needs of it (connections and sessions, observe, plans and
  what-if costs, the knob profile, index facts, parameter binding, apply/revert, replica requirements); the two other
  roles, each reached by one accessor: ``loader()``, a ``connectors.loader.Loader`` (what data-set loaders use), and
  ``bench()``, a ``connectors.probing.BenchProbe`` (what benches and fault injection use).
- ``WhatIf``: a hypothetical-index planning session on one database (HypoPG for PostgreSQL).
- ``BindingSource``: what a database knows about the constants of its normalized statements (parameter binding).
- ``Sandbox``: a throwaway local server the advisor starts itself (shadows, benches, the demo, tests).
- ``Shadow``: a sandbox loaded with a copy of a target's database, and a connector to that copy.
- ``Session``, ``BindingSource``, ``WhatIf`` (``connectors.sessions``), ``Loader``, ``BenchProbe``, ``Probe``,
  ``SQLGLOT`` (``connectors.dialects``: our dialect keys, each one sqlglot reads as a plugin of ours) and ``TAG``, ``scrub``,
  ``tool_error`` (``connectors.text``) are re-exported here, so that ``connectors.base`` names the whole seam.

Each engine implements these in its own package (``connectors/postgres``, ``connectors/mariadb``);
``connectors.factory`` is the one place that maps an engine (or a DSN) to those classes. Units: sizes in bytes,
planner costs in the engine's own cost units, times in seconds unless a name ends in ``_ms``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from advisor.core.domain import Applied, Change, Hardware, IndexChange, KnobSpec, Snapshot, StatementStat
from advisor.core.indexfacts import IndexFacts
from advisor.core.knobprofile import KnobProfile
from advisor.core.plans import Plan
from connectors.dialects import SQLGLOT
from connectors.loader import Loader
from connectors.probing import BenchProbe, Probe
from connectors.sessions import BindingSource, Session, TableRef, WhatIf
from connectors.text import TAG, scrub, tool_error

__all__ = ["SQLGLOT", "TAG", "BenchProbe", "BindingSource", "Connector", "Loader", "Probe", "Sandbox", "Session",
           "Shadow", "TableRef", "WhatIf", "scrub", "tool_error"]


@runtime_checkable
class Connector(Protocol):
    """One live database of one engine. Every method opens its own short-lived connection unless it takes one;
    the target is only read, except by ``apply`` / ``revert`` (and ``reset_statement_stats``)."""

    engine: str  # "postgres", "mariadb": for the factory and for people; nothing above connectors branches on it
    dialect: str  # the engine's SQL dialect, our key ("postgres", "mariadb": ``connectors.dialects``), which sqlglot
    # reads too: passed down as data (to sqlglot, the rewriter, the rules' ``DIALECTS``)
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
        """Statement stats, metrics, settings, schema with statistics, and indexes, as of now. The statement stats
        are the application's: the engine's own catalog and tool statements (system views, its extensions'
        functions) are left out."""

    def statement_stats(self) -> tuple[StatementStat, ...]:
        """``observe().statements`` alone, read from the engine's statistics without opening any table of the
        database: what the watch of an applied change reads, which must not wait for a lock another session holds
        on a table (``observe`` sizes tables and indexes, and waits)."""

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

    def column_keys(self, table: str, column: str, limit: int) -> list[int]:
        """Up to ``limit`` distinct non-null values of an integer column, ascending (a learned index's keys);
        ``table`` is ``name`` or ``schema.name``; identifiers are quoted by the driver. AdvisorError for a table or
        column that is not there or a column that is not of integers."""
        ...

    # --- planning ----------------------------------------------------------------------------------------------

    def plan(self, sql: str) -> Plan:
        """The planner's plan of ``sql`` (constants bound) as a neutral ``Plan``: costs, row estimates, tables
        read whole, indexes used. BadStatement when the engine cannot plan it."""

    def explain_cost(self, sql: str, hypothetical: Sequence[IndexChange] = ()) -> float:
        """The planner's total cost of ``sql`` (constants bound), optionally with hypothetical indexes."""

    def timings_without(self, statement: str, hidden: Sequence[IndexChange], repeats: int = 3,
                        timeout_ms: int = 60_000, warmup: int = 1) -> list[float]:
        """Milliseconds of ``repeats`` executions of ``statement`` (after ``warmup`` unmeasured ones) with the
        built indexes ``hidden`` out of the planner's reach, nothing rebuilt afterwards (a shadow's diagnosis of
        which index misleads a plan, the index validation's baseline arm)."""

    def whatif(self) -> WhatIf:
        """A hypothetical-index session on a connection of its own (closing the session closes it). An engine
        that must build the indexes refuses (AdvisorError) unless the database is a sandbox's (a shadow)."""

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

    def ownership(self, changes: Sequence[Change]) -> list[tuple[str, str | None]]:
        """Per change, in order: the key of the object it creates, drops or sets (``index <schema>.<name>``,
        ``setting <name>``) and that object's identity on the server now (an index's definition as the server
        reads it, which maintenance that rebuilds it keeps; None when no such object exists; ``""`` for a
        setting). Recorded after an apply and compared before a revert, so that a
        change touches only what it created, and two changes with one key are known to collide."""

    def lock_waits(self, samples: int = 5, interval_s: float = 0.2) -> float:
        """The share of ``samples`` (taken ``interval_s`` apart) in which another session of this database was
        waiting for a lock: what tells a slowdown other sessions' locks caused from one a change caused."""

    # --- binding -----------------------------------------------------------------------------------------------

    def binding_source(self) -> BindingSource:
        """What the database knows about real and plausible constants of its normalized statements (examples of
        real calls, their constants, parameter types, column statistics, literals) on a connection of its own
        (closing the source closes it); TargetUnreachable with the server's reason when it cannot connect."""

    # --- knobs -------------------------------------------------------------------------------------------------

    def knob_profile(self) -> KnobProfile:
        """The engine's knob facts (``advisor.core.knobprofile``): the knobs worth tuning and their ranges for a
        machine (bytes for memory knobs, the catalog's unit otherwise), the durability and never-tuned knobs, the
        memory model a configuration must fit in RAM, orderings between knobs, rule-of-thumb seeds and the
        engine's words for prompts. Reads nothing from the server."""

    # --- index facts -------------------------------------------------------------------------------------------

    def index_facts(self) -> IndexFacts:
        """What the engine's indexes are like (page size in bytes, deduplication, INCLUDE and partial indexes,
        key-column and name limits, the planner's cost unit), as data for the index problem and size model."""

    def constraint_indexes(self) -> set[str]:
        """Names of the indexes behind a constraint (primary, unique, exclusion): never proposed for dropping."""

    def stats_since(self) -> str | None:
        """When the usage statistics (index scan counts) started, as ``YYYY-MM-DD HH:MM TZ``; None when the engine
        does not say."""

    def default_schema(self) -> str:
        """The schema an unqualified table name resolves to (for statements read above connectors)."""

    def plans(self, statements: Sequence[str]) -> list[Plan]:
        """``plan`` of each statement (constants bound), on one connection: which indexes each plan reads, its
        cost and row estimates. BadStatement when the engine cannot plan one."""

    def column_data_types(self) -> dict[tuple[str, str, str], str]:
        """(schema, table, column) -> the column's standard type name (information_schema's ``data_type``:
        ``integer``, ``numeric``, ``character varying``, ...), for grouping index sizes by key type."""

    # --- replicas ----------------------------------------------------------------------------------------------

    def replica_requirements(self) -> list[tuple[str, str]]:
        """What this server lacks to feed a warm replica (``connectors.replica``): (what is missing, the one line
        that fixes it) each, [] when one can follow it. Read-only: the target's configuration is never changed."""

    # --- the other roles ----------------------------------------------------------------------------------------

    def loader(self) -> Loader:
        """What the built-in workloads' loaders ask of this database (``connectors.loader.Loader``)."""

    def bench(self) -> BenchProbe:
        """What the benches and fault injection read and disturb of it (``connectors.probing.BenchProbe``)."""


@runtime_checkable
class Sandbox(Protocol):
    """A throwaway local server on a free loopback port, started from the system's binaries; ``stop()`` (or
    leaving its ``with`` block) stops it and removes its files. Settings are in the engine's configuration
    syntax and units (e.g. ``{"shared_buffers": "256MB"}``). Its directory holds an owner record
    (``connectors.local.write_owner``), so that ``reap_orphans`` stops and removes it once its owner is killed.
    It admits only the advisor: its login ``user`` must give ``password`` (random per server, kept in a 0600 file
    of its directory: ``connectors.local.write_secret``), over TCP and over its socket alike."""

    engine: str
    name: str
    host: str
    port: int
    user: str
    password: str

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

    # --- for benches and fault injection ------------------------------------------------------------------------

    default_db: str  # the database every new server has (PostgreSQL: "postgres"): ``dsn()``'s and ``connector()``'s

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """The DSN of database ``dbname`` over TCP as ``user`` (None: the sandbox's own), with ``password`` when
        given, in the engine's DSN form (values quoted as that form needs): what a person pastes to reach it."""

    def server_pid(self) -> int | None:
        """The server's leader process (PostgreSQL's postmaster, mariadbd) while it runs, else None: what a crash
        is injected into (``connectors.local.kill_server`` crashes a server found by its directory)."""

    def interrupt(self) -> int | None:
        """Ask the server to shut down now, as an operator's fast stop does (sessions ended), without waiting for
        it to be gone; the process told (None when none ran)."""


@dataclass
class Shadow:
    """A sandbox holding a copy of a target's database ``dbname``, with a connector that can restart it.
    ``restore_warnings``: constraints a sampled copy broke (e.g. foreign keys to rows left out). Closing the
    shadow stops its server."""

    sandbox: Sandbox
    connector: Connector
    dbname: str
    restore_warnings: int = 0
    method: str = "full copy"  # how it was made: "thin clone" (of a warm replica), "full copy" or "sampled copy"
    note: str = ""  # what the method implies (a thin clone: the replica's lag when it was cut)

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

