"""Fleets over REST and on the pages: a target tagged over the API, a fleet schedule added over the API (a bad
selector refused by the schema, one that selects no target yet in one line), fired, and its job shown as one: the
API's job document and the job page with each target's run, linked from the runs list. (On Ray:
tests/advisor/service/test_fleets.)"""

from __future__ import annotations

from tests.web.test_rewrite_pages import log_in

RUN = {"kind": "indexes", "optimizer": "extend", "budget_mb": 50, "validate": False}


def test_a_fleet_schedule_over_rest_and_its_job_page(app_client, tokens, prod, monkeypatch):
    monkeypatch.delenv("ADVISOR_RAY", raising=False)
    client, service = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op).status_code == 201
    r = client.put("/api/targets/prod/tags", json={"tags": ["nightly"]}, headers=op)
    assert r.status_code == 200 and r.json()["tags"] == ["nightly"]
    bad = client.post("/api/schedules/fleet", json={"fleet": "nightly", "cron": "0 2 * * *", "runs": [RUN]},
                      headers=op)
    assert bad.status_code == 422  # not 'all' nor 'tag:NAME'
    empty = client.post("/api/schedules/fleet", json={"fleet": "tag:weekly", "cron": "0 2 * * *", "runs": [RUN]},
                        headers=op)
    assert empty.status_code == 404 and "advisor targets tag NAME weekly" in empty.json()["message"]
    r = client.post("/api/schedules/fleet", json={"fleet": "tag:nightly", "cron": "0 2 * * *", "runs": [RUN]},
                    headers=op)
    assert r.status_code == 201, r.text
    s = r.json()
    assert s["fleet"] == "tag:nightly" and s["target_name"] == "fleet tag:nightly"
    (run,) = service.run_schedule(s["id"])
    assert run["state"] == "done" and run["job_id"]
    job = client.get(f"/api/schedules/jobs/{run['job_id']}", headers=op).json()
    assert job["states"] == {"done": 1} and job["runs"][0]["target_name"] == "prod"
    assert job["schedule_id"] == s["id"]
    log_in(client, op)
    page = client.get(f"/jobs/{run['job_id']}").text
    assert f"Fleet job {run['job_id']}" in page and "prod" in page and f"/runs/{run['id']}" in page
    assert f'href="/jobs/{run["job_id"]}"' in client.get("/runs").text
