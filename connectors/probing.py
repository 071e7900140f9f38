"""What the fault benches see of a server, as an operator would (issue 30): ``ServerSession`` (another client session
of it) and the ``Probe`` protocol (a connection of its own that lists sessions, ends one and holds a table lock),
which ``Connector.probe()`` returns. Each engine implements it in its package (PostgreSQL: ``postgres/activity``)."""

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
