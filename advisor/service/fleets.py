"""Fleets: one schedule over many targets. A fleet schedule names its targets by a selector (``all``: every target
with a database; ``tag:NAME``: those tagged NAME, ``advisor targets tag``), read again at each firing, and each firing
is one **job** (``job_id`` on every run it starts, what the faces group the runs by).

A firing fans out one task per target: on a Ray cluster (``advisor serve --ray``, ``ADVISOR_RAY``, or the schedule's
own ``ray``) each a Ray task of one CPU that opens the store itself (``Store.location``: the shared PostgreSQL store,
or a DuckDB file through the process that holds it) with this process's ``ADVISOR_*`` settings (the key the
credentials are encrypted with) and does what a one-target schedule's firing does for its
target (watch its applied changes, then each planned run); without Ray, the same tasks on this process's threads
(``max_parallel_runs`` at a time). Runs of one database never overlap: the run's admission refuses a second one,
whichever process asks (``Store.add_run_unless_active``), and a refused run is recorded as skipped, in the job. A
task whose worker is lost is recorded as a failed run of its target with the reason, never lost.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from advisor.core.errors import AdvisorError
from advisor.core.inputs import check_name
from advisor.service.auth import Principal
from advisor.storage.store import new_id

ALL = "all"
TAG = "tag:"


def check_selector(selector: str) -> str:
    """``all`` or ``tag:NAME`` (a name as targets have), else AdvisorError.

    >>> check_selector("tag:nightly"), check_selector("all")
    ('tag:nightly', 'all')
    >>> check_selector("nightly")
    Traceback (most recent call last):
    advisor.core.errors.AdvisorError: a fleet is 'all' or 'tag:NAME' (targets tagged NAME), got 'nightly'
    """
    selector = (selector or "").strip()
    if selector == ALL:
        return selector
    if selector.startswith(TAG) and selector[len(TAG):]:
        check_name("tag", selector[len(TAG):])
        return selector
    raise AdvisorError(f"a fleet is 'all' or 'tag:NAME' (targets tagged NAME), got {selector!r}")


def members(store, selector: str) -> list[dict]:
    """The targets ``selector`` names now, by name: registered ones (a database to tune), tagged where it says."""
    tag = selector[len(TAG):] if selector.startswith(TAG) else None
    return [t for t in store.targets() if t["registered"] and (tag is None or tag in (t.get("tags") or []))]


def run_fleet(service, schedule: dict, fired_at: float, member: Callable[..., int],
              failed: Callable[[Any, dict, str, str, str], None]) -> list[dict]:
    """One firing of a fleet schedule, already claimed (``scheduling.run_scheduled``): a job over its members (see
    the module docstring). ``member(service,
    schedule, target_id, job_id, fired_at)``: one member's firing (``scheduling.member_firing``, a module-level
    function: Ray sends it by name); ``failed(store, schedule, target_id, job_id, why)``: a member whose task was
    lost, recorded. Returns every run the job recorded."""
    from advisor.tuning.executors import ray_address

    store = service.store
    who = Principal(f"schedule:{schedule['id']}", "operator")
    job_id = new_id()
    targets = members(store, schedule["fleet"])
    address = ray_address(schedule["plan"].get("ray"))
    store.audit(who.actor, "fleet_job", schedule["id"], {"job_id": job_id, "fleet": schedule["fleet"],
                                                         "targets": [t["name"] for t in targets],
                                                         "where": "ray" if address else "in-process"})
    if not targets:
        return []
    if address:
        _on_ray(service, schedule, targets, job_id, fired_at, address, member, failed)
    else:
        from advisor.core.settings import get_settings

        with ThreadPoolExecutor(max(1, min(len(targets), get_settings().max_parallel_runs)),
                                thread_name_prefix="fleet") as pool:
            futures = {pool.submit(member, service, schedule, t["id"], job_id, fired_at): t for t in targets}
        for future, t in futures.items():  # a member that raised (a cancelled run, a bug) is recorded, not lost
            error = future.exception()
            if error is not None:
                failed(store, schedule, t["id"], job_id,
                       f"the fleet's task for {t['name']} failed ({type(error).__name__})")
    return store.runs(job_id=job_id)


def _remote_member(service_class: type, member: Callable[..., int], location: str, schedule: dict, target_id: str,
                   job_id: str, fired_at: float) -> int:
    """A Ray task: the store opened where it runs, a service over it, one member's firing."""
    from advisor.storage.store import open_store

    service = service_class(open_store(location, remote=True))
    try:
        return member(service, schedule, target_id, job_id, fired_at)
    finally:
        service.store.close()


def _on_ray(service, schedule: dict, targets: list[dict], job_id: str, fired_at: float, address: str,
            member: Callable[..., int], failed: Callable[[Any, dict, str, str, str], None]) -> None:
    import ray

    from advisor.tuning.executors.on_ray import connect

    connect(address, 2, service.say)
    # every process sharing a store needs its settings (the key its credentials are encrypted with, above all):
    # the tasks get this process's ADVISOR_* settings, as Ray passes environments
    # (not ADVISOR_RAY: a member's own trials run in its task's process; a task asking the cluster for more
    # workers while the fleet holds its CPUs would wait on itself)
    env = {k: v for k, v in os.environ.items() if k.startswith("ADVISOR_") and k != "ADVISOR_RAY"}
    task = ray.remote(num_cpus=1, max_retries=0)(_remote_member).options(runtime_env={"env_vars": env})
    location = service.store.location()
    pending = {task.remote(type(service), member, location, schedule, t["id"], job_id, fired_at): t
               for t in targets}
    started = time.monotonic()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=4.0)
        if not ready:
            service.say(f"fleet job {job_id}: {len(pending)} target(s) still running on Ray "
                        f"({time.monotonic() - started:.0f} s)")
            continue
        for ref in ready:
            target = pending.pop(ref)
            try:
                ray.get(ref)
            except ray.exceptions.RayError as e:  # lost with its worker, or a bug: the member's runs say so
                cause = getattr(e, "cause", None)
                why = (f"the fleet's Ray task for {target['name']} failed ({type(cause).__name__})" if cause is not None
                       else f"the fleet's Ray task for {target['name']} was lost ({type(e).__name__})")
                failed(service.store, schedule, target["id"], job_id, why)
