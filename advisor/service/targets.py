"""AdvisorService's registered targets: add, update, list, remove, observe, their snapshots. A mixin of
``advisor.service.service.AdvisorService`` (it uses its ``store`` and ``say``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.service.auth import ADMIN, Principal, refuse_borrowed_identity
from advisor.core.errors import AdvisorError, Conflict, OtherDatabase
from advisor.core.identity import describe, mismatch
from advisor.core.inputs import check_name
from advisor.storage.secrets import vault_for
from connectors import factory

if TYPE_CHECKING:
    from advisor.tuning.observe import Observation


def is_own_target(target: dict) -> bool:
    """Whether ``target`` is a target of its own (``Store.own_target``): no DSN, never registered."""
    return not target["dsn"] and not target["registered"]


class TargetsMixin:
    # --- targets --------------------------------------------------------------------------------------------

    def add_target(self, name: str, dsn: str, who: Principal = ADMIN, hardware: dict | None = None, *,
                   replica: bool = False) -> dict:
        """Register a database: check that it can be observed, keep its DSN encrypted, take a first snapshot (the
        history of the targets observed by hand for the same database joins it). ``Conflict`` naming the target
        already registered for that database, whatever DSN reached it: one database is one target.
        ``hardware``: what its server runs on, as the user gives it (``advisor.core.hardware.given``), stored.
        ``replica``: build its warm replica too (``build_replica``: checked before anything is stored, built in
        this thread on the command line, in the background on the server)."""
        who.require("operator")
        check_name("target", name)  # before any connection: a name that cannot be stored fails first
        refuse_borrowed_identity(who, dsn)  # a Unix socket over REST or the UI: the server's OS user is no credential
        connector = factory.connector(dsn)  # an engine not supported fails here, before anything is stored
        self._notice_scheme(dsn)
        connector.observe()  # reachable, with statement statistics: fails here with a clear message otherwise
        identity = connector.identity()  # one database is one target, whatever DSN reaches it
        self._check_one_target(identity, name)
        missing = connector.replica_requirements() if replica else []
        if missing:  # refused before anything is stored: `advisor targets check` says the same, one line each
            from connectors.replica import ReplicaUnavailable

            raise ReplicaUnavailable("this database cannot feed a replica: " + "; ".join(
                f"{what} (fix: {fix})" for what, fix in missing) + "; or add the target without a replica")
        shown = connector.display_name
        # Conflict when the name is registered: a target's database never changes by registering it again
        target_id = self.store.register_target(name, connector.engine, shown, vault_for(self.store.path).encrypt(dsn))
        self.store.audit(who.actor, "register_target", target_id, {"name": name, "dsn": shown,
                                                                    **({"hardware": hardware} if hardware else {})})
        if hardware:
            self.store.set_target_hardware(target_id, hardware)
        self.observe(dsn, name)
        if replica:
            self.build_replica(name, who)
        return self.with_replica(self.store.target_by_id(target_id))

    def update_target(self, ref: str, dsn: str, who: Principal = ADMIN, *, other_database: bool = False) -> dict:
        """Change a registered target's DSN (a new password, host or port), audited. The new DSN must reach the
        same database (its identity) unless ``other_database``; recommendations keep the identity they were
        validated for, so an apply never follows a target to another database."""
        who.require("operator")
        target = self.store.target(ref)
        refuse_borrowed_identity(who, dsn)
        connector = factory.connector(dsn)
        self._notice_scheme(dsn)
        if connector.engine != target["engine"]:
            raise AdvisorError(f"target {target['name']} is a {target['engine']} database; the new DSN is "
                               f"{connector.engine}")
        identity = connector.identity()
        recorded = self.store.target_identity(target["id"])
        why = mismatch(recorded, identity)
        if why and not other_database:
            raise OtherDatabase(f"the new DSN of target {target['name']} reaches {why}; to point the target at "
                                "another database, say so (--other-database / \"other_database\": true)")
        self._check_one_target(identity, target["name"])  # other_database never reaches another target's database
        shown = connector.display_name
        self.store.set_target_dsn(target["id"], shown, vault_for(self.store.path).encrypt(dsn), identity)
        self.store.audit(who.actor, "update_target", target["id"],
                         {"name": target["name"], "dsn_from": target["dsn"], "dsn_to": shown,
                          **({"identity_from": recorded, "identity_to": identity} if why else {})})
        return self.store.target_by_id(target["id"])

    def _check_one_target(self, identity: dict | None, name: str) -> None:
        """``Conflict`` naming the target registered for the database ``identity`` names when that is another
        target than ``name``: one database is one target, at registration and at a change of DSN alike."""
        twin = self.store.target_with_identity(identity, registered_only=True)
        if twin is not None and twin["name"] != name:
            raise Conflict(f"this database ({describe(identity)}) is registered already as target {twin['name']!r}; "
                           f"use that target (a new DSN for it: `advisor targets update {twin['name']}`)")

    def targets(self) -> list[dict]:
        """Every target, each with its replica's status and lag (``replica``, ``replica_status``)."""
        return [self.with_replica(t) for t in self.store.targets()]

    def target_names(self) -> dict[str, str]:
        """Target id -> name, for the lists that show a target by its name (runs, schedules)."""
        return {t["id"]: t["name"] for t in self.store.targets()}

    def target(self, ref: str | None = None, *, target_id: str | None = None) -> dict:
        """A target by a user's reference (id or name), or by its id only (``target_id``), with its replica."""
        return self.with_replica(self.store.target_by_id(target_id) if target_id is not None
                                 else self.store.target(ref or ""))

    def tag_target(self, ref: str, tags: list[str], who: Principal = ADMIN) -> dict:
        """Set a target's tags (a fleet schedule's ``tag:NAME`` selects by them), replacing the ones it had."""
        who.require("operator")
        from advisor.core.inputs import check_name

        target = self.store.target(ref)
        tags = [check_name("tag", t.strip()) for t in tags if t.strip()]
        self.store.set_tags(target["id"], tags)
        self.store.audit(who.actor, "tag_target", target["id"], {"name": target["name"], "tags": sorted(set(tags))})
        return self.target(target_id=target["id"])

    def remove_target(self, ref: str, who: Principal = ADMIN) -> None:
        who.require("operator")
        target = self.store.target(ref)
        if self.store.runs(target["id"], state="running") or self.store.runs(target["id"], state="queued"):
            raise Conflict(f"target {target['name']} has a tuning run going on; wait for it to end")
        applied = self.store.recommendations("applied", target["id"])
        if applied:  # its credentials are what a rollback (by hand or by the watch) needs
            raise Conflict(f"target {target['name']} has applied change(s) (recommendation "
                           f"{', '.join(r.id for r in applied)}); roll them back first, then remove it")
        self.remove_replica(target["id"])  # its server stopped, its slot dropped, its data deleted
        self.store.remove_target(target["id"])
        self.store.audit(who.actor, "remove_target", target["id"], {"name": target["name"]})

    def _database_dsn(self, target: dict) -> str | None:
        """``_dsn``, or None for a target of its own (no database: runs that need none, ``Kind.own_target``)."""
        return None if is_own_target(target) else self._dsn(target)

    def _dsn(self, target: dict) -> str:
        creds = self.store.target_credentials(target["id"])
        if creds is None and is_own_target(target):
            raise AdvisorError(f"target {target['name']} holds runs that need no database ({target['engine']}): it "
                               "has no database to observe or change")
        if creds is None:
            raise AdvisorError(f"target {target['name']} was only observed with a DSN given on the command line; "
                               "register it (advisor targets add) so that its credentials are stored")
        return vault_for(self.store.path).decrypt(creds)

    def observe_target(self, ref: str, who: Principal = ADMIN) -> Observation:
        who.require("operator")
        target = self.store.target(ref)
        return self.observe(self._dsn(target), target["name"])

    def _target_id(self, ref: str | None, target_id: str | None) -> str | None:
        """The id of the target a user's ``ref`` (id or name) means, or ``target_id`` as it is: pages and jobs that
        hold a target's id pass it so, and an id is never read as a name (``Store.target`` refuses a reference
        that could mean two targets)."""
        if target_id is not None:
            return self.store.target_by_id(target_id)["id"]
        return self.store.target(ref)["id"] if ref else None

    def snapshots(self, ref: str | None = None, limit: int | None = None, offset: int = 0, *,
                  target_id: str | None = None) -> list[dict]:
        """The target's snapshots, newest first."""
        return self.store.snapshots(self._target_id(ref, target_id), limit=limit, offset=offset, newest_first=True)

    def count_snapshots(self, ref: str) -> int:
        return self.store.count_snapshots(self.store.target(ref)["id"])
