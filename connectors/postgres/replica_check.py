"""What a PostgreSQL target must give before a warm replica can follow it (``PostgresConnector.replica_requirements``),
read without changing anything there: each missing thing with the one line that fixes it.

A physical standby needs: a login that may replicate (REPLICATION or superuser), ``wal_level`` of replica or
logical, a free WAL sender and a free replication slot, a ``pg_hba.conf`` line admitting a replication connection
from this host, and the same major version as the server installed here.
"""

from __future__ import annotations

import subprocess

import psycopg
from psycopg import sql

from advisor.core.errors import AdvisorError
from connectors.postgres.binaries import pg_bin_dir
from connectors.postgres.connection import TAG, connect, parse_dsn

SETTINGS_SQL = TAG + """
SELECT current_user, (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user),
       current_setting('wal_level'), current_setting('max_wal_senders')::int,
       (SELECT count(*) FROM pg_stat_replication)::int, current_setting('max_replication_slots')::int,
       (SELECT count(*) FROM pg_replication_slots)::int, current_setting('server_version_num')::int / 10000"""


def local_major() -> int:
    """The major version of the PostgreSQL server installed here (the one a standby would run)."""
    out = subprocess.run([str(pg_bin_dir() / "postgres"), "--version"], capture_output=True, text=True,
                         timeout=30).stdout
    try:
        return int(out.split()[-1].split(".")[0])
    except (IndexError, ValueError):
        raise AdvisorError(f"cannot read the local PostgreSQL version from {out.strip()!r}") from None


def _replication_refused(dsn: str) -> str | None:
    """Why a physical replication connection is refused (the server's words), else None."""
    params = {k: v for k, v in parse_dsn(dsn).items() if k != "dbname"}
    try:
        with psycopg.connect(**params, replication="true", autocommit=True, connect_timeout=10):
            return None
    except psycopg.OperationalError as e:
        lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
        return lines[-1].removeprefix("FATAL:").strip() if lines else "refused"


def requirements(dsn: str) -> list[tuple[str, str]]:
    """(what is missing, the line that fixes it) for each thing the target lacks; [] when a standby can follow it."""
    with connect(dsn) as conn:
        user, may, wal_level, senders, used_senders, slots, used_slots, major = conn.execute(SETTINGS_SQL).fetchone()
    role = sql.Identifier(user).as_string(None)
    missing = []
    if not may:
        missing.append((f"the login {user} may not replicate", f"ALTER ROLE {role} REPLICATION;  -- on the target"))
    if wal_level not in ("replica", "logical"):
        missing.append((f"wal_level is {wal_level}", "wal_level = replica  # in the target's postgresql.conf, "
                                                     "then restart it"))
    if senders <= used_senders:
        missing.append((f"no free WAL sender (max_wal_senders = {senders}, {used_senders} in use)",
                        f"max_wal_senders = {used_senders + 2}  # in the target's postgresql.conf, then restart it"))
    if slots <= used_slots:
        missing.append((f"no free replication slot (max_replication_slots = {slots}, {used_slots} in use)",
                        f"max_replication_slots = {used_slots + 2}  # in the target's postgresql.conf, then "
                        f"restart it"))
    here = local_major()
    if major != here:
        missing.append((f"the target runs PostgreSQL {major} and this host's server is {here}: a physical standby "
                        f"needs the same major version", f"apt-get install postgresql-{major}  # on this host"))
    if may:
        refused = _replication_refused(dsn)
        if refused:
            host = parse_dsn(dsn).get("host", "localhost")
            missing.append((f"a replication connection is refused: {refused}",
                            f"host replication {user} <this host's address>/32 scram-sha-256  # in the target's "
                            f"pg_hba.conf (it is {host}), then reload it"))
    return missing
