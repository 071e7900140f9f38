"""What a change owns on a MariaDB server, and whether other sessions are waiting for locks.

``ownership``: per change, the key of the object it creates, drops or sets and that object's identity now: an
index's InnoDB id (``INNODB_SYS_INDEXES``) when the login may read it, else its definition (columns, uniqueness,
type). ``lock_waits``: the share of a few samples in which another session waited for a table, metadata or row
lock (``PROCESSLIST`` states, ``INNODB_TRX``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pymysql

from advisor.core.domain import Change, DropIndexChange, IndexChange, KnobChange
from connectors.mariadb import changes as change_sql
from connectors.mariadb import snapshot
from connectors.mariadb.connection import TAG

if TYPE_CHECKING:
    from connectors.mariadb.connector import MariaDBConnector

INDEX_ID = (TAG + "SELECT i.INDEX_ID FROM information_schema.INNODB_SYS_INDEXES i "
            "JOIN information_schema.INNODB_SYS_TABLES t ON t.TABLE_ID = i.TABLE_ID WHERE t.NAME = %s AND i.NAME = %s")
LOCK_WAITERS = (TAG + "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
                "AND STATE LIKE 'Waiting for %%lock%%') + (SELECT COUNT(*) FROM information_schema.INNODB_TRX "
                "WHERE trx_state = 'LOCK WAIT')")


def _object(change: Change) -> tuple[str, str, str] | None:
    if isinstance(change, IndexChange):
        return change.schema, change.table, change_sql.index_name(change)
    if isinstance(change, DropIndexChange):
        return change.schema, change.table, change.name
    return None


def _innodb_id(conn: pymysql.connections.Connection, schema: str, table: str, name: str) -> str | None:
    try:
        with conn.cursor() as cur:
            cur.execute(INDEX_ID, (f"{schema}/{table}", name))
            row = cur.fetchone()
    except pymysql.Error:  # no PROCESS privilege: the definition alone
        return None
    return None if row is None else f"id {row[0]}"


def ownership(self: MariaDBConnector, changes: Sequence[Change]) -> list[tuple[str, str | None]]:
    def read(conn: pymysql.connections.Connection) -> list[tuple[str, str | None]]:
        existing = snapshot.index_columns(conn) if any(_object(c) for c in changes) else {}
        out: list[tuple[str, str | None]] = []
        for change in changes:
            obj = _object(change)
            if obj is None:
                out.append((f"setting {change.name}" if isinstance(change, KnobChange) else repr(change), ""))
                continue
            key = f"index {obj[0]}.{obj[1]}.{obj[2]}"
            found = existing.get(obj)
            if found is None:
                out.append((key, None))
                continue
            definition = json.dumps([found["columns"], found["unique"], found["type"]])
            innodb = _innodb_id(conn, *obj)
            out.append((key, f"{innodb} {definition}" if innodb else definition))
        return out
    return self._guarded(read)


def lock_waits(self: MariaDBConnector, samples: int = 5, interval_s: float = 0.2) -> float:
    def read(conn: pymysql.connections.Connection) -> float:
        waited = 0
        with conn.cursor() as cur:
            for i in range(samples):
                if i:
                    time.sleep(interval_s)
                cur.execute(LOCK_WAITERS)
                waited += int(cur.fetchone()[0]) > 0
        return waited / samples if samples else 0.0
    return self._guarded(read)
