"""AdvisorService's operations on registered targets: targets, tuning runs, the recommendation lifecycle down to
production, and schedules. A mixin of ``advisor.service.service.AdvisorService`` (it uses its ``store``, ``say``,
``executor`` and ``scheduler``, and its tuning methods), kept apart so that each module stays readable."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from advisor.service.auth import ADMIN, Principal, refuse_borrowed_identity
from advisor.service.ids import full_id
from advisor.core import processes
from advisor.core.domain import Recommendation
from advisor.core.errors import AdvisorError, Conflict, OtherDatabase
from advisor.core.identity import describe, mismatch
from advisor.core.inputs import check_name, check_text
from advisor.service.production import apply_recommendation, check_applicable, reapprove, rollback_recommendation
from advisor.service.runs import ACTIVE, ProgressLog, RunCancelled, RunPlan
from advisor.service.summary import Summary, predicted_gain, summarize, tone
from advisor.service import watch
from advisor.storage.secrets import vault_for
from advisor.core.settings import get_settings
from advisor.storage.store import new_id
from advisor.tuning import kinds
from connectors import factory
from connectors.base import Connector

if TYPE_CHECKING:
    from advisor.tuning.observe import Observation


def is_own_target(target: dict) -> bool:
    """Whether ``target`` is a target of its own (``Store.own_target``): no DSN, never registered."""
    return not target["dsn"] and not target["registered"]


class OperationsMixin:
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

    # --- tuning runs ----------------------------------------------------------------------------------------

    def start_run(self, ref: str | None, plan: RunPlan, who: Principal = ADMIN, *, schedule_id: str | None = None,
                  wait: bool | None = None, target_id: str | None = None) -> dict:
        """Queue a tuning run of a registered target (a user's ``ref``, or its id: ``target_id``); it runs on the
        executor (or here when there is none, or ``wait``). ``Conflict`` when the target already has a run going
        on. A token's holder or a schedule gets the plan a remote face may run (``kinds.checked(plan, remote=True)``:
        a key file only from the server's key files directory), checked again when the run starts."""
        who.require("operator")
        remote = who.remote or schedule_id is not None
        plan = kinds.checked(plan)
        entry = kinds.get(plan.kind)
        target = self.target(ref, target_id=target_id) if ref is not None or target_id is not None else None
        if remote:  # after the target: an unknown target is a 404 whatever the plan asks
            plan = kinds.checked(plan, remote=True)
        if target is None:  # a plan that needs no database goes under its kind's target of its own (Kind.own_target)
            own = entry.target_of_its_own(plan)
            if own is None:
                raise AdvisorError(f"this {plan.kind} run needs a target database: give a target")
            self.check_plan_on(None, plan)
            target = self.target(target_id=self.store.own_target(own, entry.own_target_engine))
        else:  # registered, its credentials decrypt, and it takes the plan
            dsn = self._database_dsn(target)
            if dsn is None and entry.target_of_its_own(plan) is None:
                raise AdvisorError(f"target {target['name']} has no database; this {plan.kind} run needs one")
            self.check_plan_on(factory.connector(dsn) if dsn else None, plan)
        run_id = new_id()
        # one store call checks and records (a DuckDB store's holder does it under its lock for every process): runs
        # of one database never overlap; a kind that runs other kinds (all) has no optimizer of its own: the row
        # names the kind
        self.store.add_run_unless_active(run_id, target["id"], plan.kind, plan.optimizer or plan.kind,
                                         {"plan": plan.to_dict(), **({"remote": True} if remote else {})},
                                         active=ACTIVE, state="queued", started_by=who.starter,
                                         schedule_id=schedule_id)
        self.store.audit(who.actor, "start_run", run_id, {"target": target["name"], "plan": plan.to_dict()})
        if self.executor is not None and not wait:
            self.executor.submit(run_id)
        else:
            self.execute_run(run_id)
        return self.store.run(run_id)

    def execute_run(self, run_id: str) -> dict:
        """Do a queued run: observe, tune, validate, store the recommendation. Failures are recorded on the run
        (state failed, with the message); the run's row says how it ended."""
        run = self.store.run(run_id)
        if run["state"] != "queued":
            raise Conflict(f"tuning run {run_id} is {run['state']}, not queued")
        plan = kinds.stored_plan(run["options"]["plan"])
        cancelled = (lambda: self.executor.cancelled(run_id)) if self.executor is not None else (lambda: None)
        progress = ProgressLog(self.store, run_id, self.say, cancelled=cancelled)
        self.store.update_run(run_id, state="running")
        worker = type(self)(self.store, progress)
        try:
            target = self.store.target_by_id(run["target_id"])
            if run["options"].get("remote"):  # what a remote face asked for, confined again as it starts
                plan = kinds.checked(plan, remote=True)
            result = worker._tune_plan(self._database_dsn(target), target["name"], plan, run_id)
        except Exception as e:  # noqa: BLE001 - every failure ends the run with its message, never silently
            message = str(e) if isinstance(e, (AdvisorError, RunCancelled)) \
                else f"internal error ({type(e).__name__}: {e})"
            progress.cancelled = lambda: None
            progress(f"{'cancelled' if isinstance(e, RunCancelled) else 'failed'}: {message}")
            progress.flush()
            self.store.update_run(run_id, state="cancelled" if isinstance(e, RunCancelled) else "failed",
                                  error=message)
            return self.store.run(run_id)
        outcome = worker.outcome(kinds.get(plan.kind), result)
        progress(f"done: {outcome['message']}")
        progress.flush()
        prior = self.store.run(run_id)["result"] or {}
        self.store.update_run(run_id, state="done", result={**prior, **outcome})
        return self.store.run(run_id)

    def _tune_plan(self, dsn: str, name: str, plan: RunPlan, run_id: str):
        return self.tune(plan.kind, dsn, plan, name=name, run_id=run_id)

    def run(self, run_id: str) -> dict:
        return self.store.run(full_id(self.store, "tuning run", run_id))

    def cancel_run(self, run_id: str, who: Principal = ADMIN) -> dict:
        """Ask a queued or running run to stop (it stops at its next step and stops its shadow)."""
        who.require("operator")
        run = self.run(run_id)
        run_id = run["id"]
        if run["state"] not in ACTIVE:
            raise Conflict(f"tuning run {run_id} is {run['state']}; only a queued or running run can be cancelled")
        if self.executor is None:
            raise Conflict(f"tuning run {run_id} is not running in this process; stop the process running it")
        self.executor.cancel(run_id, f"cancelled by {who.actor}")
        self.store.audit(who.actor, "cancel_run", run_id, {})
        return run

    def runs(self, target: str | None = None, state: str | None = None, limit: int | None = None,
             offset: int = 0, *, target_id: str | None = None) -> list[dict]:
        """Runs, newest first, each with its target's name (``target_name``; None for a target removed)."""
        rows = self.store.runs(self._target_id(target, target_id), state=state, limit=limit, offset=offset,
                               newest_first=True)
        names = self.target_names()
        return [{**r, "target_name": names.get(r["target_id"])} for r in rows]

    def count_runs(self, target: str | None = None, state: str | None = None) -> int:
        return self.store.count_runs(self.store.target(target)["id"] if target else None, state)

    def trials(self, run_id: str) -> list[dict]:
        return self.store.trials(self.run(run_id)["id"])

    def recover_runs(self, *, gone_only: bool = False) -> list[str]:
        """Mark runs left queued or running by a process that stopped as interrupted, with the reason; their ids.
        A run whose owner process is gone (``processes.alive`` is False: killed, say with ``kill -9``) always is.
        On a store shared by several processes, no other is (one of a live process, or of another host, is left
        to that process or that host). A DuckDB store is held by one process, which the others ask
        (``advisor.storage.remote``): a run there with no owner recorded was cut, and so, at a server start
        (``gone_only`` False), was every run still going but those of other live processes (this process's
        previous server's, too). The service calls it with ``gone_only`` whenever it is built and on the
        server's reaper timer, right after the shadows of gone processes were stopped and removed
        (``factory.reap_orphans``), and without it when a server starts. Each mark is conditional on the run's row
        being as it was read (``Store.interrupt_run``): a run resumed meanwhile by another process is left alone."""
        stale = []
        for run in [r for st in ACTIVE for r in self.store.runs(state=st)]:
            owner = run.get("owner")
            alive = processes.alive(owner)
            mine = bool(owner) and owner.get("pid") == os.getpid()
            if alive is not False and (self.store.shared or (owner and (gone_only or not mine))):
                continue
            pid = (owner or {}).get("pid")
            who = f"the process running it (pid {pid})" if alive is False and pid else "the process running it"
            if self.store.interrupt_run(run["id"], run["updated_at"],
                                        f"{who} was killed or stopped before the run ended; its shadow server, if "
                                        "it had started one, was stopped and removed"):
                stale.append(run["id"])
        return stale

    # --- recommendations ------------------------------------------------------------------------------------

    def recommendations(self, state: str | None = None, *, kind: str | None = None, target: str | None = None,
                        run_id: str | None = None, limit: int | None = None, offset: int = 0) -> list[Recommendation]:
        target_id = self.store.target(target)["id"] if target else None
        return self.store.recommendations(state, target_id, kind=kind, run_id=run_id, limit=limit, offset=offset)

    def recommendation_summaries(self, state: str | None = None, *, kind: str | None = None,
                                 target: str | None = None, run_id: str | None = None, limit: int | None = None,
                                 offset: int = 0) -> list[dict]:
        """Small rows for lists: measured gain with its interval, its ``tone`` (``summary.tone``: never good for a
        rejected one) and the optimizer's predicted gain (what-if cost reduction for indexes; best trial against
        the baseline trial for a knob search), an estimate."""
        target_id = self.store.target(target)["id"] if target else None
        rows = self.store.recommendation_summaries(state, target_id, kind=kind, run_id=run_id, limit=limit,
                                                   offset=offset)
        for r in rows:
            r["predicted_gain"] = predicted_gain(r.pop("relative_cost"), r.pop("best_objective"),
                                                 r.pop("baseline_objective"))
            low, high = r.pop("gain_low"), r.pop("gain_high")
            r["gain_ci"] = [low, high] if r["gain"] is not None else None
            r["tone"] = tone(r["state"], r["gain"])
        return rows

    def count_recommendations(self, state: str | None = None, *, kind: str | None = None,
                              target: str | None = None, run_id: str | None = None,
                              target_id: str | None = None) -> int:
        return self.store.count_recommendations(state, self._target_id(target, target_id), kind, run_id)

    def recommendation(self, rec_id: str) -> Recommendation:
        """A recommendation by its id or a unique prefix of it (``advisor.service.ids``), as every method here
        that takes a recommendation's, a run's or a schedule's id."""
        return self.store.recommendation(full_id(self.store, "recommendation", rec_id))

    def run_of(self, rec: Recommendation) -> dict | None:
        """The tuning run that produced ``rec``, when it is known and still stored."""
        found = self.store.runs(run_id=rec.run_id) if rec.run_id else []
        return found[0] if found else None

    def predicted_gain(self, rec: Recommendation, run: dict | None = None) -> float | None:
        """``predicted_gain`` for one recommendation (``run``: its run, when the caller has it already)."""
        result = ((run if run is not None else self.run_of(rec)) or {}).get("result") or {}
        return predicted_gain((rec.details.get("whatif") or {}).get("relative_cost") if rec.details else None,
                              result.get("best_objective"), result.get("baseline_objective"))

    def headline(self, rec: Recommendation, run: dict | None = None) -> Summary:
        """The recommendation's headline numbers (``advisor.service.summary``), its predicted gain included."""
        return summarize(rec, self.predicted_gain(rec, run))

    def approve(self, rec_id: str, who: Principal = ADMIN, note: str = "") -> Recommendation:
        """validated -> approved; rolled_back -> approved, to re-apply it, while its evidence is fresh
        (``production.reapprove``)."""
        who.require("operator")
        rec_id = full_id(self.store, "recommendation", rec_id)
        rec = self.store.recommendation(rec_id)
        if rec.state == "rolled_back":
            return reapprove(self.store, rec, who, note)
        return self.store.transition(rec_id, "approved", who.actor, note or "approved", expect="validated")

    def reject(self, rec_id: str, who: Principal = ADMIN, note: str = "") -> Recommendation:
        who.require("operator")
        rec_id = full_id(self.store, "recommendation", rec_id)
        return self.store.transition(rec_id, "rejected", who.actor, note or "rejected by an operator")

    def connector_for(self, rec: Recommendation) -> Connector:
        """The connector of the production target a recommendation is for (its stored credentials)."""
        return factory.connector(self._dsn(self.store.target_by_id(rec.target_id)))

    def apply(self, rec_id: str, who: Principal = ADMIN) -> Recommendation:
        """Apply an approved, validated recommendation to its production target (see ``advisor.service.production``:
        no store lock is held meanwhile; a claim on the recommendation keeps a second apply out)."""
        who.require("operator")
        rec = self.recommendation(rec_id)
        check_applicable(rec)  # before the target's credentials are read: the state and kind decide first
        settings = get_settings()
        return apply_recommendation(self.store, self.connector_for(rec), rec, who,
                                    lock_timeout_s=settings.production_lock_timeout_s,
                                    claim_ttl_s=settings.apply_claim_ttl_s)

    def rollback(self, rec_id: str, who: Principal = ADMIN, why: str = "") -> Recommendation:
        who.require("operator")
        check_text("note", why)  # before production is touched: the note is stored only after the rollback ran
        rec = self.recommendation(rec_id)
        settings = get_settings()
        return rollback_recommendation(self.store, self.connector_for(rec), rec, who, why,
                                       lock_timeout_s=settings.production_lock_timeout_s,
                                       claim_ttl_s=settings.apply_claim_ttl_s)

    def check_watches(self, target: str | None = None, who: Principal = ADMIN, now: float | None = None) -> list[dict]:
        """Check the applied recommendations under watch (of ``target``, or all): roll back a regression, end the
        watches whose window passed (``advisor.service.watch``); one row per watch checked."""
        who.require("operator")
        return watch.check_watches(self, self._target_id(target, None), now)

    def audit_log(self, subject: str | None = None, limit: int | None = None, offset: int = 0) -> list[dict]:
        return self.store.audit_log(subject, limit, offset)
