"""What a change owns on a MariaDB server, and whether other sessions are waiting for locks.

``ownership``: per change, the key of the object it creates, drops or sets and that object's identity now: an
index's definition (columns, uniqueness, type), what an index another hand built under the name differs in. Not
its InnoDB id: ``OPTIMIZE TABLE`` (a recreate of an InnoDB table) gives every index a new one, and reading it
needs the PROCESS privilege. ``lock_waits``: the share of a few samples in which another session of this
database waited for a table, metadata or row lock (``PROCESSLIST`` states, ``INNODB_TRX``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pymysql

from advisor.core.domain import Change, DropIndexChange, IndexChange
from connectors.owned import sampled_share, setting_entry
from connectors.mariadb import changes as change_sql
from connectors.mariadb import snapshot
from connectors.mariadb.connection import TAG


class Host(Protocol):
    """What these functions use of the connector they serve (``MariaDBConnector`` is one): ``fn`` on a connection
    of its own, driver errors as one line. Stated here, so this module never imports the connector that imports
    it."""

    def _guarded(self, fn: Callable[[pymysql.connections.Connection], Any], answer_s: float | None = None) -> Any: ...


# sessions of this database only (as PostgreSQL's datname): a lock wait in another database of the server slows
# none of this one's statements
LOCK_WAITERS = (TAG + "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
                "AND STATE LIKE 'Waiting for %%lock%%' AND (DATABASE() IS NULL OR DB = DATABASE())) + "
                "(SELECT COUNT(*) FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p "
                "ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' "
                "AND (DATABASE() IS NULL OR p.DB = DATABASE()))")

# InnoDB refreshes what INNODB_TRX shows only when nobody read it for 0.1 s: samples closer than that read one state
MIN_GAP_S = 0.15


def _object(change: Change) -> tuple[str, str, str] | None:
    if isinstance(change, IndexChange):
        return change.schema, change.table, change_sql.index_name(change)
    if isinstance(change, DropIndexChange):
        return change.schema, change.table, change.name
    return None


def ownership(self: Host, changes: Sequence[Change]) -> list[tuple[str, str | None]]:
    def read(conn: pymysql.connections.Connection) -> list[tuple[str, str | None]]:
        existing = snapshot.index_columns(conn) if any(_object(c) for c in changes) else {}
        out: list[tuple[str, str | None]] = []
        for change in changes:
            obj = _object(change)
            if obj is None:
                out.append(setting_entry(change))
                continue
            key = f"index {obj[0]}.{obj[1]}.{obj[2]}"
            found = existing.get(obj)
            if found is None:
                out.append((key, None))
                continue
            out.append((key, json.dumps([found["columns"], found["unique"], found["type"]])))
        return out
    return self._guarded(read)


def lock_waits(self: Host, samples: int = 5, interval_s: float = 0.2) -> float:
    def read(conn: pymysql.connections.Connection) -> float:
        with conn.cursor() as cur:
            def waiting() -> bool:
                cur.execute(LOCK_WAITERS)
                return int(cur.fetchone()[0]) > 0
            return sampled_share(waiting, samples, max(interval_s, MIN_GAP_S))
    return self._guarded(read)
