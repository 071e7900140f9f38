"""Warm replicas and thin clones, the engine-neutral part: the ``Replica`` protocol each engine's package fills in
(``connectors/postgres/replica.py``, ``connectors/mariadb/replica.py``), its ``Lag``, and the one way a thin clone is
cut (``cut_clone``).

A warm replica is a local server that follows the target by replication, its data on a copy-on-write filesystem
(``connectors.cow``). It is built once (``connectors.factory.build_replica``), keeps running between advisor
processes (its directory is not a sandbox's: ``reap_orphans`` never looks there) and is found again by
``connectors.factory.open_replica``. A shadow is a thin clone of it: the replica is brought to a consistent point
(a clean fast shutdown), its data directory is copied with reflinks, the replica is started again and resumes
replication, and the copy starts as its own writable server on its own port. The copy's start costs the same
whatever the database's size. Clones are ordinary throwaway sandboxes, reaped when their owner is killed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol, runtime_checkable

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say
from connectors import cow

if TYPE_CHECKING:
    from connectors.base import Connector, Shadow

RECORD = "replica.json"  # what a replica's directory says of it: engine, target, how it replicates, how it was seeded
CLONES = "clones"  # the directory, on the replica's copy-on-write filesystem, its clones live under


class ReplicaUnavailable(AdvisorError):
    """A replica cannot be built, found or used; the message says why in one line (and what would fix it)."""


@dataclass(frozen=True)
class Lag:
    """How far a replica is behind its target: ``behind_bytes`` of the target's log (None where the engine does
    not count bytes), ``behind_s`` seconds (None when unknown), ``state``: "streaming", "catching up", "stopped" or
    "broken: <reason>"."""

    behind_bytes: int | None
    behind_s: float | None
    state: str

    def line(self) -> str:
        """``"12 kB behind, streaming"``, ``"0 B behind, streaming"``, ``"3 s behind, catching up"``."""
        parts = []
        if self.behind_bytes is not None:
            parts.append(f"{_size(self.behind_bytes)} behind")
        elif self.behind_s is not None:
            parts.append(f"{self.behind_s:.0f} s behind")
        return ", ".join(parts + [self.state])

    @property
    def broken(self) -> bool:
        return self.state.startswith("broken")


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.0f} {unit}" if n >= 10 * scale else f"{n / scale:.1f} {unit}"
    return f"{n} B"


@runtime_checkable
class Replica(Protocol):
    """A warm replica of one target (see the module's text)."""

    engine: str
    directory: Path
    target_name: str

    def ensure_running(self, say: Say) -> None:
        """Start it if it stopped (after a reboot or a killed advisor); ReplicaUnavailable when it cannot run."""

    def lag(self) -> Lag: ...

    def position(self, target: Connector) -> str:
        """The target's current point in its log (PostgreSQL: an LSN; MariaDB: a GTID position)."""

    def wait_for(self, point: str, timeout_s: float, say: Say) -> Lag:
        """Block until the replica has replayed past ``point`` or ``timeout_s`` passed; its lag then."""

    def clone(self, say: Say, settings: dict[str, str] | None = None) -> Shadow:
        """A thin clone: a writable server of its own (``Shadow.method == "thin clone"``) with ``settings`` in its
        configuration; closing the shadow stops it and deletes its files. Several may run side by side."""

    def remove(self, target_dsn: str | None = None) -> None:
        """Stop it, drop what it holds on the target where it can (a replication slot: through ``target_dsn`` when
        given, else the link recorded at build), release its volume and delete its directory; ReplicaUnavailable
        after all that, with the SQL the DBA runs, when what it holds on the target could not be dropped."""


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def cut_clone(directory: Path, data: Path, into: Path, stop: Callable[[], None], start: Callable[[], None]) -> None:
    """Copy the replica's ``data`` directory to ``into`` with reflinks at a consistent point: ``stop()`` the replica
    cleanly, copy, ``start()`` it again (also when the copy failed). One clone is cut at a time per replica (a lock
    file in ``directory``, across processes); ReplicaUnavailable when the replica cannot be stopped or the copy
    fails (nothing is left at ``into`` then)."""
    with _locked(directory / "clone.lock"):
        try:
            stop()
        except AdvisorError as e:
            raise ReplicaUnavailable(f"the warm replica could not be paused for a clone: {e}") from None
        try:
            cow.reflink_copy(data, into)
        except AdvisorError as e:
            shutil.rmtree(into, ignore_errors=True)
            raise ReplicaUnavailable(f"the replica's data could not be cloned: {e}") from None
        finally:
            start()


def read_record(directory: Path) -> dict:
    """What ``directory``'s replica record says (``RECORD``); ReplicaUnavailable when there is none."""
    try:
        return json.loads((directory / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ReplicaUnavailable(f"no replica is recorded in {directory}") from None


def seed_of(directory: Path) -> tuple[str | None, str | None]:
    """How the replica in ``directory`` was seeded and why (its record's ``seed``, ``seed_reason``: "mariadb-backup"
    and "the target's files are on this host", or "dump" and what the physical copy lacked); (None, None) where
    the record does not say."""
    try:
        record = read_record(directory)
    except ReplicaUnavailable:
        return None, None
    return record.get("seed"), record.get("seed_reason")


def write_record(directory: Path, record: dict) -> None:
    """The replica record of ``directory``, written whole or not at all."""
    tmp = directory / (RECORD + ".tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, directory / RECORD)
