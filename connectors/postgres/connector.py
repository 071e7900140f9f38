"""PostgresConnector: ``connectors.base.Connector`` over psycopg 3. One short-lived connection per operation."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import psycopg
from psycopg import sql

from advisor.core.domain import Hardware, IndexChange, KnobSpec, Snapshot, StatementStat
from advisor.core.errors import AdvisorError, BadStatement, TargetUnreachable
from advisor.core.indexfacts import IndexFacts
from advisor.core.knobprofile import KnobProfile
from advisor.core.plans import Plan
from connectors.postgres import applying, owning, samples
from connectors.postgres import changes as change_sql
from connectors.postgres import indexes as index_catalog
from connectors.postgres.knobs import PROFILE
from connectors.postgres.binding import PostgresBindingSource
from connectors.postgres.catalog import read_catalog
from connectors.postgres.plans import to_plan
from connectors.changing import Changing
from connectors.loader import ModuleLoader
from connectors.postgres import loading
from connectors.postgres.roles import PostgresBench
from connectors.postgres.session import PostgresSession
from connectors.postgres.hardware import read_hardware
from connectors.postgres.connection import TAG, connect, execute_one, parse_dsn, redact, target_name
from connectors.postgres.snapshot import (column_types, foreign_keys, has_extension, read_snapshot, read_statements,
                                          table_columns, unique_keys)
from connectors.postgres.whatif import HypoPG, explain_cost, explain_plan


IDENTITY_SQL = TAG + """
SELECT current_database(), d.oid::bigint,
       CASE WHEN has_function_privilege('pg_control_system()', 'execute')
            THEN (SELECT system_identifier::text FROM pg_control_system()) END
FROM pg_database d WHERE d.datname = current_database()"""


class PostgresConnector(Changing):
    """A live PostgreSQL database. ``restart`` is how to restart its server, when the caller can (sandboxes
    can; for a remote production server a restart is left to the DBA and reported as pending)."""

    # how it changes a database (``connectors.changing.Changing``: plan_changes, apply, revert, ownership,
    # lock_waits): its engine's two modules
    applying = applying
    owning = owning

    engine = "postgres"
    dialect = "postgres"

    def __init__(self, dsn: str, restart: Callable[[], None] | None = None):
        parse_dsn(dsn)  # fail early on a malformed DSN
        self.dsn = dsn
        self._restart = restart

    @property
    def display_name(self) -> str:
        return redact(self.dsn)

    @property
    def target_name(self) -> str:
        return target_name(self.dsn)

    def quote(self, name: str) -> str:
        return sql.Identifier(name).as_string(None)

    def session(self, timeout_ms: int | None = None) -> PostgresSession:
        return PostgresSession(self.dsn, timeout_ms)

    def plan(self, statement: str) -> Plan:
        return self._guarded(lambda conn: to_plan(explain_plan(conn, statement)))

    def connect(self, autocommit: bool = True, answer_s: float | None = None) -> psycopg.Connection:
        """A connection of the advisor's own; ``answer_s``: how long a wait for the server may last
        (``connectors.deadlines``; default its ``answer_s()``)."""
        return connect(self.dsn, autocommit=autocommit, answer_s=answer_s)

    def execute_one(self, cursor: psycopg.Cursor, query) -> psycopg.Cursor:
        return execute_one(cursor, query)

    def check_sql(self, statement: str) -> None:
        """``PREPARE`` of ``statement`` in a read-only transaction that is rolled back: PostgreSQL's own parser
        and parse analysis (unknown tables, columns, functions) without running it; a ``$1`` parameter is
        allowed (its type inferred). ``BadStatement`` with the server's message and the position in
        ``statement``."""
        prefix = TAG + "PREPARE db_advisor_check AS "

        def check(conn: psycopg.Connection) -> None:
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute("SET TRANSACTION READ ONLY")
                    conn.execute("SET LOCAL statement_timeout = '10s'")
                    conn.execute("SET LOCAL lock_timeout = '2s'")  # parse analysis takes a table's lightest lock
                    # exactly one command (the extended protocol): "SELECT 1; COMMIT; DROP ..." is refused whole
                    execute_one(conn.cursor(), prefix + statement)
                    # a prepared statement outlives a rollback: a pooled session (pgbouncer) must not keep it
                    conn.execute("DEALLOCATE db_advisor_check")
            except (psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable) as e:
                raise AdvisorError(f"the target did not finish parsing the statement ({type(e).__name__}: "
                                   "a lock held on a table it reads?); try again") from None
            except psycopg.OperationalError:
                raise
            except psycopg.errors.IndeterminateDatatype:
                return  # it parses, and only a parameter's type is open ("$1 IS NULL"): the run says what it needs
            except psycopg.Error as e:
                diag = e.diag
                reason = diag.message_primary or str(e).strip().splitlines()[0]
                at = int(diag.statement_position) - len(prefix) if diag.statement_position else None
                at = at if at is not None and 1 <= at <= len(statement) + 1 else None
                raise BadStatement(reason + (f" (position {at})" if at else ""), reason=reason,
                                   position=at) from None

        self._guarded(check)

    def has_extension(self, name: str) -> bool:
        return self._guarded(lambda conn: has_extension(conn, name))

    def identity(self) -> dict:
        def read(conn: psycopg.Connection) -> dict:
            name, oid, system = conn.execute(IDENTITY_SQL).fetchone()
            return {"engine": self.engine, "system_identifier": system, "database": name, "database_oid": int(oid)}

        return self._guarded(read)

    def _guarded(self, fn):
        try:
            with self.connect() as conn:
                return fn(conn)
        except psycopg.OperationalError as e:
            raise TargetUnreachable(f"lost the connection to {self.display_name}: {str(e).strip().splitlines()[0]}") from None
        except psycopg.Error as e:  # one the operation did not expect: one line, never a traceback
            why = (getattr(e, "diag", None) and e.diag.message_primary) or str(e).strip().splitlines()[0]
            hint = " (is the extension's schema in the search_path the DSN's options set?)" \
                if isinstance(e, (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedFunction)) else ""
            raise AdvisorError(f"{self.target_name}: {why}{hint}") from None

    # --- observing ---------------------------------------------------------------------------------------------

    def observe(self) -> Snapshot:
        return self._guarded(read_snapshot)

    def statement_stats(self) -> tuple[StatementStat, ...]:
        return self._guarded(read_statements)  # pg_stat_statements only: no relation is locked

    def knob_catalog(self) -> dict[str, KnobSpec]:
        return self._guarded(read_catalog)

    def hardware(self) -> Hardware | None:
        """The server's memory and cores, read through SQL (``connectors.postgres.hardware``); None when the
        server does not let this role read them."""
        return self._guarded(read_hardware)

    def table_sample(self, schema: str, table: str, rows: int, seed: int) -> dict | None:
        """About ``rows`` random rows of a table, for index sizing (``connectors.postgres.samples``)."""
        with self.connect() as conn:
            return samples.table_sample(conn, schema, table, rows, seed)

    def sample_matching(self, schema: str, table: str, percent: float | None, seed: int, where: str) -> set[str]:
        """The sampled rows ``where`` keeps (``connectors.postgres.samples``)."""
        with self.connect() as conn:
            return samples.sample_matching(conn, schema, table, percent, seed, where)

    def column_keys(self, table: str, column: str, limit: int) -> list[int]:
        """Distinct integer values of ``table.column``, ascending, at most ``limit`` (identifiers quoted)."""
        query = sql.SQL("SELECT DISTINCT {c}::bigint FROM {t} WHERE {c} IS NOT NULL ORDER BY 1 LIMIT {n}").format(
            c=sql.Identifier(column), t=sql.Identifier(*table.split(".", 1)), n=sql.Literal(int(limit)))
        return self._guarded(lambda conn: [int(r[0]) for r in conn.execute(sql.SQL(TAG) + query).fetchall()])

    def explain_cost(self, statement: str, hypothetical: Sequence[IndexChange] = ()) -> float:
        return self._guarded(lambda conn: explain_cost(conn, statement, hypothetical))

    def reset_statement_stats(self) -> None:
        def reset(conn: psycopg.Connection) -> None:
            conn.execute(TAG + "SELECT pg_stat_statements_reset()")
            if has_extension(conn, "pg_qualstats"):  # its examples belong to the statements just forgotten
                try:
                    with conn.transaction():
                        conn.execute(TAG + "SELECT pg_qualstats_reset()")
                except psycopg.errors.InsufficientPrivilege:
                    pass  # a role that may reset pg_stat_statements but not pg_qualstats: its examples stay
        self._guarded(reset)

    def table_columns(self) -> dict[tuple[str, str], tuple[str, ...]]:
        return self._guarded(table_columns)

    def column_types(self) -> dict[tuple[str, str], tuple[tuple[str, str, bool], ...]]:
        return self._guarded(column_types)

    def unique_keys(self) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
        return self._guarded(unique_keys)

    def foreign_keys(self) -> tuple[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], ...]:
        return self._guarded(foreign_keys)

    # --- indexes -----------------------------------------------------------------------------------------------

    def timings_without(self, statement: str, hidden: Sequence[IndexChange], repeats: int = 3,
                        timeout_ms: int = 60_000, warmup: int = 1) -> list[float]:
        """Milliseconds of ``repeats`` executions of ``statement`` (``warmup`` unmeasured first) with the built indexes
        ``hidden`` dropped inside a transaction that is rolled back: the planner does without them and nothing
        is rebuilt. An execution over ``timeout_ms`` counts as ``timeout_ms``, and so do the runs left (they are
        not made: the plan is the same). For a shadow: the drops lock their
        tables until the rollback."""
        def run(conn: psycopg.Connection) -> list[float]:
            out: list[float] = []
            with conn.transaction(force_rollback=True):
                for ix in hidden:
                    conn.execute(sql.SQL("DROP INDEX {}.{}").format(sql.Identifier(ix.schema),
                                                                    sql.Identifier(change_sql.index_name(ix))))
                conn.execute(sql.SQL("SET LOCAL statement_timeout = {}").format(sql.Literal(max(1, int(timeout_ms)))))
                for k in range(repeats + max(0, warmup)):
                    started = time.perf_counter()
                    try:
                        with conn.transaction():  # a savepoint: a timeout does not end the transaction
                            conn.execute(sql.SQL(statement)).fetchall()  # type: ignore[arg-type]
                        ms = (time.perf_counter() - started) * 1000
                    except psycopg.errors.QueryCanceled:  # the next runs would be cut too: not run
                        return out + [float(timeout_ms)] * (repeats - len(out))
                    if k >= warmup:
                        out.append(ms)
            return out

        return self._guarded(run)

    def whatif(self) -> HypoPG:
        conn = self.connect()
        try:
            return HypoPG(conn, owns_connection=True)
        except BaseException:
            conn.close()
            raise

    def index_name(self, change: IndexChange) -> str:
        return change_sql.index_name(change)

    def index_sizes(self, indexes: Sequence[IndexChange]) -> dict[IndexChange, int | None]:
        def read(conn: psycopg.Connection) -> dict[IndexChange, int | None]:
            out: dict[IndexChange, int | None] = {}
            for ix in indexes:
                row = conn.execute(TAG + "SELECT pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                                   "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
                                   (ix.schema, change_sql.index_name(ix))).fetchone()
                out[ix] = int(row[0]) if row and row[0] is not None else None
            return out

        return self._guarded(read)

    # --- binding -----------------------------------------------------------------------------------------------

    def binding_source(self) -> PostgresBindingSource:
        """pg_qualstats' examples and constants, PREPARE's parameter types, pg_stats
        (``connectors.postgres.binding``)."""
        return PostgresBindingSource(self.dsn)

    # --- knobs -------------------------------------------------------------------------------------------------

    def knob_profile(self) -> KnobProfile:
        return PROFILE

    # --- index facts -------------------------------------------------------------------------------------------

    def index_facts(self) -> IndexFacts:
        return self._guarded(index_catalog.index_facts)

    def constraint_indexes(self) -> set[str]:
        return self._guarded(index_catalog.constraint_indexes)

    def stats_since(self) -> str | None:
        return self._guarded(index_catalog.stats_since)

    def default_schema(self) -> str:
        return self._guarded(index_catalog.default_schema)

    def plans(self, statements: Sequence[str]) -> list[Plan]:
        return self._guarded(lambda conn: [to_plan(explain_plan(conn, s)) for s in statements])

    def column_data_types(self) -> dict[tuple[str, str, str], str]:
        return self._guarded(index_catalog.column_data_types)

    # --- replicas ----------------------------------------------------------------------------------------------

    def replica_requirements(self) -> list[tuple[str, str]]:
        """What this server lacks to feed a warm replica (``connectors.postgres.replica_check``)."""
        from connectors.postgres.replica_check import requirements

        return requirements(self.dsn)

    # --- the other roles ----------------------------------------------------------------------------------------

    def loader(self) -> ModuleLoader:
        return ModuleLoader(self.dsn, self._guarded, loading)

    def bench(self) -> PostgresBench:
        return PostgresBench(self.dsn)
