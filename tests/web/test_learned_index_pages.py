"""The learned-index kind over REST and on the pages: a run started through ``/api/runs`` (its schema derived
from the kind registry) ends done with its evaluations; bad input is a 400/422 with one line before anything is
queued; the run form offers the kind with its fields; a learned-index recommendation's page shows the index's
parameters (the changed ones marked) and the defaults' and tuned measurements, and says it is never applied."""

from __future__ import annotations

import uuid

import pytest

from advisor.core.domain import LearnedIndexParam
from advisor.tuning.recommend import recommend
from tests.web.test_api import wait_run
from tests.web.test_rewrite_pages import log_in

RUN = {"kind": "learned-index", "keys": "synthetic:books:20000", "workload": "read-only", "index": "pgm",
       "budget": 3, "optimizer": "grid", "rounds": 2}


@pytest.fixture(scope="module")
def keys_db(pg):
    return pg.create_database("lip_" + uuid.uuid4().hex[:8])


def register(client, op, dsn) -> None:
    assert client.post("/api/targets", json={"name": "keys", "dsn": dsn}, headers=op).status_code == 201


def test_a_learned_index_run_over_rest(app_client, tokens, keys_db):
    client, service = app_client
    op = tokens["operator"]
    register(client, op, keys_db)
    r = client.post("/api/runs", json={"target": "keys", **RUN}, headers=op)
    assert r.status_code == 202, r.text
    done = wait_run(client, op, r.json()["id"], timeout_s=300)
    assert done["state"] == "done" and done["kind"] == "learned-index", done
    assert len(service.store.trials(done["id"])) == 3
    from web.pages.formats import plan_text  # how the runs pages show its plan
    assert plan_text(service.run(done["id"])["options"]["plan"]) == \
        "learned-index · grid · pgm · synthetic:books:20000 · read-only · 3 evaluations · 2 rounds"
    log_in(client, op)
    page = client.get(f"/runs/{done['id']}")  # the run's page: its trials, as any run's
    assert page.status_code == 200 and "learned-index" in page.text
    rec_id = done["result"]["recommendation"]
    if rec_id is None:
        assert "no configuration beat the defaults" in done["result"]["message"]
        return
    rec = client.get(f"/api/recommendations/{rec_id}", headers=op).json()
    assert rec["kind"] == "learned-index" and rec["applicable"] is False and rec["apply_sql"] == []
    assert rec["details"]["index"] == "pgm" and rec["details"]["evaluations"] == 3
    assert all(c["kind"] == "learned_index_param" for c in rec["changes"])
    page = client.get(f"/recommendations/{rec_id}").text
    assert 'id="learned-parameters"' in page and 'id="learned-figures"' in page


@pytest.mark.parametrize("fields, status, words", [
    ({"workload": "lookup=2,oops"}, 400, "unknown part 'oops'"),
    ({"keys": "no such source"}, 400, "unknown key source"),
    ({"index": "btree"}, 400, "unknown learned index 'btree'"),
    ({"keys": None}, 422, ""),
    ({"keys": "  "}, 422, ""),
    ({"range": ["nosuch=1:2"]}, 400, "unknown parameter 'nosuch'"),
    ({"optimizer": "magic"}, 422, ""),
    ({"budget": 1}, 422, ""),
])
def test_bad_learned_index_runs_are_refused_before_they_are_queued(app_client, tokens, keys_db, fields, status,
                                                                   words):
    client, _ = app_client
    op = tokens["operator"]
    register(client, op, keys_db)
    body = {"target": "keys", **RUN, **fields}
    r = client.post("/api/runs", json={k: v for k, v in body.items() if v is not None}, headers=op)
    assert r.status_code == status, r.text
    message = r.json().get("message") or str(r.json())
    assert words.lower() in message.lower() and "Traceback" not in message
    assert client.get("/api/runs", headers=op).json()["total"] == 0


def test_the_run_form_offers_the_kind_and_its_page_shows_parameters_and_measurements(app_client, tokens, keys_db):
    client, service = app_client
    op = tokens["operator"]
    register(client, op, keys_db)
    log_in(client, op)
    page = client.get("/runs").text
    assert '<option value="learned-index">learned-index</option>' in page
    assert 'name="keys"' in page and 'name="workload"' in page
    target_id = service.target("keys")["id"]
    details = {"index": "alex", "parameters": {"density": "0.9", "fanout": "64"},
               "default": {"throughput_ops": 1_000_000.0, "p99_ns": 900.0, "memory_bytes": 4_000_000.0,
                           "cpu_ns_per_op": 812.0},
               "tuned": {"throughput_ops": 1_500_000.0, "p99_ns": 700.0, "memory_bytes": 5_000_000.0,
                         "cpu_ns_per_op": 543.0},
               "evaluations": 6, "unsafe_evaluations": 1, "keys": "synthetic:books:20000",
               "workload": "read-heavy", "picked": "evaluation 4: the lowest median, the others over 2% higher",
               "unit": "thread CPU time per operation (ns, each phase weighted by its operations)", "unit_symbol": "ns"}
    rec = recommend(service.store, target_id=target_id, kind="learned-index", optimizer="hibo", plan=None,
                    changes=(LearnedIndexParam("density", "0.9"),), details=details, why="tuned")
    page = client.get(f"/recommendations/{rec.id}").text
    assert "Learned index recommendation" in page and "Never applied to the database." in page
    params = page[page.index('id="learned-parameters"'):]
    params = params[:params.index("</table>")]
    assert "<code>density</code>" in params and "<code>0.9</code> <span class=\"tag\">changed</span>" in params
    assert "<code>fanout</code>" in params and params.count("changed") == 2  # the class and the tag of one row
    grid = page[page.index('id="changes"'):]
    grid = grid[:grid.index("</div>\n  </div>")]
    assert '<code class="name">density</code><code class="value">0.9</code>' in grid and "()" not in grid
    figures = page[page.index('id="learned-figures"'):]
    figures = figures[:figures.index("</table>")]
    assert "1,000,000" in figures and "1,500,000" in figures and "900" in figures and "700" in figures
    assert "CPU time per operation" in figures and "812" in figures and "543" in figures
    assert "6 evaluations, 1 stopped as unsafe" in page
    assert "re-measured beside the defaults; picked evaluation 4: the lowest median, the others over 2% higher." in page
    assert 'id="apply"' not in page


def test_the_run_form_tunes_keys_with_no_database(app_client, tokens):
    """Issue 44, item 8: with no target chosen, a learned index's synthetic keys need no database: the run goes
    under the keys' own target (no DSN), as on the command line; a kind that needs a database is refused in one
    line and nothing is queued."""
    import html
    import re

    client, service = app_client
    op = tokens["operator"]
    log_in(client, op)
    page = client.get("/runs").text
    assert '<option value="">no database' in page  # offered with no target registered at all
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"target": "", "csrf": csrf, **{k: str(v) for k, v in RUN.items()}, "keys": "synthetic:books:5000",
            "budget": "2"}
    r = client.post("/runs", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    run_id = r.headers["location"].rsplit("/", 1)[1]
    done = wait_run(client, op, run_id, timeout_s=300)
    assert done["state"] == "done", done
    (target,) = client.get("/api/targets", headers=op).json()["items"]
    assert target["name"] == "keys synthetic:books:5000" and target["id"] == done["target_id"]
    assert "keys synthetic:books:5000" in client.get("/runs").text
    r = client.post("/runs", data={"target": "", "csrf": csrf, "kind": "indexes", "budget_mb": "10"},
                    follow_redirects=False)
    assert r.status_code == 400 and "this indexes run needs a target database: give a target" in html.unescape(r.text)
    assert client.get("/api/runs", headers=op).json()["total"] == 1


def test_a_learned_index_run_over_rest_needs_no_target(app_client, tokens):
    """Issue 44, item 8, over REST: no target for synthetic keys (the keys' own target); a column's keys need one."""
    client, _ = app_client
    op = tokens["operator"]
    r = client.post("/api/runs", json={**RUN, "keys": "synthetic:books:5000", "budget": 2}, headers=op)
    assert r.status_code == 202, r.text
    done = wait_run(client, op, r.json()["id"], timeout_s=300)
    (target,) = client.get("/api/targets", headers=op).json()["items"]
    assert done["state"] == "done" and done["target_id"] == target["id"], done
    assert (target["name"], target["engine"], target["registered"]) == ("keys synthetic:books:5000", "keys", False)
    r = client.post("/api/runs", json={**RUN, "keys": "public.orders.o_orderkey"}, headers=op)
    assert r.status_code == 400 and "needs a target database" in r.json()["message"], r.text
    r = client.post("/api/runs", json={"kind": "indexes", "budget_mb": 10}, headers=op)
    assert r.status_code == 422, r.text  # a kind whose runs all need a database: the schema asks for a target


def test_a_schedule_of_synthetic_keys_needs_no_target(app_client, tokens):
    """Issue 44, item 8, for schedules: the schedule form without a target takes runs that need no database; its
    firing runs under the keys' own target; one that needs a database is refused in one line."""
    import html
    import re

    client, service = app_client
    op = tokens["operator"]
    log_in(client, op)
    page = client.get("/schedules").text
    assert '<option value="">no database' in page
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"target": "", "csrf": csrf, "cron": "0 2 * * *", **{k: str(v) for k, v in RUN.items()},
            "keys": "synthetic:books:5000", "budget": "2"}
    assert client.post("/schedules", data=form, follow_redirects=False).status_code == 303
    (schedule,) = service.schedules()
    assert schedule["target_name"] == "keys synthetic:books:5000"
    (run,) = service.run_schedule(schedule["id"])
    assert run["state"] == "done" and run["kind"] == "learned-index" and run["target_id"] == schedule["target_id"]
    r = client.post("/schedules", data={**form, "kind": "indexes", "optimizer": "extend", "budget_mb": "10"},
                    follow_redirects=False)
    assert r.status_code == 400 and "a schedule without a target database takes only runs that need none" in \
        html.unescape(r.text)
    assert len(service.schedules()) == 1
