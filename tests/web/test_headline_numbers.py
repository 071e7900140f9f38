"""One set of numbers per recommendation (``advisor.service.summary``), shown the same by the CLI, the REST API
and the web pages: the measured workload times are the gain's own (1 - candidate / baseline of the very numbers
shown), a predicted gain is an estimate, and a rejected recommendation never reads as a success: no green gain,
no predicted gain beside it, no regressed statement among the "helped", no "done" badge on its run."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from rich.console import Console

from advisor.cli import render
from advisor.core.domain import Applied, IndexChange
from advisor.service.summary import ms, pct, summarize
from advisor.storage.store import new_id
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.recommend import recommend
from tests.web.logins import log_in

INDEX = IndexChange("public", "orders", ("customer_id",))
WEIGHTS = {"q1": 100.0, "q2": 50.0}  # calls
SQL = {"q1": "SELECT * FROM orders WHERE customer_id = $1", "q2": "UPDATE orders SET note = $1 WHERE id = $2"}


def _rounds(q1: float, q2: float, n: int = 5) -> list[ArmRound]:
    jitter = (-0.02, 0.0, 0.01, 0.02, -0.01)
    return [ArmRound({"q1": [q1 * (1 + jitter[i]) for _ in range(3)], "q2": [q2 * (1 + jitter[i]) for _ in range(3)]},
                     {}) for i in range(n)]


def _evidence():
    """q1 twice as fast, q2 (a third of the baseline's time) twice as slow: W 1200 ms -> 900 ms, +25%, and a
    blocking regression, so the recommendation is rejected."""
    return compare(_rounds(10.0, 4.0), _rounds(5.0, 8.0), WEIGHTS, SQL, seed=1, min_time_share=0.01,
                   min_call_share=0.01)


def _rejected(store, run_id=None):
    target_id = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    ev = _evidence()
    plan = Applied((INDEX,), ("CREATE INDEX ON public.orders (customer_id)",), ("DROP INDEX orders_customer_id",),
                   False)
    details = {"whatif": {"relative_cost": 0.017, "cost_before": 1000.0, "cost_after": 17.0,  # predicted +98.3%
                          "estimated_bytes": 1 << 20, "budget_bytes": 50 << 20},
               # as stored before "helped" was recorded: a dropped index lists the statements its plans use
               "indexes": [{"index": "orders_customer_id", "table": "public.orders", "columns": ["customer_id"],
                            "estimated_bytes": 1 << 20, "built_bytes": 1 << 20, "statements": ["q1", "q2"],
                            "kept": False, "reason": "statement q2 regressed (2.00x)"}]}
    return recommend(store, target_id=target_id, kind="indexes", optimizer="extend", plan=plan, evidence=ev,
                     accepted=ev.accepted, why="statement q2 regressed", details=details, run_id=run_id)


def _cli(rec, predicted=None) -> str:
    console = Console(file=io.StringIO(), width=250)
    render.recommendation(console, rec, predicted=predicted)
    return console.file.getvalue()


def test_evidence_keeps_the_workload_times_its_gain_compares():
    ev = _evidence()
    assert ev.baseline_ms == pytest.approx(1200.0) and ev.candidate_ms == pytest.approx(900.0)
    assert ev.gain == pytest.approx(1 - ev.candidate_ms / ev.baseline_ms)
    assert not ev.accepted and [s.queryid for s in ev.regressions] == ["q2"]
    head = summarize(dataclasses.replace(_rejected_rec(ev), state="rejected"), 0.983)
    assert head.verdict == "rejected" and head.tone == "neutral"
    assert [m.queryid for m in head.helped] == ["q1"] and [m.queryid for m in head.regressed] == ["q2"]


def _rejected_rec(ev):
    from advisor.core.domain import Recommendation

    return Recommendation("r", "t", "indexes", "extend", (INDEX,), (), (), False, "rejected", 0.0, evidence=ev)


def test_cli_rest_and_page_show_the_same_numbers(app_client, tokens):
    client, service = app_client
    run_id = new_id()
    rec = _rejected(service.store, run_id)
    head = service.headline(rec)
    figures = head.figures
    assert (figures["baseline"], figures["candidate"], figures["gain"]) == ("1,200 ms", "900.0 ms", "+25.0%")

    # REST: the summary object carries the numbers the text is made of
    doc = client.get(f"/api/recommendations/{rec.id}", headers=tokens["viewer"]).json()
    s = doc["summary"]
    assert s["verdict"] == "rejected" and s["tone"] == "neutral" and s["state"] == "rejected"
    assert (ms(s["baseline_ms"]), ms(s["candidate_ms"]), pct(s["gain"])) == ("1,200 ms", "900.0 ms", "+25.0%")
    assert s["gain"] == pytest.approx(1 - s["candidate_ms"] / s["baseline_ms"]) == doc["gain"]
    assert s["predicted_gain"] is None  # the what-if predicted +98.3%: never shown beside a rejection
    assert [m["queryid"] for m in s["helped"]] == ["q1"] and [m["queryid"] for m in s["regressed"]] == ["q2"]
    assert "calls x median" in s["unit"]

    # CLI: the same figures, and no predicted gain beside a rejection
    text = _cli(rec, head.predicted_gain)
    assert figures["line"] in " ".join(text.split())
    assert "1,200 ms -> 900.0 ms" in text and "+25.0%" in text and "predicted" not in text

    # the page: the same figures in its headline, the gain not green, no predicted gain
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/recommendations/{rec.id}").text
    assert re.search(r'id="baseline-ms">1,200 ms<', page) and re.search(r'id="candidate-ms">900.0 ms<', page)
    gain = re.search(r'id="gain">(.*?)</span></span>', page, re.S).group(1)
    assert "+25.0%" in gain and "good" not in gain
    assert re.search(r'id="verdict">rejected<', page)
    predicted = re.search(r'id="predicted">(.*?)</span>\s*<span class="sub">', page, re.S).group(1)
    assert "98.3" not in predicted
    # the index's "helped" cell lists no statement that regressed (S-labels by weight: q1 is S1, q2 is S2)
    helped = re.search(r'<td class="helped">(.*?)</td>', page, re.S).group(1)
    assert "q2" not in helped and "S2" not in helped


def test_a_validated_one_shows_its_predicted_gain_as_an_estimate_and_its_measured_gain_green(app_client):
    _, service = app_client
    rec = _rejected(service.store)
    ev = dataclasses.replace(rec.evidence, statements=tuple(s for s in rec.evidence.statements if s.queryid == "q1"))
    good = dataclasses.replace(rec, state="validated", evidence=ev)
    head = summarize(good, 0.983)
    assert head.verdict == "validated" and head.tone == "good" and head.figures["predicted"] == "+98.3% estimate"
    text = _cli(good, head.predicted_gain)
    assert "predicted before measuring: +98.3% estimate (what-if planner cost)" in text


def test_lists_never_show_a_rejected_one_as_a_success(app_client, tokens, capsys, tmp_path):
    client, service = app_client
    rec = _rejected(service.store)
    (row,) = client.get("/api/recommendations", headers=tokens["viewer"]).json()["items"]
    assert row["state"] == "rejected" and row["tone"] == "neutral" and row["gain"] == pytest.approx(0.25)
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get("/recommendations").text
    table = page[page.index('id="recommendations"'):page.index("</table>", page.index('id="recommendations"'))]
    assert "98.3" not in table and "gain good" not in table and "+25.0%" in table
    # the CLI's list: its verdict, the gain in the default colour
    console = Console(file=io.StringIO(), width=250, force_terminal=True, color_system="standard")
    render.recommendations(console, [rec])
    out = console.file.getvalue()
    assert "rejected" in out and "+25.0%" in out and "\x1b[32m" not in out  # no green


def test_a_run_whose_recommendation_was_rejected_never_reads_done(app_client, tokens):
    client, service = app_client
    run_id = new_id()
    rec = _rejected(service.store, run_id)
    service.store.add_run(run_id, rec.target_id, "indexes", "extend", {}, state="done")
    message = "rejected: statement q2 regressed (2.00x)"
    service.store.update_run(run_id, result={"recommendation": rec.id, "recommendations": [rec.id],
                                             "state": "rejected", "message": message},
                             progress={"message": f"done: {message}", "log": []})
    assert client.get(f"/api/runs/{run_id}", headers=tokens["viewer"]).json()["outcome"] == "rejected"
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/runs/{run_id}").text
    assert re.search(r'<span class="badge s-rejected" id="state">rejected</span>', page)
    assert "s-done" not in page and page.count(message) == 1
    runs = client.get("/runs").text
    row = runs[runs.index('id="runs"'):]
    assert "s-rejected" in row and "s-done" not in row


def test_trial_objectives_say_they_are_estimated_workload_time(app_client, tokens):
    from advisor.tuning.knobs.runners import ReplayRunner

    client, service = app_client
    target_id = service.store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    run_id = new_id()
    service.store.add_run(run_id, target_id, "knobs", "hibo", {}, state="done")
    unit = ReplayRunner([]).unit  # what a knob run records with its result
    assert unit == "workload ms (calls x median)"
    service.store.update_run(run_id, result={"recommendation": None, "message": "keep your current settings",
                                             "objective_unit": unit, "baseline_objective": 2500.0})
    for n, (objective, source) in enumerate(((2500.0, "default"), (2400.0, "hibo"))):
        service.store.add_trial(target_id, run_id, "hibo", [], None, "measured", number=n, objective=objective,
                                source=source, duration_s=0.1)
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/runs/{run_id}").text
    table = page[page.index('id="trials"'):page.index("</table>", page.index('id="trials"'))]
    assert "Objective <span class=\"hint\">(workload ms (calls x median))</span>" in table
    assert "2,500.0" in table and "2,500.0 ms" not in table  # not a trial's wall time in ms
    assert "objective, workload ms (calls x median)" in page  # the convergence plot's axis


def test_a_bundle_part_that_is_dropped_is_never_green():
    from web.pages.templating import templates

    tpl = templates.env.from_string('{% from "_macros.html" import part_gain %}'
                                    '{{ part_gain(0.3, False) }}|{{ part_gain(0.3, True) }}|{{ part_gain(-0.2, True) }}')
    dropped, pays, hurts = tpl.render().split("|")
    assert 'data-tone="neutral"' in dropped and "good" not in dropped and "+30.0%" in dropped
    assert 'data-tone="good"' in pays and 'data-tone="bad"' in hurts


def test_how_it_was_measured_and_a_statement_timed_once_show_on_the_page_and_in_the_cli(app_client, tokens):
    """The measured line (rounds, why the measurement stopped, load) and a read whose plan the change left the
    same (timed once, its plan named) survive the store and show on the recommendation page and in the CLI."""
    client, service = app_client
    target_id = service.store.upsert_target("shop2", "postgres", "host=127.0.0.1 dbname=shop2")
    ev = _evidence()
    ev = dataclasses.replace(ev, measured="3 rounds (the gain's interval clears the minimum); load 0.4",
                             statements=tuple(dataclasses.replace(s, same_plan="Seq Scan on orders")
                                              if s.queryid == "q2" else s for s in ev.statements))
    plan = Applied((INDEX,), ("CREATE INDEX ON public.orders (customer_id)",), ("DROP INDEX x",), False)
    rec = recommend(service.store, target_id=target_id, kind="indexes", optimizer="extend", plan=plan, evidence=ev,
                    accepted=False, why="a test")
    stored = service.store.recommendation(rec.id).evidence
    assert stored.measured == ev.measured and [s.same_plan for s in stored.statements] == ["", "Seq Scan on orders"]
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/recommendations/{rec.id}").text
    assert "How it was measured: 3 rounds (the gain&#39;s interval clears the minimum); load 0.4" in page
    assert 'title="Seq Scan on orders">same plan, timed once<' in page
    console = Console(file=io.StringIO(), width=250)
    render.recommendation_page(console, service.store.recommendation(rec.id), [])
    text = console.file.getvalue()
    assert "same plan, timed once" in text and "measured: 3 rounds" in text
