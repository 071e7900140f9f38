"""What a change owns on a PostgreSQL server, and whether other sessions are waiting for locks.

``ownership``: per change, the key of the object it creates, drops or sets and that object's identity now: an
index's definition under its name (``pg_get_indexdef``), what an index another hand built under the name differs
in, and what routine maintenance keeps (``REINDEX INDEX CONCURRENTLY`` builds a new index with a new OID under the
old name: the OID is no identity of what the change made).
``lock_waits``: the share of a few samples in which another session of this database waited for a lock
(``pg_stat_activity.wait_event_type = 'Lock'``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from advisor.core.domain import Change, DropIndexChange, IndexChange
from connectors.owned import sampled_share, setting_entry
from connectors.base import TAG
from connectors.postgres import changes as change_sql


class Host(Protocol):
    """What these functions use of the connector they serve (``PostgresConnector`` is one): ``fn`` on a connection
    of its own, driver errors as one line. Stated here, so this module never imports the connector that imports
    it."""

    def _guarded(self, fn: Callable[[Any], Any]) -> Any: ...


INDEX_DEFINITION = (TAG + "SELECT pg_get_indexdef(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
             "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('i', 'I')")
LOCK_WAITERS = (TAG + "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database() AND pid <> pg_backend_pid()")


def _object(change: Change) -> tuple[str, str] | None:
    """(schema, index name) of the index a change creates or drops; None for a setting."""
    if isinstance(change, IndexChange):
        return change.schema, change_sql.index_name(change)
    if isinstance(change, DropIndexChange):
        return change.schema, change.name
    return None


def ownership(self: Host, changes: Sequence[Change]) -> list[tuple[str, str | None]]:
    def read(conn) -> list[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        for change in changes:
            obj = _object(change)
            if obj is None:
                out.append(setting_entry(change))
                continue
            row = conn.execute(INDEX_DEFINITION, obj).fetchone()
            out.append((f"index {obj[0]}.{obj[1]}", None if row is None else row[0]))
        return out
    return self._guarded(read)


def lock_waits(self: Host, samples: int = 5, interval_s: float = 0.2) -> float:
    return self._guarded(lambda conn: sampled_share(lambda: conn.execute(LOCK_WAITERS).fetchone()[0] > 0,
                                                    samples, interval_s))
