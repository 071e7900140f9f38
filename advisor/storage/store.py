"""The advisor's own state in one database (a DuckDB file, or a shared PostgreSQL database): targets, workload
snapshots, trials, recommendations, audit log.

Rules: rows are only appended, except a recommendation's state (and its ``updated_at``), which changes only
along ``domain.TRANSITIONS`` and is audited; JSON columns hold ``codec.plain`` dicts; credentials are never
stored (DSNs are redacted); ``meta.schema_version`` says which migrations ran, and a store written by a newer
version is refused rather than guessed at. A DuckDB file is opened by one process at a time (DuckDB's file lock;
the process that holds it answers the others' calls, reads and changes: ``advisor.storage.remote``); a
PostgreSQL store (``postgresql://`` URL) by any number, which is why a transition is one conditional UPDATE and
``version`` is a counter in the database (``advisor.storage.database`` runs the same SQL on both).

``Store`` opens it and migrates it; its tables are mixins by resource, each its module: ``targets``, ``runs`` (runs,
trials, snapshots, seed cache), ``recommendations`` (and the audit log), ``schedules``, ``access`` (tokens,
sessions), ``claims``, ``replicas``, ``ids``, ``atomic`` (changes that span tables).
"""

from __future__ import annotations

import threading
from pathlib import Path

from advisor.storage.database import connect
from advisor.storage.access import AccessTables
from advisor.storage.recommendations import RecommendationTables
from advisor.storage.runs import RunTables
from advisor.storage.schedules import ScheduleTables
from advisor.storage.atomic import AtomicChanges
from advisor.storage.remote import RemoteStore, StoreServer, reach
from advisor.storage.claims import ClaimTables
from advisor.storage.ids import IdTables
from advisor.storage.replicas import ReplicaTables
from advisor.storage.targets import TargetTables
from advisor.storage.schema import MIGRATIONS, SCHEMA_VERSION, new_id
from advisor.core.errors import StoreError

__all__ = ["SCHEMA_VERSION", "Store", "new_id", "open_store"]

class Store(TargetTables, RunTables, RecommendationTables, ScheduleTables, AccessTables, ClaimTables, ReplicaTables,
            IdTables, AtomicChanges):
    server: StoreServer | None = None  # answering other processes' calls while this one holds the file (``serve``)

    def __init__(self, path: str | Path):
        # a DuckDB file path, or a postgresql:// URL (then ``path`` shows it without its password)
        self._database = connect(str(path))
        self._location = str(path)
        self.path = self._database.name
        self.shared = self._database.shared  # other processes may write it at the same time (PostgreSQL)
        # serializes read-check-write sequences (state transitions, starting a run) between threads
        self.lock = threading.RLock()
        self._migrate()

    @property
    def version(self) -> int:
        """Bumped by every write that changes what a list of recommendations, runs or targets shows, so that a
        reader can cache a list until the next such write (by any process sharing the store)."""
        return self._database.version()

    def _bump(self) -> None:
        self._database.bump()

    @property
    def db(self):
        """This thread's session on the database (``execute(sql, params)`` with ``?`` placeholders)."""
        return self._database.session

    def serve(self, url: str | None = None) -> "Store":
        """Answer the calls of this user's other processes while this process holds the DuckDB file (a
        ``StoreServer``; nothing for a PostgreSQL or in-memory store, which need none). Stopped by ``close``.
        ``url``: where this process's web UI listens (``advisor serve``), said to them."""
        if self.server is None and not self.shared and self.path != ":memory:":
            self.server = StoreServer(self).start()
        if self.server is not None and url is not None:
            self.server.url = url
        return self

    def location(self) -> str:
        """Where another process of this machine opens this store (a fleet's Ray task): the DuckDB file's path, or
        the PostgreSQL URL with its password. Kept in memory and handed to ``open_store`` only; never shown."""
        return self._location

    def close(self) -> None:
        if self.server is not None:  # first: the requests it took are answered before the file closes
            self.server.stop()
        self._database.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _migrate(self) -> None:
        with self._database.migrating():  # PostgreSQL: another process opening the store waits here
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(f"the store {self.path} has schema version {version}, newer than this db-advisor "
                                 f"({SCHEMA_VERSION}); upgrade db-advisor")
            for v in range(version + 1, SCHEMA_VERSION + 1):
                with self._database.transaction():
                    self.db.execute(MIGRATIONS[v])
                    self.db.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE "
                                    "SET value = excluded.value", [str(v)])

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

def open_store(path: str | Path | None = None, *, remote: bool = False, say=None) -> Store:
    """The store at ``path`` (a DuckDB file, or a ``postgresql://`` URL), or at ADVISOR_STORE, or the default
    location. A DuckDB file this process opens answers the calls of this user's other processes while it is open
    (``Store.serve``). ``remote``: a DuckDB file another process holds is used through that process (a
    ``RemoteStore``, which forwards every call and takes the file over when that process ends:
    ``advisor.storage.remote``), waiting up to ``remote.TAKEOVER_S`` for a holder that does not answer yet, with
    one line on ``say`` while it waits; without it, such a file is refused in one line that names its holder."""
    if path is None:
        from advisor.core.settings import get_settings

        path = get_settings().store

    def opener() -> Store:
        return Store(path).serve()

    if not remote:
        return opener()
    store, holder = reach(str(path), opener, say)
    if store is not None:
        return store
    return RemoteStore(str(path), holder, Store, opener, say)
