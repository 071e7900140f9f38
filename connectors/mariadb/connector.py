"""MariaDBConnector: ``connectors.base.Connector`` for MariaDB 10.11 over PyMySQL (engine and dialect "mariadb",
read by sqlglot as its "mysql": ``connectors.dialects``). One short-lived connection per operation; the advisor's
own connections switch off their performance_schema instrumentation where the login may (so that observe() never
sees them), and every statement they send starts with ``TAG`` as on PostgreSQL.

What-if indexes (``whatif``, ``explain_cost`` with hypothetical indexes, ``timings_without``) build and toggle
IGNORED indexes, so they run on a sandbox (a shadow) only (``connectors.mariadb.whatif``). ``table_sample`` and
``sample_matching`` raise AdvisorError: MariaDB's what-if sizes are the built indexes' real sizes, so the index
sizing path needs no row sample (it falls back to them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pymysql

from advisor.core.domain import Hardware, IndexChange, KnobSpec, Snapshot, StatementStat
from advisor.core.errors import AdvisorError, BadStatement, ProductionLocked, TargetUnreachable
from advisor.core.indexfacts import IndexFacts
from advisor.core.knobprofile import KnobProfile
from advisor.core.plans import Plan
from connectors.mariadb import applying, owning
from connectors.mariadb import changes as change_sql
from connectors.mariadb import indexes as index_catalog
from connectors.mariadb import knobs
from connectors.mariadb import snapshot
from connectors.mariadb.connection import (TAG, connect, error_code, error_text, parse_dsn, quote, redact,
                                           target_name, to_question_marks)
from connectors.mariadb.plans import to_plan
from connectors.changing import Changing
from connectors.loader import ModuleLoader
from connectors.mariadb import loading
from connectors.mariadb.roles import MariaDBBench
from connectors.mariadb.binding import MariaDBBindingSource
from connectors.mariadb.session import GONE, MariaDBSession
from connectors.mariadb.whatif import IgnoredIndexes, explained

LOCK_WAIT_TIMEOUT = applying.LOCK_WAIT_TIMEOUT

UNINSTRUMENT = TAG + "UPDATE performance_schema.threads SET INSTRUMENTED = 'NO' WHERE PROCESSLIST_ID = CONNECTION_ID()"


def _not_yet(what: str) -> AdvisorError:
    return AdvisorError(f"{what} is not supported on MariaDB yet")


class MariaDBConnector(Changing):
    """A live MariaDB database. ``restart`` restarts its server and ``persist`` writes settings into its option
    file, when the caller can (a sandbox can); without them a read-only variable's change is reported pending."""

    # how it changes a database (``connectors.changing.Changing``: plan_changes, apply, revert, ownership,
    # lock_waits): its engine's two modules
    applying = applying
    owning = owning

    engine = "mariadb"
    dialect = "mariadb"

    def __init__(self, dsn: str, restart: Callable[[], None] | None = None,
                 persist: Callable[[dict[str, str]], None] | None = None):
        self._params = parse_dsn(dsn)  # fail early on a malformed DSN
        self.dsn = dsn
        self._restart = restart
        self._persist = persist

    @property
    def display_name(self) -> str:
        return redact(self.dsn)

    @property
    def target_name(self) -> str:
        return target_name(self.dsn)

    # --- connections -------------------------------------------------------------------------------------------

    def quote(self, name: str) -> str:
        return quote(name)

    def session(self, timeout_ms: int | None = None) -> MariaDBSession:
        return MariaDBSession(self.dsn, timeout_ms)

    def connect(self, autocommit: bool = True) -> pymysql.connections.Connection:
        return connect(self.dsn, autocommit=autocommit)

    def execute_one(self, cursor: Any, query: Any) -> Any:
        cursor.execute(str(query))  # multi-statements are not enabled: a second statement is a syntax error
        return cursor

    def _guarded(self, fn: Callable[[pymysql.connections.Connection], Any], answer_s: float | None = None) -> Any:
        """``fn`` on a new connection of the advisor's own; driver errors as one line, never a traceback.
        ``answer_s``: how long a statement may go without an answer (``connectors.deadlines``: index builds and
        other long work pass ``long_s()``)."""
        password = self._params.get("password")
        try:
            with connect(self.dsn, answer_s=answer_s) as conn:
                try:
                    with conn.cursor() as cur:
                        cur.execute(UNINSTRUMENT)
                except pymysql.Error:
                    pass  # a login without UPDATE on performance_schema: its statements carry TAG all the same
                return fn(conn)
        except pymysql.Error as e:
            if error_code(e) in GONE:
                raise TargetUnreachable(f"lost the connection to {self.display_name}: "
                                        f"{error_text(e, password)}") from None
            if error_code(e) == LOCK_WAIT_TIMEOUT:
                raise ProductionLocked(f"gave up waiting for a lock that another session holds: "
                                       f"{error_text(e, password)}; the change was not made") from None
            raise AdvisorError(f"{self.target_name}: {error_text(e, password)}") from None

    def check_sql(self, statement: str) -> None:
        """``PREPARE`` of ``statement`` (its ``$n`` as ``?``), then ``DEALLOCATE``: MariaDB's parser and name
        resolution without running it. ``BadStatement`` with the server's message and, for a syntax error, the
        position in ``statement`` where it stopped."""
        def check(conn: pymysql.connections.Connection) -> None:
            with conn.cursor() as cur:
                cur.execute(TAG + "SET @db_advisor_check = %s", (to_question_marks(statement),))
                try:
                    cur.execute(TAG + "PREPARE db_advisor_check FROM @db_advisor_check")
                except pymysql.Error as e:
                    if error_code(e) in GONE:
                        raise
                    reason = error_text(e, self._params.get("password"))
                    at = _near(reason, statement)
                    raise BadStatement(reason + (f" (position {at})" if at else ""), reason=reason,
                                       position=at) from None
                cur.execute(TAG + "DEALLOCATE PREPARE db_advisor_check")

        self._guarded(check)

    def has_extension(self, name: str) -> bool:
        """Whether a server plugin is active (``performance_schema``: whether it is on)."""
        def read(conn: pymysql.connections.Connection) -> bool:
            with conn.cursor() as cur:
                if name.lower() == "performance_schema":
                    cur.execute(TAG + "SELECT @@performance_schema")
                    return bool(cur.fetchone()[0])
                cur.execute(TAG + "SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME = %s "
                            "AND PLUGIN_STATUS = 'ACTIVE'", (name,))
                return cur.fetchone() is not None

        return self._guarded(read)

    def identity(self) -> dict:
        """MariaDB has no server UUID: the server is known by its server_id, host name, port and data directory
        together; a database has no internal id (``database_oid`` None)."""
        def read(conn: pymysql.connections.Connection) -> dict:
            with conn.cursor() as cur:
                cur.execute(TAG + "SELECT DATABASE(), @@server_id, @@hostname, @@port, @@datadir")
                database, server_id, host, port, datadir = cur.fetchone()
            return {"engine": self.engine, "system_identifier": f"{server_id}:{host}:{port}:{datadir}",
                    "database": database, "database_oid": None}

        return self._guarded(read)

    # --- observing ---------------------------------------------------------------------------------------------

    def observe(self) -> Snapshot:
        return self._guarded(snapshot.read_snapshot)

    def statement_stats(self) -> tuple[StatementStat, ...]:
        return self._guarded(snapshot.read_statements)  # performance_schema's digests only: no table is opened

    def knob_catalog(self) -> dict[str, KnobSpec]:
        return self._guarded(snapshot.read_catalog)

    def hardware(self) -> Hardware | None:
        return None  # MariaDB tells no client the machine's memory or cores: the user gives them

    def table_columns(self) -> dict[tuple[str, str], tuple[str, ...]]:
        return self._guarded(snapshot.table_columns)

    def column_types(self) -> dict[tuple[str, str], tuple[tuple[str, str, bool], ...]]:
        return self._guarded(snapshot.column_types)

    def unique_keys(self) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
        return self._guarded(snapshot.unique_keys)

    def foreign_keys(self) -> tuple[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], ...]:
        return self._guarded(snapshot.foreign_keys)

    def reset_statement_stats(self) -> None:
        """Empty the digest summary and the statement histories (the sampled parameters go with them)."""
        def reset(conn: pymysql.connections.Connection) -> None:
            with conn.cursor() as cur:
                for table in ("events_statements_summary_by_digest", "events_statements_history_long",
                              "events_statements_history"):
                    cur.execute(TAG + f"TRUNCATE TABLE performance_schema.{table}")

        self._guarded(reset)

    def table_sample(self, schema: str, table: str, rows: int, seed: int) -> dict | None:
        raise _not_yet("sampling rows for index sizing")

    def sample_matching(self, schema: str, table: str, percent: float | None, seed: int, where: str) -> set[str]:
        raise _not_yet("sampling rows for partial indexes")

    def column_keys(self, table: str, column: str, limit: int) -> list[int]:
        """Distinct integer values of ``table.column``, ascending, at most ``limit`` (identifiers quoted)."""
        target = ".".join(quote(part) for part in table.split(".", 1))
        query = (f"{TAG}SELECT DISTINCT CAST({quote(column)} AS SIGNED) FROM {target} "
                 f"WHERE {quote(column)} IS NOT NULL ORDER BY 1 LIMIT {int(limit)}")

        def read(conn: pymysql.connections.Connection) -> list[int]:
            with conn.cursor() as cur:
                cur.execute(query)
                return [int(r[0]) for r in cur.fetchall()]
        return self._guarded(read)

    # --- planning ----------------------------------------------------------------------------------------------

    def explain_plan(self, statement: str) -> dict:
        return self._guarded(lambda conn: _explain(conn, statement)[0])

    def plan(self, statement: str) -> Plan:
        return self._guarded(lambda conn: to_plan(*_explain(conn, statement)))

    def used_indexes(self, statements: Sequence[str]) -> list[set[str]]:
        return self._guarded(lambda conn: [set(to_plan(*_explain(conn, s)).indexes) for s in statements])

    def index_name(self, change: IndexChange) -> str:
        return change_sql.index_name(change)

    def index_sizes(self, indexes: Sequence[IndexChange]) -> dict[IndexChange, int | None]:
        """Bytes of each built index: mysql.innodb_index_stats 'size' pages times the page size (16 KiB), after
        ANALYZE TABLE of their tables (small indexes come out in allocation steps)."""
        def read(conn: pymysql.connections.Connection) -> dict[IndexChange, int | None]:
            with conn.cursor() as cur:
                for schema, table in sorted({(ix.schema, ix.table) for ix in indexes}):
                    cur.execute(TAG + f"ANALYZE TABLE {quote(schema)}.{quote(table)}")
                    cur.fetchall()
                out: dict[IndexChange, int | None] = {}
                for ix in indexes:
                    cur.execute(TAG + "SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE "
                                "database_name = %s AND table_name = %s AND index_name = %s AND stat_name = 'size'",
                                (ix.schema, ix.table, change_sql.index_name(ix)))
                    row = cur.fetchone()
                    out[ix] = int(row[0]) if row and row[0] is not None else None
                return out

        return self._guarded(read)

    # --- knobs -------------------------------------------------------------------------------------------------

    def knob_profile(self) -> KnobProfile:
        return knobs.PROFILE

    # --- index facts -------------------------------------------------------------------------------------------

    @property
    def on_sandbox(self) -> bool:
        """Whether this connector is a sandbox's (only ``MariaDBSandbox.connector`` gives it an option file to
        persist into): what-if builds indexes, so it runs there and nowhere else."""
        return self._persist is not None

    def _require_sandbox(self, what: str) -> None:
        if not self.on_sandbox:
            raise AdvisorError(f"{what} builds indexes on MariaDB (it has no hypothetical ones), so it runs on a "
                               f"shadow only, never on {self.target_name}: ask the shadow's connector")

    def whatif(self) -> IgnoredIndexes:
        """Candidates built once as IGNORED indexes and toggled per configuration (``connectors.mariadb.whatif``);
        a shadow's only."""
        self._require_sandbox("what-if costing")
        try:
            return IgnoredIndexes(self.dsn, self._params.get("password"))
        except pymysql.Error as e:
            raise TargetUnreachable(f"{self.target_name}: {error_text(e, self._params.get('password'))}") from None

    def explain_cost(self, statement: str, hypothetical: Sequence[IndexChange] = ()) -> float:
        """The optimizer's cost; with ``hypothetical`` indexes, through ``whatif`` (built, costed, dropped)."""
        if not hypothetical:
            return self.plan(statement).cost
        with self.whatif() as whatif:
            return whatif.plan(statement, hypothetical, frozenset((i.schema, i.table) for i in hypothetical)).total

    def timings_without(self, statement: str, hidden: Sequence[IndexChange], repeats: int = 3,
                        timeout_ms: int = 60_000, warmup: int = 1) -> list[float]:
        """Times with the built indexes ``hidden`` IGNORED, made visible again after (a shadow's only)."""
        self._require_sandbox("timing a statement without some of its indexes")
        return self._guarded(lambda conn: index_catalog.timings_without(conn, statement, hidden, repeats,
                                                                          timeout_ms, warmup))

    def index_facts(self) -> IndexFacts:
        return self._guarded(index_catalog.index_facts)

    def constraint_indexes(self) -> set[str]:
        return self._guarded(index_catalog.constraint_indexes)

    def stats_since(self) -> str | None:
        return self._guarded(index_catalog.stats_since)

    def default_schema(self) -> str:
        return self._guarded(index_catalog.default_schema)

    def plans(self, statements: Sequence[str]) -> list[Plan]:
        return self._guarded(lambda conn: [to_plan(*_explain(conn, s)) for s in statements])

    def column_data_types(self) -> dict[tuple[str, str, str], str]:
        return self._guarded(index_catalog.column_data_types)

    # --- binding -----------------------------------------------------------------------------------------------

    def binding_source(self) -> MariaDBBindingSource:
        """The statement history's examples, parameter types read from the columns they are compared with,
        mysql.column_stats histograms or sampled values (``connectors.mariadb.binding``)."""
        return MariaDBBindingSource(self.dsn)

    # --- replicas ----------------------------------------------------------------------------------------------

    def replica_requirements(self) -> list[tuple[str, str]]:
        """What this server lacks to feed a warm replica (``connectors.mariadb.replica_check``)."""
        from connectors.mariadb.replica_check import requirements

        return requirements(self.dsn)

    # --- the other roles ----------------------------------------------------------------------------------------

    def loader(self) -> ModuleLoader:
        return ModuleLoader(self.dsn, self._guarded, loading)

    def bench(self) -> MariaDBBench:
        return MariaDBBench(self.dsn, self._guarded)


def _explain(conn: pymysql.connections.Connection, statement: str) -> tuple[dict, float, dict[str, str]]:
    """``whatif.explained`` on a cursor of ``conn``."""
    with conn.cursor() as cur:
        return explained(cur, statement)


def _near(reason: str, statement: str) -> int | None:
    """Where in ``statement`` a syntax error's ``near '...'`` fragment starts (1-based), when it is there.

    >>> _near("You have an error in your SQL syntax; ... near 't t' at line 1", "SELECT a FROM t t t")
    17
    """
    start = reason.find("near '")
    if start < 0:
        return None
    fragment = reason[start + 6:reason.rfind("' at line")] if "' at line" in reason else ""
    if fragment and statement.rstrip().endswith(fragment):  # the server quotes the rest of the statement
        return len(statement.rstrip()) - len(fragment) + 1
    at = statement.find(fragment[:40]) if fragment else -1
    return at + 1 if at >= 0 else None
