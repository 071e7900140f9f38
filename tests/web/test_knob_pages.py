"""A knob recommendation as a DBA reads it: each knob's current value beside the proposed one and its share of the
measured gain, in the CLI and on the recommendation page; the target's hardware as given through the REST API."""

from __future__ import annotations

import io

from rich.console import Console

from advisor.cli import render
from advisor.core.domain import Applied, KnobChange
from advisor.tuning.recommend import recommend
from tests.web.logins import log_in

CHANGES = (KnobChange("work_mem", "60MB"), KnobChange("shared_buffers", "1GB"))
SHARES = [{"knob": "work_mem", "current": "4MB", "proposed": "60MB", "share": 0.72, "saves": 0.4, "restart": False},
          {"knob": "shared_buffers", "current": "128MB", "proposed": "1GB", "share": 0.28, "saves": 0.15,
           "restart": True}]


def _validated(store):
    target_id = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    plan = Applied(CHANGES, ("ALTER SYSTEM SET work_mem = '60MB'", "ALTER SYSTEM SET shared_buffers = '1GB'"),
                   ("ALTER SYSTEM RESET work_mem", "ALTER SYSTEM RESET shared_buffers"), True)
    return recommend(store, target_id=target_id, kind="knobs", optimizer="hibo", plan=plan, accepted=None,
                     details={"knob_shares": SHARES})


def test_the_cli_and_the_page_show_current_to_proposed_with_each_share(app_client, tokens):
    client, service = app_client
    rec = _validated(service.store)
    console = Console(file=io.StringIO(), width=250)
    render.recommendation(console, rec)
    text = console.file.getvalue()
    assert "work_mem: 4MB -> 60MB (72% of the gain)" in text
    assert "shared_buffers: 128MB -> 1GB (needs a restart) (28% of the gain)" in text
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/recommendations/{rec.id}").text
    grid = page[page.index('id="changes"'):page.index("</section>", page.index('id="changes"'))]
    assert "4MB →</span> 60MB" in grid and "72% of the gain" in grid
    assert "128MB →</span> 1GB" in grid and "28% of the gain" in grid and "restart" in grid


def test_rest_registers_a_target_with_its_hardware(app_client, tokens, prod):
    client, _ = app_client
    r = client.post("/api/targets", json={"name": "sized", "dsn": prod, "memory_gb": 8, "cpus": 4},
                    headers=tokens["operator"])
    assert r.status_code == 201, r.text
    assert r.json()["hardware"] == {"memory_bytes": 8 * 1024**3, "cores": 4}
    assert client.get("/api/targets/sized", headers=tokens["viewer"]).json()["hardware"]["cores"] == 4
    bad = client.post("/api/targets", json={"name": "x", "dsn": prod, "cpus": 0}, headers=tokens["operator"])
    assert bad.status_code == 422
