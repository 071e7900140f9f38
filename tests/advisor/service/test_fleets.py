"""Fleets (``advisor.service.fleets``): one schedule over the targets a tag selects, fired as one job of one task
per target on a real local Ray cluster (loopback, two worker processes), every run recorded in a real PostgreSQL
store shared by the tasks' processes; runs of one target never overlap (a second firing at once is refused per
target and recorded as skipped); without Ray the same job runs on this process's threads. Five playground shops on
the session's server are the fleet (a sixth, untagged, stays out)."""

from __future__ import annotations

import os
import threading

import pytest
from cryptography.fernet import Fernet

from advisor.bench.playground import create_shop, run_shop_workload, shop_size
from advisor.core.errors import AdvisorError
from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from advisor.tuning import kinds
from tests.advisor.storage.test_store import pg_url

FLEET = 5


@pytest.fixture(scope="module")
def shops(pg):
    dsns = [create_shop(pg, f"fleet{i}", scale=0.02) for i in range(FLEET + 1)]
    orders, customers = shop_size(0.02)
    for dsn in dsns:  # each shop's workload in the statistics (a shop made later resets the server's)
        run_shop_workload(dsn, orders=orders, customers=customers)
    return dsns


@pytest.fixture
def service(pg, shops, monkeypatch):
    monkeypatch.setenv("ADVISOR_SECRET_KEY", Fernet.generate_key().decode())  # a PostgreSQL store's key
    store = Store(pg_url(pg))
    svc = AdvisorService(store)
    for i, dsn in enumerate(shops):
        svc.add_target(f"shop{i}", dsn)
        if i < FLEET:
            svc.tag_target(f"shop{i}", ["nightly", f"shard{i % 2}"])
    yield svc
    store.close()


def fleet_schedule(service, ray=None):
    plan = kinds.parse_plan({"kind": "indexes", "validate": False, "optimizer": "extend", "budget_mb": 50})
    return service.add_fleet_schedule("tag:nightly", "0 2 * * *", [plan], ray=ray)


def test_a_nightly_fleet_runs_on_ray_one_task_per_target_each_recorded(service, monkeypatch):
    monkeypatch.setenv("ADVISOR_RAY", "auto")
    s = fleet_schedule(service)
    assert s["fleet"] == "tag:nightly" and s["target_name"] == "fleet tag:nightly"
    runs = service.run_schedule(s["id"])
    assert len(runs) == FLEET and len({r["job_id"] for r in runs}) == 1
    names = service.target_names()
    assert sorted(names[r["target_id"]] for r in runs) == [f"shop{i}" for i in range(FLEET)]
    assert all(r["state"] == "done" and r["schedule_id"] == s["id"] for r in runs), [r["error"] for r in runs]
    job = service.fleet_job(runs[0]["job_id"])
    assert job["states"] == {"done": FLEET} and job["schedule_id"] == s["id"]
    (fired,) = [a for a in service.store.audit_log(s["id"]) if a["action"] == "fleet_job"]
    assert fired["detail"]["where"] == "ray" and sorted(fired["detail"]["targets"]) == sorted(
        names[r["target_id"]] for r in runs)
    # each run was executed by a Ray worker process (its owner), none by this one
    assert all(r["owner"]["pid"] != os.getpid() for r in runs) and len({r["owner"]["pid"] for r in runs}) >= 1


def test_two_firings_at_once_never_overlap_a_target(service, monkeypatch):
    """Two firings of the fleet at the same moment on this process's threads: each target runs once, its other
    planned run refused by the admission (one run per database) and recorded as skipped in its job."""
    monkeypatch.delenv("ADVISOR_RAY", raising=False)
    s = fleet_schedule(service)
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(service.run_schedule(s["id"]))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runs = [r for job in out for r in job]
    assert len(runs) == 2 * FLEET and len({r["job_id"] for r in runs}) == 2
    by_target: dict[str, list] = {}
    for r in runs:
        by_target.setdefault(r["target_id"], []).append(r)
    for rows in by_target.values():  # per target: runs never overlapped in time
        done = sorted((r for r in rows if r["state"] == "done"), key=lambda r: r["created_at"])
        for a, b in zip(done, done[1:]):
            assert a["updated_at"] <= b["created_at"]
        assert all(r["state"] in ("done", "skipped") for r in rows)
        assert all("already has tuning run" in (r["error"] or "") for r in rows if r["state"] == "skipped")


def test_a_fleet_selector_is_checked(service):
    plan = kinds.parse_plan({"kind": "indexes", "validate": False, "budget_mb": 50})
    with pytest.raises(AdvisorError, match="a fleet is 'all' or 'tag:NAME'"):
        service.add_fleet_schedule("nightly", "0 2 * * *", [plan])
    with pytest.raises(AdvisorError, match="invalid cron"):
        service.add_fleet_schedule("all", "0 2 * *", [plan])
    with pytest.raises(AdvisorError, match="no registered target is in fleet 'tag:weekly'"):  # a 404 over REST
        service.add_fleet_schedule("tag:weekly", "0 2 * * *", [plan])
