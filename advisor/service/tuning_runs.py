"""AdvisorService's tuning runs of registered targets: start one (queued, executed by the executor or at once),
execute, cancel, list, recover the ones a killed process left. A mixin of ``advisor.service.service.AdvisorService``
(it uses its ``store``, ``say``, ``executor`` and its tuning method, ``tune``)."""

from __future__ import annotations

import os

from advisor.service.auth import ADMIN, Principal
from advisor.service.ids import full_id
from advisor.core import processes
from advisor.core.errors import AdvisorError, Conflict
from advisor.service import run_state
from advisor.service.runs import ACTIVE, ProgressLog, RunCancelled, RunPlan
from advisor.storage.store import new_id
from advisor.tuning import kinds
from connectors import factory


class TuningRunsMixin:
    # --- tuning runs ----------------------------------------------------------------------------------------

    def start_run(self, ref: str | None, plan: RunPlan, who: Principal = ADMIN, *, schedule_id: str | None = None,
                  wait: bool | None = None, target_id: str | None = None, job_id: str | None = None) -> dict:
        """Queue a tuning run of a registered target (a user's ``ref``, or its id: ``target_id``); it runs on the
        executor (or here when there is none, or ``wait``). ``Conflict`` when the target already has a run going
        on. A token's holder or a schedule gets the plan a remote face may run (``kinds.checked(plan, remote=True)``:
        a key file only from the server's key files directory), checked again when the run starts. ``job_id``: the
        fleet firing it belongs to (``advisor.service.fleets``)."""
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
                                         schedule_id=schedule_id, job_id=job_id)
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
        run_state.running(self.store, run_id)
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
            run_state.failed(self.store, [run_id], message, cancelled=isinstance(e, RunCancelled))
            return self.store.run(run_id)
        outcome = worker.outcome(kinds.get(plan.kind), result)
        progress(f"done: {outcome['message']}")
        progress.flush()
        run_state.done(self.store, [run_id], outcome)
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
