"""Warm replicas of PostgreSQL targets (``connectors.factory``'s ``replica`` of the engine): which kind a target gets
is data, the method ``replica_check.method`` chooses from the target (a physical standby, ``replica_standby``, when
its major version is this host's; logical replication of its database, ``replica_logical``, otherwise), and which
kind a built replica is, its record's ``method``."""

from __future__ import annotations

from pathlib import Path

from advisor.core.progress import Say, silent
from connectors.postgres import replica_check
from connectors.postgres.replica_logical import LogicalReplica
from connectors.postgres.replica_standby import StandbyReplica
from connectors.replica import read_record

KINDS = {kind.method: kind for kind in (StandbyReplica, LogicalReplica)}


class PostgresReplica:
    """Builds or finds the replica of the kind a target needs (``connectors.replica.Replica``)."""

    engine = "postgres"

    @staticmethod
    def build(target, directory: Path, say: Say = silent) -> StandbyReplica:
        """A new replica of ``target`` (a PostgresConnector) in ``directory``, started; ReplicaUnavailable (why, and
        what fixes it) when the target cannot feed one."""
        chosen = replica_check.method(replica_check.facts(target.dsn))
        return KINDS[chosen.name].build(target, directory, say)

    @staticmethod
    def open(directory: Path) -> StandbyReplica:
        """The replica built in ``directory`` (a record without a method is a standby's, from before there were
        two)."""
        record = read_record(directory)
        return KINDS[record.get("method", StandbyReplica.method)](directory, record)
