"""What-if indexes on a MariaDB SHADOW without hypothetical indexes (MariaDB has no HypoPG): ``IgnoredIndexes``
builds each candidate index for real, once, as an IGNORED index (``ALTER TABLE ... ADD INDEX ... IGNORED``,
online), and costs a configuration by making exactly its indexes visible (``ALTER TABLE ... ALTER INDEX ...
[NOT] IGNORED``: metadata only, a few ms a table) before ``EXPLAIN FORMAT=JSON``. Costs are MariaDB's optimizer
cost units (``Last_query_cost``: about one random page read = 1), comparable only with MariaDB's own. Building
costs time once per candidate (a full read of its table; counted in ``creates``); sizes are the built indexes'
real sizes (``mysql.innodb_index_stats`` 'size' pages x ``@@innodb_page_size``, which InnoDB fills when it builds
an index: no ANALYZE TABLE, which would resample the table's other indexes between configurations). Existing (non-candidate) indexes stay as they are. Closing drops what was built.

Building writes, so this runs on a sandbox only (``MariaDBConnector.whatif`` refuses any other server), and
``hidden`` (``timings_without``) toggles built indexes the same way, restoring their visibility afterwards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pymysql

from advisor.core.domain import Costed, IndexChange
from advisor.core.errors import BadStatement
from connectors.mariadb.changes import ONLINE, index_sql
from connectors.mariadb.connection import TAG, connect, error_code, error_text, quote
from connectors.mariadb.plans import aliases, parse_json, to_plan
from connectors.mariadb.session import GONE

# the size a candidate the server refuses to build answers (bytes): more than any budget, so never chosen
UNBUILDABLE_BYTES = 1 << 50
SIZE_SQL = TAG + ("SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = %s "
                  "AND table_name = %s AND index_name = %s AND stat_name = 'size'")
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


class IgnoredIndexes:
    """The ``connectors.base.WhatIf`` of a MariaDB shadow (see the module docstring), on one connection of its own.
    ``creates`` / ``drops``: indexes built and dropped; ``toggles``: ALTER INDEX statements run; ``refused``:
    candidates the server would not build, with its reason (planned without them, sized ``UNBUILDABLE_BYTES``)."""

    def __init__(self, dsn: str, password: str | None = None):
        self.conn = connect(dsn)
        self._password = password
        self.creates = 0
        self.drops = 0
        self.toggles = 0
        self.refused: dict[IndexChange, str] = {}
        self._built: dict[IndexChange, str] = {}  # candidate -> its index name
        self._visible: set[IndexChange] = set()

    def __enter__(self) -> "IgnoredIndexes":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, statement: str) -> None:
        with self.conn.cursor() as cur:
            cur.execute(TAG + statement)

    def _build(self, index: IndexChange) -> bool:
        """Build ``index`` IGNORED unless it is built (or was refused); whether it exists now."""
        if index in self._built:
            return True
        if index in self.refused:
            return False
        name = whatif_name(index)
        try:
            index_sql(IndexChange(index.schema, index.table, index.columns, index.method, name))  # buildable?
        except BadStatement as e:
            self.refused[index] = str(e)
            return False
        columns = ", ".join(quote(c) for c in index.columns)
        add = (f"ALTER TABLE {quote(index.schema)}.{quote(index.table)} ADD INDEX {quote(name)} ({columns}) "
               f"IGNORED{ONLINE}")
        try:
            self._run(add)
        except pymysql.Error as e:
            if error_code(e) in GONE:
                raise
            self.refused[index] = error_text(e, self._password)
            return False
        self.creates += 1
        self._built[index] = name
        return True

    def show(self, tables: frozenset[tuple[str, str]], visible: set[IndexChange]) -> None:
        """Make the built indexes on ``tables`` visible exactly where they are in ``visible``."""
        changes: dict[tuple[str, str], dict[str, bool]] = {}
        for index, name in self._built.items():
            key = (index.schema, index.table)
            want = index in visible
            if key in tables and want != (index in self._visible):
                changes.setdefault(key, {})[name] = want
        for (schema, table), names in sorted(changes.items()):
            self._run(toggle_sql(schema, table, names))
            self.toggles += 1
            for index, name in self._built.items():
                if (index.schema, index.table) == (schema, table) and name in names:
                    (self._visible.add if names[name] else self._visible.discard)(index)

    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset[tuple[str, str]]) -> Costed:
        """Build what ``indexes`` lacks, make exactly ``indexes`` visible among the built ones on ``tables``, then
        the statement's cost and full scans."""
        wanted = {ix for ix in indexes if self._build(ix)}
        self.show(tables | {(ix.schema, ix.table) for ix in wanted}, wanted)
        with self.conn.cursor() as cur:
            total, scans = explain(cur, sql)
        return Costed(total, scans)

    def index_size(self, index: IndexChange) -> int:
        """The real size in bytes: an existing index with the same columns answers for itself; a candidate is
        built (IGNORED) once and measured."""
        with self.conn.cursor() as cur:
            existing = self._existing(cur, index)
            if existing is None and not self._build(index):
                return UNBUILDABLE_BYTES
            cur.execute(SIZE_SQL, (index.schema, index.table, existing or self._built[index]))
            row = cur.fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _existing(self, cur, index: IndexChange) -> str | None:
        """The name of an index of the table (not one built here) whose key columns are exactly ``index``'s."""
        mine = set(self._built.values())
        cur.execute(EXISTING_SQL, (index.schema, index.table))
        for name, columns, prefixed in cur.fetchall():
            if name not in mine and not prefixed and tuple(str(columns).split("\0")) == tuple(index.columns):
                return str(name)
        return None

    def close(self) -> None:
        """Drop every index built here (best effort when the server is gone) and close the connection."""
        if not self.conn.open:
            return
        try:
            for index, name in list(self._built.items()):
                self._run(f"ALTER TABLE {quote(index.schema)}.{quote(index.table)} DROP INDEX {quote(name)}")
                self.drops += 1
                del self._built[index]
                self._visible.discard(index)
        except pymysql.Error:
            pass
        finally:
            self.conn.close()
