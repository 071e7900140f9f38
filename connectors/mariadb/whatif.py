"""What-if indexes on a MariaDB SHADOW without hypothetical indexes (MariaDB has no HypoPG): ``IgnoredIndexes``
builds each candidate index for real, once, as an IGNORED index (``ALTER TABLE ... ADD INDEX ... IGNORED``,
online), and costs a configuration by making exactly its indexes visible (``ALTER TABLE ... ALTER INDEX ...
[NOT] IGNORED``: metadata only, 30-100 ms a table) before ``EXPLAIN FORMAT=JSON``. Costs are MariaDB's optimizer
cost units (``Last_query_cost``: about one random page read = 1), comparable only with MariaDB's own. Building
costs time once per candidate (counted in ``creates``); sizes are the built indexes'
real sizes (``mysql.innodb_index_stats`` 'size' pages x ``@@innodb_page_size``, which InnoDB fills when it builds
an index: no ANALYZE TABLE, which would resample the table's other indexes between configurations). Existing (non-candidate) indexes stay as they are. Closing drops what was built.

Building writes, so this runs on a sandbox only (``MariaDBConnector.whatif`` refuses any other server), and
``hidden`` (``timings_without``) toggles built indexes the same way, restoring their visibility afterwards.

Batched (``BATCH``, the default; ``ADVISOR_WHATIF_BATCH=0`` gives the one-at-a-time path it replaced): the
candidates ``expect`` announces are built together the first time any of them is needed, all of a table's in ONE
``ALTER TABLE ... ADD INDEX a (...) IGNORED, ADD INDEX b (...) IGNORED`` (one online build, one read of the table
for all of them), up to ``MAX_BUILDERS`` tables at once on connections of their own. One ADD INDEX the server
refuses fails its whole ALTER: that table's candidates are then built one at a time, so only the refused one is
lost (in ``refused``). A toggle (an ALTER TABLE that waits on the disk: 30-100 ms) costs ten EXPLAINs, so batched
a statement is planned with only the built indexes it ``cares`` about set (``connectors.mariadb.visibility``: its
leading column named, or able to cover it); the others stay as they are, and ``plan_many`` plans a batch of
(statement, configuration) pairs in groups that agree on those (``batches``), nearest first, one set of toggles
per group, then one EXPLAIN each. IGNORED is table metadata that every session sees, so a batch's EXPLAINs stay on
this one connection (on 2 cores an EXPLAIN is a few ms: the toggles are what a batch saves). Measured on TPC-H
(``advisor bench latency --tune --tune-peers``): one ALTER per table builds no faster than one per index (InnoDB
sorts and writes each index apart; the shared read of the table is not what costs), the toggles are what batching
saves. Costs move by a few percent whenever a table's indexes change (InnoDB re-samples its statistics), in
either path. Dropping is one ALTER per table. ``seconds`` keeps the time spent building, sizing, toggling,
explaining and dropping.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import pymysql

from advisor.core.domain import Costed, IndexChange
from advisor.core.errors import BadStatement
from connectors.mariadb.changes import ONLINE, index_sql
from connectors.mariadb.connection import TAG, connect, error_code, error_text, quote
from connectors.mariadb.plans import aliases, parse_json, to_plan
from connectors.mariadb.session import GONE
from connectors.mariadb.visibility import Need, batches, cares, merged, words

# candidates built in batches and planned in toggle-sharing batches (the module docstring); "0" turns it off
BATCH = os.environ.get("ADVISOR_WHATIF_BATCH", "1").strip().lower() not in ("0", "false", "no", "off")
MAX_BUILDERS = 4  # connections building the candidates of different tables at once
# the size a candidate the server refuses to build answers (bytes): more than any budget, so never chosen
UNBUILDABLE_BYTES = 1 << 50
SIZE_SQL = TAG + ("SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = %s "
                  "AND table_name = %s AND index_name = %s AND stat_name = 'size'")
COLUMNS_SQL = TAG + ("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                     "ORDER BY ORDINAL_POSITION")
EXISTING_SQL = TAG + ("SELECT INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX SEPARATOR '\\0'), "
                      "MAX(SUB_PART IS NOT NULL) FROM information_schema.STATISTICS "
                      "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s GROUP BY INDEX_NAME")


def whatif_name(index: IndexChange) -> str:
    """The name a candidate is built under: fixed for the same index, never one an application uses.

    >>> whatif_name(IndexChange("shop", "orders", ("customer_id",)))
    'db_advisor_whatif_50827678079c'
    """
    key = f"{index.schema}\0{index.table}\0{index.method}\0" + "\0".join(index.columns)
    return "db_advisor_whatif_" + hashlib.sha1(key.encode()).hexdigest()[:12]


def toggle_sql(schema: str, table: str, names: dict[str, bool]) -> str:
    """One ALTER TABLE that makes each named index visible (True) or IGNORED (False).

    >>> toggle_sql("s", "t`x", {"a": True, "b": False})
    'ALTER TABLE `s`.`t``x` ALTER INDEX `a` NOT IGNORED, ALTER INDEX `b` IGNORED'
    """
    parts = ", ".join(f"ALTER INDEX {quote(n)} {'NOT IGNORED' if v else 'IGNORED'}" for n, v in names.items())
    return f"ALTER TABLE {quote(schema)}.{quote(table)} {parts}"


def explained(cur, statement: str) -> tuple[dict, float, dict[str, str]]:
    """EXPLAIN FORMAT=JSON of one statement on ``cur``, the optimizer's Last_query_cost read right after it, and
    the statement's table aliases: what ``plans.to_plan`` takes."""
    try:
        cur.execute(TAG + "EXPLAIN FORMAT=JSON " + statement)
    except pymysql.Error as e:
        if error_code(e) in GONE:
            raise
        raise BadStatement(f"cannot plan the statement: {error_text(e)}", reason=error_text(e)) from None
    document = parse_json(cur.fetchone()[0])
    cur.execute(TAG + "SHOW SESSION STATUS LIKE 'Last_query_cost'")
    row = cur.fetchone()
    return document, float(row[1]) if row else 0.0, aliases(statement)


def explain(cur, statement: str) -> tuple[float, dict[str, float]]:
    """(total cost, per table its full-scan cost) of one statement, from its neutral plan."""
    plan = to_plan(*explained(cur, statement))
    return plan.cost, plan.full_scans()


def add_sql(schema: str, table: str, names: dict[str, tuple[str, ...]]) -> str:
    """One online ALTER TABLE that builds each named index (name -> its columns) IGNORED.

    >>> add_sql("s", "t", {"a": ("x",), "b": ("y", "z")})
    'ALTER TABLE `s`.`t` ADD INDEX `a` (`x`) IGNORED, ADD INDEX `b` (`y`, `z`) IGNORED, ALGORITHM=INPLACE, LOCK=NONE'
    """
    parts = ", ".join(f"ADD INDEX {quote(n)} ({', '.join(quote(c) for c in cols)}) IGNORED"
                      for n, cols in names.items())
    return f"ALTER TABLE {quote(schema)}.{quote(table)} {parts}{ONLINE}"


class IgnoredIndexes:
    """The ``connectors.base.WhatIf`` of a MariaDB shadow (see the module docstring), on one connection of its own.
    ``creates`` / ``drops``: indexes built and dropped; ``builds``: ALTER TABLE statements that built them;
    ``toggles``: ALTER INDEX statements run; ``refused``: candidates the server would not build, with its reason
    (planned without them, sized ``UNBUILDABLE_BYTES``); ``seconds``: time spent per phase."""

    def __init__(self, dsn: str, password: str | None = None, batch: bool | None = None):
        self.conn = connect(dsn)
        self._dsn = dsn
        self._password = password
        self.batch = BATCH if batch is None else batch
        self.creates = 0
        self.builds = 0
        self.drops = 0
        self.toggles = 0
        self.shows = 0  # configurations made visible that changed anything (each one ALTER per changed table)
        self.refused: dict[IndexChange, str] = {}
        self.seconds = {"build": 0.0, "size": 0.0, "toggle": 0.0, "explain": 0.0, "drop": 0.0}
        self._built: dict[IndexChange, str] = {}  # candidate -> its index name
        self._visible: set[IndexChange] = set()
        self._expected: dict[IndexChange, None] = {}  # announced, not built yet (in order)
        self._table_columns: dict[tuple[str, str], tuple[str, ...]] = {}
        self._lock = threading.Lock()  # builders of several tables record what they built

    def __enter__(self) -> "IgnoredIndexes":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, statement: str, conn=None) -> None:
        with (conn or self.conn).cursor() as cur:
            cur.execute(TAG + statement)

    def expect(self, indexes: Iterable[IndexChange]) -> None:
        """Announce the candidates the search will cost: batched, they are all built the first time one is needed."""
        if self.batch:
            self._expected.update((ix, None) for ix in indexes if ix not in self._built and ix not in self.refused)

    def _buildable(self, index: IndexChange) -> bool:
        try:
            index_sql(IndexChange(index.schema, index.table, index.columns, index.method, whatif_name(index)))
        except BadStatement as e:
            with self._lock:
                self.refused[index] = str(e)
            return False
        return True

    def _build(self, index: IndexChange) -> bool:
        """Build ``index`` IGNORED unless it is built (or was refused); whether it exists now. Batched, an expected
        index is built with every other expected one."""
        if index in self._built:
            return True
        if index in self.refused:
            return False
        if self.batch and index in self._expected:
            self.build(self._expected)
            return index in self._built
        started = time.monotonic()
        try:
            return self._build_one(index, self.conn)
        finally:
            self.seconds["build"] += time.monotonic() - started

    def _build_one(self, index: IndexChange, conn) -> bool:
        if not self._buildable(index):
            return False
        name = whatif_name(index)
        try:
            self._run(add_sql(index.schema, index.table, {name: index.columns}), conn)
        except pymysql.Error as e:
            if error_code(e) in GONE:
                raise
            with self._lock:
                self.refused[index] = error_text(e, self._password)
            return False
        with self._lock:
            self.creates += 1
            self.builds += 1
            self._built[index] = name
        return True

    def build(self, indexes: Iterable[IndexChange]) -> None:
        """Build those of ``indexes`` not built yet: a table's in one ALTER (one at a time where it is refused),
        up to ``MAX_BUILDERS`` tables at once, each on a connection of its own."""
        started = time.monotonic()
        tables: dict[tuple[str, str], list[IndexChange]] = {}
        todo = list(dict.fromkeys(indexes))
        for ix in todo:
            self._expected.pop(ix, None)
        for ix in todo:
            if ix not in self._built and ix not in self.refused and self._buildable(ix):
                tables.setdefault((ix.schema, ix.table), []).append(ix)
        work = sorted(tables.items(), key=lambda kv: -len(kv[1]))
        try:
            if len(work) <= 1 or MAX_BUILDERS <= 1:
                for (schema, table), items in work:
                    self._build_table(schema, table, items, self.conn)
            else:
                def one(job):
                    conn = connect(self._dsn)
                    try:
                        self._build_table(*job[0], job[1], conn)
                    finally:
                        conn.close()
                with ThreadPoolExecutor(max_workers=min(MAX_BUILDERS, len(work))) as pool:
                    list(pool.map(one, work))
        finally:
            self.seconds["build"] += time.monotonic() - started

    def _build_table(self, schema: str, table: str, items: list[IndexChange], conn) -> None:
        if len(items) == 1:
            self._build_one(items[0], conn)
            return
        names = {ix: whatif_name(ix) for ix in items}
        try:
            self._run(add_sql(schema, table, {names[ix]: ix.columns for ix in items}), conn)
        except pymysql.Error as e:
            if error_code(e) in GONE:
                raise
            for ix in items:  # one refused ADD INDEX failed them all: each alone, so only it is lost
                self._build_one(ix, conn)
            return
        with self._lock:
            self.creates += len(items)
            self.builds += 1
            self._built.update(names)

    def show(self, tables: frozenset[tuple[str, str]], visible: set[IndexChange]) -> None:
        """Make the built indexes on ``tables`` visible exactly where they are in ``visible``."""
        self._apply({t: {name: ix in visible for ix, name in self._built.items() if (ix.schema, ix.table) == t}
                     for t in tables})

    def _apply(self, need: Need) -> None:
        """Make each named built index visible (True) or IGNORED (False), one ALTER per table that changes."""
        by_name = {(ix.schema, ix.table, name): ix for ix, name in self._built.items()}
        changes: dict[tuple[str, str], dict[str, bool]] = {}
        for table, names in need.items():
            for name, want in names.items():
                if want != (by_name[(*table, name)] in self._visible):
                    changes.setdefault(table, {})[name] = want
        if not changes:
            return
        self.shows += 1
        started = time.monotonic()
        try:
            for (schema, table), names in sorted(changes.items()):
                self._run(toggle_sql(schema, table, names))
                self.toggles += 1
                for name, want in names.items():
                    (self._visible.add if want else self._visible.discard)(by_name[(schema, table, name)])
        finally:
            self.seconds["toggle"] += time.monotonic() - started

    def _columns(self, table: tuple[str, str]) -> tuple[str, ...]:
        found = self._table_columns.get(table)
        if found is None:
            with self.conn.cursor() as cur:
                cur.execute(COLUMNS_SQL, table)
                found = self._table_columns[table] = tuple(str(r[0]) for r in cur.fetchall())
        return found

    def need(self, sql: str, indexes: Iterable[IndexChange], tables: frozenset[tuple[str, str]]) -> Need:
        """What planning ``sql`` under ``indexes`` needs of the built indexes on the tables it reads: those in
        ``indexes`` visible, the others hidden. Batched, only those it ``cares`` about: the rest may stay as they
        are (the optimizer has no use for them), which is what lets configurations share their toggles."""
        wanted = set(indexes)
        read = tables | {(ix.schema, ix.table) for ix in wanted}
        named = words(sql) if self.batch else frozenset()
        out: Need = {}
        for ix, name in self._built.items():
            t = (ix.schema, ix.table)
            if t in read and (not self.batch or ix in wanted or cares(ix.columns, named, self._columns(t))):
                out.setdefault(t, {})[name] = ix in wanted
        return out

    def _explain(self, sql: str) -> Costed:
        started = time.monotonic()
        try:
            with self.conn.cursor() as cur:
                total, scans = explain(cur, sql)
        finally:
            self.seconds["explain"] += time.monotonic() - started
        return Costed(total, scans)

    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset[tuple[str, str]]) -> Costed:
        """Build what ``indexes`` lacks, make exactly ``indexes`` visible among the built ones on ``tables`` (the
        ones the statement ``cares`` about, batched), then the statement's cost and full scans."""
        wanted = [ix for ix in indexes if self._build(ix)]
        self._apply(self.need(sql, wanted, tables))
        return self._explain(sql)

    def plan_many(self, jobs: Sequence[tuple[str, Sequence[IndexChange], frozenset[tuple[str, str]]]]
                  ) -> list[Costed | None]:
        """``plan`` of each (statement, indexes, tables), with the jobs that agree on the indexes they care about
        planned under one set of toggles (``batches``); None for a statement the server cannot plan (left to
        ``plan``, which raises). Without batching, one ``plan`` after the other."""
        out: list[Costed | None] = [None] * len(jobs)
        if not self.batch:
            groups = [[k] for k in range(len(jobs))]
        else:
            self.build([*self._expected, *(ix for _sql, indexes, _t in jobs for ix in indexes)])
            needs = [self.need(sql, [ix for ix in indexes if ix in self._built], tables)
                     for sql, indexes, tables in jobs]
            groups = self._nearest_first(batches(needs), needs)
        for group in groups:
            if self.batch:
                self._apply(merged(needs[k] for k in group))
            for k in group:
                sql, indexes, tables = jobs[k]
                try:
                    out[k] = self._explain(sql) if self.batch else self.plan(sql, indexes, tables)
                except BadStatement:
                    out[k] = None
        return out

    def _nearest_first(self, groups: list[list[int]], needs: Sequence[Need]) -> list[list[int]]:
        """``groups`` in the order that toggles least: each next the one whose indexes differ least from the
        visible ones then."""
        visible = {(ix.schema, ix.table, name) for ix, name in self._built.items() if ix in self._visible}
        states = [merged(needs[k] for k in g) for g in groups]
        left, out = list(range(len(groups))), []
        while left:
            def changes(i: int) -> int:
                return sum(1 for t, names in states[i].items() for n, v in names.items()
                           if v != ((*t, n) in visible))
            best = min(left, key=changes)
            left.remove(best)
            out.append(groups[best])
            for t, names in states[best].items():
                for n, v in names.items():
                    (visible.add if v else visible.discard)((*t, n))
        return out

    def index_size(self, index: IndexChange) -> int:
        """The real size in bytes: an existing index with the same columns answers for itself; a candidate is
        built (IGNORED) once and measured."""
        with self.conn.cursor() as cur:
            existing = self._existing(cur, index)
            if existing is None and not self._build(index):
                return UNBUILDABLE_BYTES
            started = time.monotonic()
            cur.execute(SIZE_SQL, (index.schema, index.table, existing or self._built[index]))
            row = cur.fetchone()
            self.seconds["size"] += time.monotonic() - started
        return int(row[0]) if row and row[0] is not None else 0

    def _existing(self, cur, index: IndexChange) -> str | None:
        """The name of an index of the table (not one built here) whose key columns are exactly ``index``'s."""
        mine = set(self._built.values())
        cur.execute(EXISTING_SQL, (index.schema, index.table))
        for name, columns, prefixed in cur.fetchall():
            if name not in mine and not prefixed and tuple(str(columns).split("\0")) == tuple(index.columns):
                return str(name)
        return None

    def session_counters(self) -> dict:
        """What this session did: indexes built (and the ALTERs that built them), refused, toggles, seconds."""
        return {"built": self.creates, "build_statements": self.builds, "refused": len(self.refused),
                "toggles": self.toggles, "shows": self.shows, "batched": self.batch,
                **{f"{k}_s": round(v, 3) for k, v in self.seconds.items()}}

    def close(self) -> None:
        """Drop every index built here, one ALTER per table (best effort when the server is gone), and close the
        connection."""
        if not self.conn.open:
            return
        started = time.monotonic()
        try:
            tables: dict[tuple[str, str], list[IndexChange]] = {}
            for index in self._built:
                tables.setdefault((index.schema, index.table), []).append(index)
            for (schema, table), items in sorted(tables.items()):
                drops = ", ".join(f"DROP INDEX {quote(self._built[ix])}" for ix in items)
                self._run(f"ALTER TABLE {quote(schema)}.{quote(table)} {drops}")
                self.drops += len(items)
                for ix in items:
                    del self._built[ix]
                    self._visible.discard(ix)
        except pymysql.Error:
            pass
        finally:
            self.seconds["drop"] += time.monotonic() - started
            self.conn.close()
