"""What the lists of runs and schedules show a DBA, through REST and the pages: a target by its name, who started
each run, a schedule's next firing in its own time zone (named, UTC beside it), and a schedule storing only the
options of its kind."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from advisor.service.runs import COMMON, kinds
from advisor.storage.store import new_id
from tests.web.logins import log_in

BERLIN = {"cron": "0 2 * * *", "timezone": "Europe/Berlin", "runs": [{"kind": "all"}]}


def test_a_schedule_shows_its_target_by_name_and_its_next_firing_in_its_own_zone(app_client, tokens, prod):
    client, service = app_client
    op = tokens["operator"]
    assert client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op).status_code == 201
    r = client.post("/api/schedules", json={"target": "prod", **BERLIN}, headers=op)
    assert r.status_code == 201, r.text
    s = r.json()
    # a whole run's plan: its kind's options and the common ones, none of another kind's (a learned index's keys)
    (stored,) = s["plan"]["runs"]
    assert set(stored) == {"kind", *COMMON, *kinds.get("all").options}
    assert not {"keys", "workload", "index", "budget"} & set(stored)

    at = datetime.fromisoformat(s["next_fire_at"].replace("Z", "+00:00"))
    local = at.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (2, 0)
    expected = f"{local:%Y-%m-%d %H:%M} Europe/Berlin ({at:%H:%M} UTC)"  # 02:00 Berlin is the same UTC date
    assert s["next_fire_text"] == expected and s["target_name"] == "prod"
    (listed,) = client.get("/api/schedules", headers=op).json()["items"]
    assert listed["next_fire_text"] == expected and listed["target_name"] == "prod"

    assert log_in(client, op["Authorization"].removeprefix("Bearer ")).status_code == 303
    page = client.get("/schedules")
    assert page.status_code == 200
    assert expected in page.text and "<h2>prod</h2>" in page.text

    # a firing refused (the target is busy) is a run of the schedule: named after its target, started by it
    busy = new_id()
    service.store.add_run(busy, service.target("prod")["id"], "knobs", "hibo", {}, state="running")
    (skipped,) = service.run_schedule(s["id"])
    runs = {r["id"]: r for r in client.get("/api/runs", headers=op).json()["items"]}
    assert runs[skipped["id"]]["target_name"] == "prod"
    assert runs[skipped["id"]]["started_by"] == f"schedule:{s['id']}"
    page = client.get("/runs")
    row = page.text[page.text.index(f'href="/runs/{skipped["id"]}"') - 1500:page.text.index(
        f'href="/runs/{skipped["id"]}"')]
    assert "<td>prod</td>" in row and f"schedule:{s['id']}" in row
    # a run's Log says whether its lines are still to come or none were recorded (a skipped firing runs nothing)
    assert "(no log was recorded for this run)" in client.get(f"/runs/{skipped['id']}").text
    assert "(nothing logged yet)" in client.get(f"/runs/{busy}").text
