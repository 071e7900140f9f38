"""The ``BenchProbe`` role: what the benches and fault injection see of a server, as an operator would, reached from
a connector by ``Connector.bench()``: the database's and a table's size on disk, the indexes a failed build left
unusable, and ``probe()``, a ``Probe`` (a connection of its own that lists the other client sessions, a
``ServerSession`` each, ends one and holds a table lock). Each engine implements them in its package
(``connectors/postgres/roles.py`` and ``activity.py``, the same under ``connectors/mariadb/``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class ServerSession:
    """Another client session of a server, as the engine lists it: its id (what ``Probe.terminate`` takes), the
    program's name, whether it runs a statement now and waits on a lock, and the statement's text as sent."""

    id: int
    application: str
    active: bool
    waiting_on_lock: bool
    statement: str


@runtime_checkable
class Probe(Protocol):
    """A connection of its own to watch and disturb a server as an operator would (the fault benches): list the
    other sessions, end one, hold a lock on a table. Closing it releases what it holds."""

    def sessions(self) -> list[ServerSession]:
        """Every other client session on the server (of any database), now."""

    def terminate(self, session_id: int) -> bool:
        """End that session (its connection is dropped), as an admin would; whether there was one to end."""

    def lock(self, table: str, schema: str | None = None, *, readers_wait: bool = True) -> str:
        """Open a transaction and lock ``table`` in it until ``release``: with ``readers_wait`` every other session
        waits for it, reads included (PostgreSQL's ACCESS EXCLUSIVE); otherwise only index builds and changes of
        the table's definition wait (SHARE UPDATE EXCLUSIVE). The statement that took it, for people."""

    def release(self) -> None:
        """End the transaction holding the lock (nothing when none is held)."""

    def close(self) -> None: ...

    def __enter__(self) -> Probe: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class BenchProbe(Protocol):
    """What a bench measures of a database and how fault injection disturbs its server. Every method opens its
    own connection, except ``probe``, whose connection is the caller's to close."""

    def database_bytes(self) -> int:
        """The connected database's size on disk in bytes: its tables, indexes and the engine's own files of it
        (PostgreSQL: ``pg_database_size``)."""

    def table_bytes(self, table: str, schema: str | None = None) -> int:
        """Bytes of ``table``'s rows on disk, without its indexes (``schema`` None: the connection's default)."""

    def invalid_indexes(self) -> list[str]:
        """Names of the indexes an interrupted or failed online build left unusable (engines whose builds leave
        nothing behind: none)."""

    def probe(self) -> Probe:
        """An operator's connection to the server (closing it releases what it holds)."""
