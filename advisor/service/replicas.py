"""AdvisorService's warm replicas: each registered target may have one, a local copy kept in sync by replication
(``connectors.replica``: built by ``factory.build_replica``, found again by ``factory.open_replica``), from which
every run takes thin clones as its shadows (``advisor.tuning.shadows``). Built when a target is added with
``replica=True`` or later (``build_replica``), in the caller's thread for the command line and as a background job
of the server's executor otherwise; checked (``replica_check``: what the target lacks, with the line that fixes
it), shown with its lag (``replica_status``), and removed with its target. Replicas live under the advisor's home:
``<home>/replicas/<target id>/``. A mixin of ``advisor.service.service.AdvisorService`` (it uses its ``store``,
``say``, ``executor`` and ``_dsn``)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from advisor.core import processes
from advisor.core.errors import AdvisorError, Conflict, NotFound
from advisor.core.progress import Say
from advisor.service.auth import ADMIN, Principal
from advisor.service.runs import RunCancelled
from advisor.tuning.shadows import Shadows
from connectors import factory
from connectors.replica import seed_of

BUILDING, READY = "building", "ready"


class ReplicasMixin:
    # --- where -----------------------------------------------------------------------------------------------

    def home(self) -> Path:
        """The advisor's home on this machine: beside a DuckDB store, else (a PostgreSQL store, whose replicas
        are this machine's) the user's data directory; a temporary folder for an in-memory store."""
        if self.store.path == ":memory:":
            return Path(tempfile.gettempdir()) / "db-advisor"
        if self.store.shared:
            return Path.home() / ".local" / "share" / "db-advisor"
        return Path(self.store.path).parent

    def replica_dir(self, target_id: str) -> Path:
        return self.home() / "replicas" / target_id

    # --- check, build, status, remove ------------------------------------------------------------------------

    def replica_readiness(self, ref: str) -> dict:
        """What ``advisor targets check`` and ``GET /api/targets/{ref}/check`` say: ``ready`` (nothing missing),
        ``missing`` (what a replica needs from the target and it lacks, each ``{"what", "fix"}``: the line that fixes
        it; ``Connector.replica_requirements``) and ``notes`` (what a replica would be built without, no blocker: a
        slower seed, say, one line each with its fix; ``connectors.factory.replica_notes``). Only reads the target."""
        connector = factory.connector(self._dsn(self.store.target(ref)))
        missing = connector.replica_requirements()
        return {"ready": not missing, "missing": [{"what": what, "fix": fix} for what, fix in missing],
                "notes": factory.replica_notes(connector)}

    def build_replica(self, ref: str, who: Principal = ADMIN, *, wait: bool | None = None) -> dict:
        """Build the target's warm replica (minutes on a large database, said as it goes): in this thread when the
        service has no executor (the command line) or ``wait``, else as a background job (the REST call returns
        at once, the targets page shows its progress). A ready replica is started if it stopped, not built again;
        a failed or abandoned build is cleared and built again. Returns the target's replica status."""
        who.require("operator")
        target = self.store.target(ref)
        recorded = self.store.replica(target["id"])
        if recorded is not None and recorded["state"] == READY:
            self._open(recorded).ensure_running(self.say)
            return self.replica_status(target["id"])
        if recorded is not None and recorded["state"] == BUILDING and processes.alive(recorded["owner"]) is not False:
            raise Conflict(f"the replica of target {target['name']} is being built (by pid "
                           f"{(recorded['owner'] or {}).get('pid', '?')}); its progress is in `advisor targets list`")
        connector = factory.connector(self._dsn(target))
        missing = connector.replica_requirements()
        if missing:  # before anything is made: the target lacks what replication needs
            from connectors.replica import ReplicaUnavailable

            raise ReplicaUnavailable(f"target {target['name']} cannot feed a replica: "
                                     + "; ".join(f"{what} (fix: {fix})" for what, fix in missing))
        if recorded is not None:
            self._discard(recorded, connector.dsn)
        directory = self.replica_dir(target["id"])
        self.store.set_replica(target["id"], connector.engine, str(directory), BUILDING,
                               owner=processes.this_process(), progress="starting")
        self.store.audit(who.actor, "build_replica", target["id"], {"name": target["name"]})
        if self.executor is not None and not wait:
            self.executor.submit_job(f"replica:{target['id']}", lambda: self._build(target, connector, directory))
        else:
            self._build(target, connector, directory, raise_errors=True)
        return self.replica_status(target["id"])

    def _build(self, target: dict, connector, directory: Path, raise_errors: bool = False) -> None:
        tid = target["id"]
        cancelled = (lambda: self.executor.cancelled("*")) if self.executor is not None else (lambda: None)

        def say(line: str) -> None:
            why = cancelled()
            if why:
                raise RunCancelled(why)
            self.say(f"replica of {target['name']}: {line}")
            self.store.replica_progress(tid, line)

        say(f"building a warm replica in {directory}")
        try:
            factory.build_replica(connector, directory, say)
        except (AdvisorError, RunCancelled) as e:
            self.store.set_replica(tid, connector.engine, str(directory), f"failed: {e}")
            if raise_errors:
                raise
            return
        self.store.set_replica(tid, connector.engine, str(directory), READY, built_at=time.time())
        self.say(f"replica of {target['name']}: ready")

    def replica_status(self, target_id: str) -> dict | None:
        """The target's replica as lists and pages show it: state, directory, built at, last progress line, and
        for a ready one its lag (``lag``: a line such as "12 kB behind, streaming"; ``behind_bytes``,
        ``behind_s``); None when the target has none. Never raises: a replica that cannot be read is "broken"."""
        recorded = self.store.replica(target_id)
        if recorded is None:
            return None
        doc = {k: recorded[k] for k in ("state", "engine", "directory", "built_at", "progress")}
        doc["seed"], doc["seed_reason"] = seed_of(Path(recorded["directory"]))  # how its copy was made, and why
        if recorded["state"] == BUILDING and processes.alive(recorded["owner"]) is False:
            doc["state"] = "failed: the process building it was killed; build it again (advisor targets replica)"
        if doc["state"] != READY:
            return {**doc, "lag": None, "behind_bytes": None, "behind_s": None}
        try:
            lag = self._open(recorded).lag()
        except (AdvisorError, OSError) as e:
            return {**doc, "lag": f"broken: {e}", "behind_bytes": None, "behind_s": None}
        return {**doc, "lag": lag.line(), "behind_bytes": lag.behind_bytes, "behind_s": lag.behind_s,
                "replication": lag.state}

    def with_replica(self, target: dict) -> dict:
        """A target's row with its replica's status (``replica``: None when it has none)."""
        return {**target, "replica": self.replica_status(target["id"])}

    def remove_replica(self, target_id: str) -> None:
        """Stop the target's replica, drop what it holds on the target where it can, delete its data."""
        recorded = self.store.replica(target_id)
        if recorded is not None:
            try:  # the slot is dropped with the target's own credentials (the replica's may be unreadable)
                dsn = self._dsn(self.store.target_by_id(target_id))
            except (AdvisorError, KeyError):
                dsn = None
            self._discard(recorded, dsn)
            self.store.forget_replica(target_id)

    def _open(self, recorded: dict):
        return factory.open_replica(recorded["engine"], Path(recorded["directory"]))

    def _discard(self, recorded: dict, target_dsn: str | None = None) -> None:
        """Remove what a recorded replica left (a ready one, or a failed or abandoned build's remains); what it
        could not drop on the target is said, with the SQL that drops it."""
        directory = Path(recorded["directory"])
        try:
            self._open(recorded).remove(target_dsn)
        except (AdvisorError, OSError) as e:  # a build that never got far has nothing to open: its directory goes
            self.say(f"replica in {directory}: {e}")  # (deleted below)
        if directory.exists() and not _mounted_under(directory):
            shutil.rmtree(directory, ignore_errors=True)

    # --- a run's shadows -------------------------------------------------------------------------------------

    def shadows_for(self, name: str | None, connector, say: Say) -> Shadows:
        """Where a run on the target called ``name`` (reached through the run's one ``connector``) takes its
        shadows: thin clones of its ready replica (the target's position read now, before the run observes it),
        else full copies. A target without a replica is not connected to here."""
        try:
            recorded = self.store.replica(self.store.target(name)["id"]) if name else None
        except NotFound:  # observed by hand under a name not stored yet
            recorded = None
        if recorded is None:
            return Shadows()
        if recorded["state"] != READY:
            return Shadows(unavailable=f"the replica is not ready: {recorded['state']}")
        try:
            replica = self._open(recorded)
        except AdvisorError as e:
            return Shadows(unavailable=f"the warm replica is unavailable: {e}")
        return Shadows.of_replica(replica, connector, say)


def _mounted_under(directory: Path) -> bool:
    """Whether a filesystem is still mounted at or under ``directory`` (never delete through a mount)."""
    root = str(directory.resolve())
    try:
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return False
    return any(m == root or m.startswith(root + "/") for m in mounts)
