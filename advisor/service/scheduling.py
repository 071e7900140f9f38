"""Nightly tuning: cron schedules per target, run by APScheduler 3 inside ``advisor serve``.

The schedules themselves live in the store (so the CLI can add one while the server is down, and they survive a
restart); the server's ``Scheduler`` turns them into APScheduler jobs with ``coalesce`` and ``max_instances=1``
and re-reads them whenever one is added or removed. Misfires: a fire time missed while the server was busy, or
down, runs once as soon as it can if it is less than ``misfire_grace_s`` late (several missed fire times count
once); one missed by more is recorded as a skipped run, so the gap is visible. Two runs of one target never
overlap: ``AdvisorService.start_run`` refuses the second, and a refused scheduled run is recorded as skipped.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone as tz
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED
from apscheduler.triggers.cron import CronTrigger

from advisor.service.auth import Principal
from advisor.core.domain import KnobChange
from advisor.core.names import did_you_mean
from advisor.core.errors import AdvisorError
from advisor.service.watch import check_watches, set_limit
from advisor.service.runs import kinds, lower_priority
from advisor.storage.store import new_id
from connectors import factory

AUTO_APPLY = ("none", "reload_knobs")
log = logging.getLogger("advisor.scheduler")


def check_timezone(timezone: str) -> None:
    """AdvisorError for a name that is not an IANA time zone (``Europe/Berlin``, ``UTC``), naming the zone and the
    closest names, not the cron fields.

    >>> check_timezone("Europe/Berlin")
    >>> check_timezone("Europe/Berlinn")
    Traceback (most recent call last):
    advisor.core.errors.AdvisorError: unknown time zone 'Europe/Berlinn'; did you mean 'Europe/Berlin'? (an IANA name such as 'Europe/Berlin' or 'UTC')
    """
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError, OSError):  # OSError: a name too long for a path
        close = did_you_mean(str(timezone), zoneinfo.available_timezones(), limit=1)
        raise AdvisorError(f"unknown time zone {timezone!r}{close} (an IANA name such as 'Europe/Berlin' or "
                           "'UTC')") from None


def trigger(cron: str, timezone: str = "UTC") -> CronTrigger:
    check_timezone(timezone)
    try:
        return CronTrigger.from_crontab(cron, timezone=timezone)
    except (ValueError, KeyError, LookupError) as e:
        raise AdvisorError(f"invalid cron schedule {cron!r} ({timezone}): {e}; expected 5 fields such as "
                           "'0 2 * * *' (02:00 every day)") from None


def check_cron(cron: str, timezone: str = "UTC") -> None:
    """AdvisorError for an expression APScheduler refuses, or one that never fires (``0 2 30 2 *``: February 30)."""
    trigger(cron, timezone)
    if next_fire(cron, timezone) is None:
        raise AdvisorError(f"the schedule {cron!r} never fires (no such date); check the day and month fields")


def next_fire(cron: str, timezone: str = "UTC", after: float | None = None) -> float | None:
    """The first fire time strictly after ``after`` (default now), unix seconds."""
    start = datetime.fromtimestamp(after if after is not None else time.time(), tz.utc) + timedelta(seconds=1)
    when = trigger(cron, timezone).get_next_fire_time(None, start)
    return when.timestamp() if when else None


def fire_text(at: float | None, timezone: str = "UTC") -> str:
    """A schedule's fire time as every face shows it: in the schedule's own time zone, named, with UTC beside it
    (its date too when that differs); "-" for none.

    >>> fire_text(1796000400.0, "Europe/Berlin")  # 2026-11-30 01:00 UTC
    '2026-11-30 02:00 Europe/Berlin (01:00 UTC)'
    >>> fire_text(1795991400.0, "Europe/Berlin")  # 2026-11-29 22:30 UTC
    '2026-11-29 23:30 Europe/Berlin (22:30 UTC)'
    >>> fire_text(1795995000.0, "Asia/Tokyo")  # 2026-11-29 23:30 UTC
    '2026-11-30 08:30 Asia/Tokyo (2026-11-29 23:30 UTC)'
    >>> fire_text(1796000400.0)
    '2026-11-30 01:00 UTC'
    """
    if not at:
        return "-"
    when_utc = datetime.fromtimestamp(at, tz.utc)
    try:
        local = when_utc.astimezone(ZoneInfo(timezone))
    except (ZoneInfoNotFoundError, ValueError, OSError):  # a zone this machine does not know: UTC only, said so
        return f"{when_utc:%Y-%m-%d %H:%M} UTC"
    if timezone.upper() in ("UTC", "ETC/UTC"):
        return f"{when_utc:%Y-%m-%d %H:%M} UTC"
    utc_part = f"{when_utc:%H:%M}" if local.date() == when_utc.date() else f"{when_utc:%Y-%m-%d %H:%M}"
    return f"{local:%Y-%m-%d %H:%M} {timezone} ({utc_part} UTC)"


def refuse_unsafe(profile, names) -> None:
    """AdvisorError naming those of ``names`` that no schedule applies by itself (the engine's unsafe and
    durability knobs, ``KnobProfile.never_auto_applied``)."""
    bad = profile.never_auto_applied(names)
    if bad:
        raise AdvisorError(f"auto_apply_knobs names settings that change correctness or durability, which a "
                           f"schedule never applies by itself: {', '.join(bad)}; leave them out (a recommendation "
                           "that changes them waits for approval)")


def _auto_applicable(rec, schedule_plan: dict, profile) -> bool:
    allowed = set(schedule_plan.get("auto_apply_knobs") or ())
    return (rec.state == "validated" and _auto_applies(rec.kind) and not rec.needs_restart and rec.changes
            and all(isinstance(c, KnobChange) and (not allowed or c.name in allowed) for c in rec.changes)
            and not profile.never_auto_applied([c.name for c in rec.changes]))


def _auto_applies(kind: str) -> bool:
    """Whether a schedule may apply a recommendation of ``kind`` by itself (``Kind.auto_applies``)."""
    return kind in kinds.names() and kinds.get(kind).auto_applies


def record_skip(store, schedule: dict, who: Principal, plan: dict, why: str, state: str = "skipped",
                job_id: str | None = None) -> dict:
    """A planned run that did not run (refused, missed, its fleet task lost), recorded with why, on the
    schedule's target (a fleet's: on each member, ``skip_members``)."""
    run_id = new_id()
    store.add_run(run_id, schedule["target_id"], plan["kind"], plan.get("optimizer") or plan["kind"], {"plan": plan},
                  state=state, started_by=who.actor, schedule_id=schedule["id"], job_id=job_id)
    store.update_run(run_id, error=why)
    return store.run(run_id)


def skip_members(store, schedule: dict, who: Principal, why: str, state: str) -> None:
    """``record_skip`` of each planned run on the schedule's target, or on each member of a fleet's."""
    from advisor.service.fleets import members

    ids = [t["id"] for t in members(store, schedule["fleet"])] if schedule.get("fleet") else [schedule["target_id"]]
    for target_id in ids:
        for plan in schedule["plan"]["runs"]:
            record_skip(store, {**schedule, "target_id": target_id}, who, plan, why, state=state)


def run_scheduled(service, schedule: dict, fired_at: float, by_cron: bool = False,
                  job_id: str | None = None) -> list[dict]:
    """One firing: check the watches of the target's applied changes (roll back on regression), then each
    planned run, then auto-apply what the schedule allows (its watch judged by the schedule's max_regression). A
    cron firing that another server sharing the store already took (the same slot) is left to it. A fleet's
    schedule fires its members (``advisor.service.fleets``), each this way, in one job (``job_id``)."""
    store = service.store
    who = Principal(f"schedule:{schedule['id']}", "operator")
    if by_cron and not store.claim_firing(schedule["id"], fired_at):
        store.audit(who.actor, "firing_taken", schedule["id"], {"fired_at": fired_at, "reason": "another "
                    "process sharing the store runs this firing"})
        return []
    if not by_cron:
        store.schedule_fired(schedule["id"], fired_at)
    if schedule.get("fleet"):
        from advisor.service.fleets import run_fleet

        return run_fleet(service, schedule, fired_at, member_firing, member_failed)
    plan = schedule["plan"]
    watch(service, schedule, who)

    def profile():  # the target's engine's knob facts, read when a recommendation may be applied
        return factory.connector(service._dsn(store.target_by_id(schedule["target_id"]))).knob_profile()
    runs = []
    for p in plan["runs"]:
        try:
            run = service.start_run(None, kinds.stored_plan(p), who, schedule_id=schedule["id"], wait=True,
                                    target_id=schedule["target_id"], job_id=job_id)
        except AdvisorError as e:
            runs.append(record_skip(store, schedule, who, p, str(e), job_id=job_id))
            continue
        runs.append(run)
        result = run.get("result") or {}
        # every recommendation of the run (a whole run has one per kind)
        rec_ids = result.get("recommendations") or ([result["recommendation"]] if result.get("recommendation") else [])
        for rec_id in rec_ids if plan.get("auto_apply") == "reload_knobs" and run["state"] == "done" else ():
            rec = store.recommendation(rec_id)
            if _auto_applicable(rec, plan, profile()):
                try:
                    service.approve(rec.id, who, "approved by the schedule: reload-only knobs it allows")
                    set_limit(store, service.apply(rec.id, who), plan.get("max_regression", 0.10))
                except AdvisorError as e:
                    store.audit(who.actor, "auto_apply_failed", rec.id, {"error": str(e)})
    return runs


def member_firing(service, schedule: dict, target_id: str, job_id: str, fired_at: float) -> int:
    """What a one-target schedule's firing does, for one member of a fleet's job (``advisor.service.fleets``); the
    number of runs it recorded. An error is recorded as the member's failed run, never raised (the other members
    go on)."""
    member = {**schedule, "target_id": target_id, "fleet": None}
    try:
        return len(run_scheduled(service, member, fired_at, job_id=job_id))
    except AdvisorError as e:
        member_failed(service.store, schedule, target_id, job_id, f"the fleet's task failed: {e}")
        return 0


def member_failed(store, schedule: dict, target_id: str, job_id: str, why: str) -> None:
    """A fleet member whose firing could not run: each planned run recorded as failed, with why, in the job."""
    who = Principal(f"schedule:{schedule['id']}", "operator")
    for p in schedule["plan"]["runs"]:
        record_skip(store, {**schedule, "target_id": target_id, "fleet": None}, who, p, why, state="failed",
                    job_id=job_id)


def watch(service, schedule: dict, who: Principal) -> list[dict]:
    """Check the watches of the schedule's target (``advisor.service.watch``: what was applied there, by hand or
    by a schedule, rolls back on a regression); what this schedule applied is judged by its ``max_regression``."""
    store = service.store
    for rec in store.recommendations("applied", schedule["target_id"]):
        if rec.applied and rec.applied.get("by") == who.actor:
            set_limit(store, rec, schedule["plan"].get("max_regression", 0.10))
    return check_watches(service, schedule["target_id"])


class Scheduler:
    """The server's scheduler: one APScheduler job per stored schedule."""

    def __init__(self, service, misfire_grace_s: float = 6 * 3600.0):
        from apscheduler.schedulers.background import BackgroundScheduler  # a server's: not for every CLI command

        self.service = service
        self.grace_s = misfire_grace_s
        self._aps = BackgroundScheduler(timezone="UTC", job_defaults={
            "coalesce": True, "max_instances": 1, "misfire_grace_time": int(misfire_grace_s)})
        self._aps.add_listener(self._on_event, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES | EVENT_JOB_ERROR)

    @property
    def running(self) -> bool:
        return self._aps.running

    def start(self) -> None:
        self._aps.start()
        self.sync()
        self.catch_up()

    def shutdown(self) -> None:
        if self._aps.running:
            self._aps.shutdown(wait=False)

    def sync(self) -> None:
        """Make the jobs match the stored schedules."""
        wanted = {s["id"]: s for s in self.service.store.schedules()}
        for job in self._aps.get_jobs():
            if job.id not in wanted and not job.id.startswith("now-"):
                job.remove()
        for sid, s in wanted.items():
            self._aps.add_job(self._fire, trigger(s["cron"], s["timezone"]), id=sid, args=[sid, True],
                              replace_existing=True, name=f"tune {s['target_id']}")

    def jobs(self) -> dict[str, float | None]:
        """schedule id -> next fire time (unix seconds) of the live jobs."""
        return {j.id: j.next_run_time.timestamp() if j.next_run_time else None for j in self._aps.get_jobs()}

    def catch_up(self, now: float | None = None) -> list[str]:
        """Fire times missed while the server was down: run once now when within the grace, else record them."""
        now = now or time.time()
        fired = []
        for s in self.service.store.schedules():
            missed = next_fire(s["cron"], s["timezone"], after=s["last_fire_at"] or s["created_at"])
            if missed is None or missed > now:
                continue
            if now - missed <= self.grace_s:
                self.fire_now(s["id"])
                fired.append(s["id"])
            else:
                who = Principal(f"schedule:{s['id']}", "operator")
                self.service.store.schedule_fired(s["id"], now)
                skip_members(self.service.store, s, who, "missed: the server was down at "
                             f"{datetime.fromtimestamp(missed, tz.utc):%Y-%m-%d %H:%M} UTC, more than "
                             f"{self.grace_s / 3600:g} h ago", state="missed")
        return fired

    def fire_now(self, schedule_id: str) -> None:
        self._aps.add_job(self._fire, "date", run_date=datetime.now(tz.utc), args=[schedule_id],
                          id=f"now-{schedule_id}", replace_existing=True, misfire_grace_time=None)

    def _fire(self, schedule_id: str, by_cron: bool = False) -> None:
        lower_priority()  # a job thread of the scheduler's pool: it only ever runs jobs
        try:
            self.service.run_schedule(schedule_id, by_cron=by_cron)
        except AdvisorError as e:  # the schedule was removed meanwhile, or its target
            log.warning("schedule %s: %s", schedule_id, e)

    def _on_event(self, event) -> None:
        what = {EVENT_JOB_MISSED: "missed", EVENT_JOB_MAX_INSTANCES: "still running",
                EVENT_JOB_ERROR: "error"}.get(event.code, str(event.code))
        self.service.store.audit("scheduler", "job_" + what.replace(" ", "_"), event.job_id,
                                 {"scheduled_for": str(getattr(event, "scheduled_run_time", "")),
                                  "error": repr(getattr(event, "exception", None)) if event.code == EVENT_JOB_ERROR
                                  else None})
        if event.code == EVENT_JOB_MAX_INSTANCES:  # a firing while the previous one still runs: recorded, skipped
            schedule_id = event.job_id.removeprefix("now-")
            try:
                schedule = self.service.store.schedule(schedule_id)
            except AdvisorError:  # removed meanwhile
                return
            who = Principal(f"schedule:{schedule_id}", "operator")
            skip_members(self.service.store, schedule, who, "skipped: the schedule's previous firing was still "
                         "running", state="skipped")
