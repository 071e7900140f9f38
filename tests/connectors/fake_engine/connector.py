"""``FakeConnector``: the core ``connectors.base.Connector`` role over one SQLite database file (schema ``main``).
SQLite keeps no statement statistics and has no server settings to change: ``statement_stats`` is empty and a
``KnobChange`` is refused in one line; indexes are made, sized, hidden and dropped as on the other engines (SQLite's
DDL is transactional, so ``apply`` undoes a half-done set by rolling back)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from advisor.core.domain import (Applied, Change, DropIndexChange, Hardware, IndexChange, IndexInfo, KnobSpec,
                                 Snapshot, StatementStat, TableInfo)
from advisor.core.errors import AdvisorError, BadStatement, StatementFailed
from advisor.core.indexfacts import IndexFacts
from advisor.core.knobprofile import KnobProfile
from advisor.core.plans import Plan
from tests.connectors.fake_engine import knobs
from tests.connectors.fake_engine.connection import connect, parse_dsn, redact, target_name
from tests.connectors.fake_engine.plans import create_index_sql, index_name, quote, to_plan
from tests.connectors.fake_engine.session import FakeBindingSource, FakeSession, FakeWhatIf

SCHEMA = "main"
TYPES = {"int": "integer", "integer": "integer", "real": "real", "text": "text", "varchar": "character varying"}
FACTS = IndexFacts(page_bytes=4096, deduplication=False, include=False, partial=True, max_key_columns=2000,
                   name_limit=1000, cost_unit="rows read", entry_cost=1.0, no_dedup_types=())


class FakeConnector:
    engine = "fakesql"
    dialect = "sqlite"

    def __init__(self, dsn: str, restart: Callable[[], None] | None = None):
        parse_dsn(dsn)
        self.dsn = dsn

    @property
    def display_name(self) -> str:
        return redact(self.dsn)

    @property
    def target_name(self) -> str:
        return target_name(self.dsn)

    def _read(self, fn):
        with connect(self.dsn) as conn:
            try:
                return fn(conn)
            except sqlite3.Error as e:
                raise AdvisorError(f"{self.target_name}: {e}") from None

    # --- connections ---------------------------------------------------------------------------------------------

    def quote(self, name: str) -> str:
        return quote(name)

    def session(self, timeout_ms: int | None = None) -> FakeSession:
        return FakeSession(self.dsn, timeout_ms)

    def connect(self, autocommit: bool = True):
        return connect(self.dsn)

    def execute_one(self, cursor, query):
        return cursor.execute(str(query))

    def check_sql(self, statement: str) -> None:
        """SQLite's compiler (``EXPLAIN``) reads the statement and runs nothing."""
        with connect(self.dsn) as conn:
            try:
                conn.execute("EXPLAIN " + statement)
            except (sqlite3.Error, sqlite3.Warning) as e:
                raise BadStatement(str(e), reason=str(e), position=None) from None

    def has_extension(self, name: str) -> bool:
        return False

    def identity(self) -> dict:
        st = os.stat(parse_dsn(self.dsn)["path"])  # a copy of the file is another database
        return {"engine": self.engine, "system_identifier": str(st.st_dev), "database": Path(
            parse_dsn(self.dsn)["path"]).stem, "database_oid": st.st_ino}

    # --- observing -----------------------------------------------------------------------------------------------

    def observe(self) -> Snapshot:
        def read(conn: sqlite3.Connection) -> Snapshot:
            tables = tuple(TableInfo(SCHEMA, t, float(conn.execute(f"SELECT count(*) FROM {quote(t)}").fetchone()[0]),
                                     _bytes(conn, t)) for t in _tables(conn))
            return Snapshot(time.time(), sqlite3.sqlite_version, Path(parse_dsn(self.dsn)["path"]).stem, (), {},
                            tuple(knobs.knob_catalog(conn).values()), tables, (), _indexes(conn),
                            server=f"SQLite {sqlite3.sqlite_version}")
        return self._read(read)

    def statement_stats(self) -> tuple[StatementStat, ...]:
        return ()  # SQLite keeps no statement statistics

    def knob_catalog(self) -> dict[str, KnobSpec]:
        return self._read(knobs.knob_catalog)

    def hardware(self) -> Hardware | None:
        return None

    def table_columns(self) -> dict[tuple[str, str], tuple[str, ...]]:
        return {k: tuple(c for c, _t, _n in v) for k, v in self.column_types().items()}

    def column_types(self) -> dict[tuple[str, str], tuple[tuple[str, str, bool], ...]]:
        return self._read(lambda conn: {(SCHEMA, t): tuple((r[1], r[2], bool(r[3] or r[5])) for r in conn.execute(
            f"PRAGMA table_info({quote(t)})")) for t in _tables(conn)})

    def unique_keys(self) -> dict[tuple[str, str], tuple[tuple[str, ...], ...]]:
        def read(conn: sqlite3.Connection) -> dict:
            out = {}
            for t in _tables(conn):
                keys = [tuple(r[1] for r in conn.execute(f"PRAGMA table_info({quote(t)})") if r[5])]
                keys += [tuple(r[2] for r in conn.execute(f"PRAGMA index_info({quote(ix[1])})"))
                         for ix in conn.execute(f"PRAGMA index_list({quote(t)})") if ix[2] and not ix[4]]
                out[(SCHEMA, t)] = tuple(dict.fromkeys(k for k in keys if k))
            return out
        return self._read(read)

    def foreign_keys(self) -> tuple[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], ...]:
        return self._read(lambda conn: tuple((SCHEMA, t, (r[3],), r[2], (r[4],)) for t in _tables(conn)
                                             for r in conn.execute(f"PRAGMA foreign_key_list({quote(t)})")))

    def reset_statement_stats(self) -> None:
        return None

    def table_sample(self, schema: str, table: str, rows: int, seed: int) -> dict | None:
        raise AdvisorError("sampling rows for index sizing is not supported on fakesql")

    def sample_matching(self, schema: str, table: str, percent: float | None, seed: int, where: str) -> set[str]:
        raise AdvisorError("sampling rows for partial indexes is not supported on fakesql")

    def column_keys(self, table: str, column: str, limit: int) -> list[int]:
        return self._read(lambda conn: [int(r[0]) for r in conn.execute(
            f"SELECT DISTINCT CAST({quote(column)} AS INTEGER) FROM {quote(table.split('.')[-1])} "
            f"WHERE {quote(column)} IS NOT NULL ORDER BY 1 LIMIT {int(limit)}")])

    # --- planning ------------------------------------------------------------------------------------------------

    def plan(self, sql: str) -> Plan:
        return self.plans([sql])[0]

    def plans(self, statements: Sequence[str]) -> list[Plan]:
        with connect(self.dsn) as conn:
            try:
                return [to_plan(conn, s) for s in statements]
            except sqlite3.Error as e:
                raise BadStatement(str(e), reason=str(e), position=None) from None

    def explain_cost(self, sql: str, hypothetical: Sequence[IndexChange] = ()) -> float:
        with self.whatif() as w:
            return w.plan(sql, hypothetical, frozenset()).total

    def timings_without(self, statement: str, hidden: Sequence[IndexChange], repeats: int = 3,
                        timeout_ms: int = 60_000, warmup: int = 1) -> list[float]:
        with connect(self.dsn) as conn:
            conn.execute("BEGIN")
            try:
                for ix in hidden:
                    conn.execute(f"DROP INDEX {quote(index_name(ix))}")
                out = []
                for k in range(repeats + max(0, warmup)):
                    started = time.perf_counter()
                    conn.execute(statement).fetchall()
                    if k >= warmup:
                        out.append((time.perf_counter() - started) * 1000)
                return out
            finally:
                conn.execute("ROLLBACK")

    def whatif(self) -> FakeWhatIf:
        return FakeWhatIf(self.dsn)

    def index_name(self, change: IndexChange) -> str:
        return index_name(change)

    def index_sizes(self, indexes: Sequence[IndexChange]) -> dict[IndexChange, int | None]:
        def read(conn: sqlite3.Connection) -> dict:
            sizes = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
            return {ix: sizes.get(index_name(ix)) for ix in indexes}
        return self._read(read)

    # --- changing ------------------------------------------------------------------------------------------------

    def plan_changes(self, changes: Sequence[Change], catalog: dict[str, KnobSpec] | None = None) -> Applied:
        apply_sql, revert_sql = [], []
        for ch in changes:
            if isinstance(ch, IndexChange):
                apply_sql.append(create_index_sql(ch))
                revert_sql.insert(0, f"DROP INDEX IF EXISTS {quote(index_name(ch))}")
            elif isinstance(ch, DropIndexChange):
                apply_sql.append(f"DROP INDEX {quote(ch.name)}")
                revert_sql.insert(0, ch.definition)
            else:
                raise AdvisorError(f"fakesql cannot apply a {ch.kind} change: it has no server settings")
        return Applied(tuple(changes), tuple(apply_sql), tuple(revert_sql), needs_restart=False)

    def apply(self, changes: Sequence[Change], lock_timeout_s: float | None = None) -> Applied:
        applied = self.plan_changes(changes)
        self._run_all(applied.apply_sql)
        return applied

    def revert(self, applied: Applied, lock_timeout_s: float | None = None) -> None:
        self._run_all(applied.revert_sql)

    def _run_all(self, statements: Sequence[str]) -> None:
        with connect(self.dsn) as conn:
            conn.execute("BEGIN")
            try:
                for sql in statements:
                    conn.execute(sql)
            except sqlite3.Error as e:
                conn.execute("ROLLBACK")
                raise StatementFailed(str(e)) from None
            conn.execute("COMMIT")

    def ownership(self, changes: Sequence[Change]) -> list[tuple[str, str | None]]:
        def read(conn: sqlite3.Connection) -> list:
            out = []
            for ch in changes:
                name = index_name(ch) if isinstance(ch, IndexChange) else ch.name
                row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?",
                                   (name,)).fetchone()
                out.append((f"index {SCHEMA}.{name}", row[0] if row else None))
            return out
        return self._read(read)

    def lock_waits(self, samples: int = 5, interval_s: float = 0.2) -> float:
        return 0.0  # one process's file: no other session waits on a lock it can see

    # --- binding, knobs, index facts, replicas ---------------------------------------------------------------------

    def binding_source(self) -> FakeBindingSource:
        return FakeBindingSource(self.dsn)

    def knob_profile(self) -> KnobProfile:
        return knobs.PROFILE

    def index_facts(self) -> IndexFacts:
        return FACTS

    def constraint_indexes(self) -> set[str]:
        return self._read(lambda conn: {ix[1] for t in _tables(conn)
                                        for ix in conn.execute(f"PRAGMA index_list({quote(t)})") if ix[3] != "c"})

    def stats_since(self) -> str | None:
        return None

    def default_schema(self) -> str:
        return SCHEMA

    def column_data_types(self) -> dict[tuple[str, str, str], str]:
        return {(s, t, c): TYPES.get(typ.lower().split("(")[0], typ.lower())
                for (s, t), cols in self.column_types().items() for c, typ, _n in cols}

    def replica_requirements(self) -> list[tuple[str, str]]:
        return [("warm replicas of fakesql databases", "none yet: runs make full copies")]

    # --- the other roles (not implemented: one line each) -----------------------------------------------------------

    def loader(self):
        raise AdvisorError("loading data sets is not available for fakesql targets yet")

    def bench(self):
        raise AdvisorError("benches are not available for fakesql targets yet")


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def _bytes(conn: sqlite3.Connection, name: str) -> int:
    return int(conn.execute("SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = ?", (name,)).fetchone()[0])


def _indexes(conn: sqlite3.Connection) -> tuple[IndexInfo, ...]:
    out = []
    for t in _tables(conn):
        for _seq, name, unique, origin, partial in conn.execute(f"PRAGMA index_list({quote(t)})").fetchall():
            cols = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({quote(name)})"))
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0] or ""
            out.append(IndexInfo(SCHEMA, t, name, sql, _bytes(conn, name), 0, bool(unique), origin == "pk",
                                 columns=cols))
    return tuple(out)
