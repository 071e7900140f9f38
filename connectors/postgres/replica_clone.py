"""A thin clone of a PostgreSQL warm replica (``connectors.postgres.replica_standby``, ``replica_logical``): a sandbox whose data directory is a
reflink copy of the standby's, cut at a clean stop (``connectors.replica.cut_clone``), started as a writable server
of its own.

The copy was shut down in recovery; started without ``standby.signal`` it replays what is left of its WAL and opens
for writes, with no link to the target (its ``postgresql.auto.conf`` is emptied). It then admits only the advisor,
as every sandbox does: its own login ``postgres`` (made in the clone when the target has none) with a random
password over TCP, and trust only on its socket directory (mode 0700). The advisor's extensions are created in the
target's database where the target lacks them (the clone's catalog, never the target's). A logical replica's
clone starts with its replica's ``CLONE_SETTINGS`` (no apply worker) and is cut loose by ``detach_clone`` (its
subscription dropped without touching the target's slot) before anything else runs in it. Closing its ``Shadow``
stops it and deletes its files; after ``kill -9`` of its owner, ``reap_orphans`` on the volume's clone directory
does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from connectors import local
from connectors.base import Shadow
from connectors.postgres.connection import TAG
from connectors.postgres.sandbox import PostgresSandbox
from connectors.replica import CLONES, Lag, ReplicaUnavailable, cut_clone


class Standby(Protocol):
    """What a clone uses of the replica it is cut from (``replica_standby.StandbyReplica`` and its logical
    subclass are ones): stated here, so this module never imports the replica that imports it."""

    CLONE_SETTINGS: dict[str, str]
    directory: Path
    dbname: str | None
    volume: Path
    data: Path

    def _user(self) -> str: ...

    def ensure_running(self, say: Say = silent) -> None: ...

    def stop(self, mode: str = "fast") -> None: ...

    def lag(self) -> Lag: ...

    def detach_clone(self, clone: PostgresClone) -> None: ...



def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


class PostgresClone(PostgresSandbox):
    """A sandbox made from a replica's data instead of ``initdb`` (``connectors.base.Sandbox``)."""

    def __init__(self, replica: Standby, settings: dict[str, str]):
        super().__init__("clone", settings={**settings, **replica.CLONE_SETTINGS},
                         base_dir=str(replica.volume / CLONES))
        self.replica = replica
        self.default_db = replica.dbname or "postgres"

    def _init(self) -> None:
        self.run_dir.mkdir(mode=0o700)
        owner = None
        st = self.replica.data.stat()
        if os.geteuid() == 0:
            owner = (st.st_uid, st.st_gid)
            for p in (self.root, self.run_dir):
                os.chown(p, *owner)
        cut_clone(self.replica.directory, self.replica.data, self.data, stop=lambda: self.replica.stop("fast"),
                  start=lambda: self.replica.ensure_running())
        for name in ("standby.signal", "recovery.signal", "postmaster.pid"):
            (self.data / name).unlink(missing_ok=True)
        (self.data / "postgresql.auto.conf").write_text("# emptied: a clone follows no primary\n", encoding="utf-8")
        conf = {"port": str(self.port), "listen_addresses": "127.0.0.1", "unix_socket_directories": str(self.run_dir),
                "unix_socket_permissions": "0700", **self.settings}
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as f:
            f.write("\n# db-advisor: a thin clone\n")
            for key, value in conf.items():
                f.write(f"{key} = {value if value.startswith(chr(39)) else _quoted(value)}\n")
        (self.data / "pg_hba.conf").write_text(f"local all all trust\nhost all {self.user} 127.0.0.1/32 "
                                               f"scram-sha-256\n", encoding="utf-8")
        if owner is not None:
            for name in ("postgresql.auto.conf", "pg_hba.conf"):
                os.chown(self.data / name, *owner)

    def _provision(self) -> None:
        self._admit_advisor()
        self.replica.detach_clone(self)
        self.create_extensions(self.default_db)

    def _start_failed(self, error: BaseException) -> BaseException | None:
        """ReplicaUnavailable (with the clone's last log lines) when it cannot be cut or does not start; nothing of
        it is left then (``start`` stops it)."""
        if isinstance(error, ReplicaUnavailable) or not isinstance(error, (AdvisorError, psycopg.Error)):
            return None
        return ReplicaUnavailable(f"the thin clone did not start: {str(error).strip().splitlines()[0]}; last log "
                                  f"lines: {self.log_tail(3)}")

    def _socket(self, user: str, dbname: str) -> psycopg.Connection:
        return psycopg.connect(make_conninfo(host=str(self.run_dir), port=self.port, user=user, dbname=dbname),
                               autocommit=True, connect_timeout=10)

    def _admit_advisor(self) -> None:
        """The clone's ``postgres`` login, superuser, with this sandbox's password (made when the target has none),
        set over the socket as the cluster's bootstrap superuser."""
        with self._socket(self.replica._user(), self.default_db) as conn:
            boot = conn.execute(TAG + "SELECT rolname FROM pg_roles WHERE oid = 10").fetchone()[0]
        with self._socket(boot, self.default_db) as conn:
            exists = conn.execute(TAG + "SELECT 1 FROM pg_roles WHERE rolname = %s", [self.user]).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(sql.SQL(verb + " ROLE {} WITH LOGIN SUPERUSER PASSWORD {}").format(
                sql.Identifier(self.user), sql.Literal(self.password)))


def start_clone(replica: Standby, say: Say, settings: dict[str, str]) -> Shadow:
    """A running thin clone of ``replica`` as a shadow of the target's database."""
    replica.ensure_running(say)
    clones = replica.volume / CLONES
    clones.mkdir(exist_ok=True)
    local.reap_orphans(clones)  # clones of killed advisors
    lag = replica.lag()
    say(f"shadow: a thin clone of the warm replica ({lag.line()})")
    started = time.monotonic()
    clone = PostgresClone(replica, settings).start()
    say(f"shadow: the thin clone runs ({time.monotonic() - started:.1f} s)")
    return Shadow(clone, clone.connector(), clone.default_db, method="thin clone", note=lag.line())
