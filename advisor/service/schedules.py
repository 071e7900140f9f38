"""AdvisorService's schedules: add, list, remove, fire and run a target's cron schedule. A mixin of
``advisor.service.service.AdvisorService`` (it uses its ``store``, ``scheduler``, ``_dsn`` and ``check_plan_on``),
one of its mixins by resource (``targets``, ``tuning_runs``, ``recommendations``, ``schedules``, ``access``,
``replicas``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from advisor.core.errors import AdvisorError, NotFound
from advisor.service.auth import ADMIN, Principal
from advisor.service.ids import full_id
from advisor.service.runs import RunPlan
from advisor.service.scheduling import AUTO_APPLY, check_cron, fire_text, next_fire, refuse_unsafe, run_scheduled
from advisor.tuning import kinds
from connectors import factory


class SchedulesMixin:
    # --- schedules ------------------------------------------------------------------------------------------

    def add_schedule(self, ref: str | None, cron: str, plans: Sequence[RunPlan], who: Principal = ADMIN, *,
                     timezone: str = "UTC", auto_apply: str = "none", auto_apply_knobs: Sequence[str] = (),
                     max_regression: float = 0.10) -> dict:
        """Tune ``ref`` by itself on a cron schedule (5 fields, e.g. ``0 2 * * *``): observe, run each plan,
        leave recommendations for approval; with ``auto_apply="reload_knobs"``, apply a validated knob
        recommendation whose changes all take effect on reload (and, when given, are all in
        ``auto_apply_knobs``), and roll it back at the next run if statements got ``max_regression`` slower.
        ``ref`` None (or a target of its own): runs that need no database, all under one target of its own
        (``Kind.own_target``: a learned index's synthetic keys), created once the schedule is checked."""
        who.require("operator")
        target = self.store.target(ref) if ref is not None else None
        dsn = self._database_dsn(target) if target is not None else None
        connector = factory.connector(dsn) if dsn else None  # opened once: the knob checks and the plan checks
        check_cron(cron, timezone)
        if auto_apply_knobs and connector is None:
            raise AdvisorError("auto_apply_knobs needs a target database")
        if auto_apply_knobs:
            catalog = connector.knob_catalog()
            unknown = [k for k in auto_apply_knobs if k not in catalog]
            if unknown:
                raise AdvisorError(f"auto_apply_knobs names settings the target does not have: {', '.join(unknown)}")
            refuse_unsafe(connector.knob_profile(), auto_apply_knobs)
        if auto_apply not in AUTO_APPLY:
            raise AdvisorError(f"unknown auto_apply {auto_apply!r}; expected one of {', '.join(AUTO_APPLY)}")
        if not plans:
            raise AdvisorError("a schedule needs at least one run")
        if not 0 < max_regression < 10:
            raise AdvisorError(f"max_regression must be a fraction in (0, 10), got {max_regression:g}")
        plans = [kinds.checked(p, remote=True) for p in plans]  # the server runs them: a remote face's plans, whoever asks
        for plan in plans:  # what the target refuses (a rewrite run's SQL) is refused now, not at a firing
            self.check_plan_on(connector, plan)
        if connector is None:  # no database: every run goes under the one target of its own they share
            owns = {kinds.get(p.kind).target_of_its_own(p) for p in plans}
            if None in owns or len(owns) != 1 or (target is not None and target["name"] not in owns):
                raise AdvisorError("a schedule without a target database takes only runs that need none, all of one "
                                   "source (a learned index's synthetic keys); give a target for the others")
            entry = kinds.get(plans[0].kind)
            target = target or self.store.target_by_id(self.store.own_target(owns.pop(), entry.own_target_engine))
        doc = {"runs": [p.to_dict() for p in plans], "auto_apply": auto_apply,
               "auto_apply_knobs": list(auto_apply_knobs), "max_regression": max_regression}
        schedule_id = self.store.add_schedule(target["id"], cron, timezone, doc, who.actor)
        self.store.audit(who.actor, "add_schedule", schedule_id, {"target": target["name"], "cron": cron, **doc})
        if self.scheduler is not None:
            self.scheduler.sync()
        return self.schedule(schedule_id)

    def add_fleet_schedule(self, fleet: str, cron: str, plans: Sequence[RunPlan], who: Principal = ADMIN, *,
                           timezone: str = "UTC", ray: str | None = None) -> dict:
        """Tune a fleet on a cron schedule: the targets ``fleet`` selects at each firing (``all``, or ``tag:NAME``:
        ``tag_target``), each firing one job of one task per target (``advisor.service.fleets``): on the Ray
        cluster ``ray`` (default: the server's ``ADVISOR_RAY``), else on this process's threads. Recommendations
        wait for approval (a fleet applies nothing by itself)."""
        from advisor.service.fleets import check_selector, members

        who.require("operator")
        fleet = check_selector(fleet)
        if not members(self.store, fleet):  # a selector that names nothing yet is a mistake, said before a firing
            raise NotFound(f"no registered target is in fleet {fleet!r}" + (
                f": tag some first (advisor targets tag NAME {fleet[4:]})" if fleet.startswith("tag:") else ""))
        check_cron(cron, timezone)
        if not plans:
            raise AdvisorError("a schedule needs at least one run")
        plans = [kinds.checked(p, remote=True) for p in plans]
        for plan in plans:
            if kinds.get(plan.kind).target_of_its_own(plan) is not None:
                raise AdvisorError(f"a fleet tunes its targets' databases; this {plan.kind} run needs none")
        doc = {"runs": [p.to_dict() for p in plans], "auto_apply": "none", "auto_apply_knobs": [],
               "max_regression": 0.10, **({"ray": ray} if ray else {})}
        schedule_id = self.store.add_schedule("", cron, timezone, doc, who.actor, fleet=fleet)
        self.store.audit(who.actor, "add_schedule", schedule_id, {"fleet": fleet, "cron": cron, **doc})
        if self.scheduler is not None:
            self.scheduler.sync()
        return self.schedule(schedule_id)

    def fleet_job(self, job_id: str) -> dict:
        """A fleet firing as one job: its runs (each with its target's name) and how many ended in each state."""
        runs = self.store.runs(job_id=job_id)
        names = self.target_names()
        states: dict[str, int] = {}
        for r in runs:
            states[r["state"]] = states.get(r["state"], 0) + 1
        return {"job_id": job_id, "schedule_id": runs[0]["schedule_id"] if runs else None,
                "runs": [{**r, "target_name": names.get(r["target_id"])} for r in runs], "states": states}

    scheduler = None  # an advisor.service.scheduling.Scheduler when the server runs one
    reaper = None  # the server's timer thread that removes orphaned sandboxes (advisor.service.factory)

    def schedules(self, target: str | None = None) -> list[dict]:
        """The schedules (of ``target``), each as ``schedule`` gives it."""
        rows = self.store.schedules(self.store.target(target)["id"] if target else None)
        names = self.target_names()
        return [self._shown(s, names) for s in rows]

    def schedule(self, schedule_id: str) -> dict:
        """A schedule with its target's name (``target_name``; None for a target removed), its next firing
        (``next_fire_at``), and its next and last firings as every face shows them (``next_fire_text``,
        ``last_fire_text``: in the schedule's own time zone, named, with UTC beside it)."""
        return self._shown(self.store.schedule(full_id(self.store, "schedule", schedule_id)), self.target_names())

    @staticmethod
    def _shown(s: dict, names: dict[str, str]) -> dict:
        at = next_fire(s["cron"], s["timezone"])
        name = f"fleet {s['fleet']}" if s.get("fleet") else names.get(s["target_id"])
        return {**s, "target_name": name, "next_fire_at": at,
                "next_fire_text": fire_text(at, s["timezone"]),
                "last_fire_text": fire_text(s["last_fire_at"], s["timezone"])}

    def remove_schedule(self, schedule_id: str, who: Principal = ADMIN) -> None:
        who.require("operator")
        schedule_id = full_id(self.store, "schedule", schedule_id)
        self.store.remove_schedule(schedule_id)
        self.store.audit(who.actor, "remove_schedule", schedule_id, {})
        if self.scheduler is not None:
            self.scheduler.sync()

    def fire_schedule(self, schedule_id: str, who: Principal = ADMIN) -> None:
        """Run a schedule's job now: in the background on the server's scheduler, else here."""
        who.require("operator")
        schedule_id = self.store.schedule(full_id(self.store, "schedule", schedule_id))["id"]
        self.store.audit(who.actor, "fire_schedule", schedule_id, {})
        if self.scheduler is not None:
            self.scheduler.fire_now(schedule_id)
        else:
            self.run_schedule(schedule_id)

    def run_schedule(self, schedule_id: str, fired_at: float | None = None, *, by_cron: bool = False) -> list[dict]:
        """What a schedule's job does when it fires; every run's outcome is on its row (schedule_id set).
        ``by_cron``: a firing of the cron trigger, which only one process sharing the store runs."""
        return run_scheduled(self, self.store.schedule(schedule_id), fired_at or time.time(), by_cron)
