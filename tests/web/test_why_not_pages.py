"""What was not recommended, and why, where a DBA reads it: a rejected recommendation never shows SQL under "to
apply" (the CLI prints what was tried, the page says there is nothing to apply), and the candidates a run left out
are listed with their reasons in the CLI's text, its JSON and on the recommendation and run pages (escaped)."""

from __future__ import annotations

import dataclasses
import io
import json

from rich.console import Console

from advisor.cli import render
from advisor.cli.main import main
from advisor.core.domain import Applied, KnobChange
from advisor.storage.store import new_id
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.recommend import Dropped, recommend, verdict_note
from tests.web.logins import log_in

EVIL = "<script>alert('owned')</script>"
TRIED = (KnobChange("work_mem", "64MB"), KnobChange("random_page_cost", "1.1"))
APPLY = ("ALTER SYSTEM SET work_mem = '64MB'", "ALTER SYSTEM SET random_page_cost = '1.1'")
DROPPED = (Dropped("shared_buffers = 2GB", "knob", "paid less than its restart: +0.3% of the gain"),
           Dropped(f"orders(note) {EVIL}", "index", f"dropped in validation: statement q2 regressed (1.52x) {EVIL}"))


def _rejected(store):
    target_id = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    plan = Applied(TRIED, APPLY, ("ALTER SYSTEM RESET work_mem", "ALTER SYSTEM RESET random_page_cost"), False)
    return recommend(store, target_id=target_id, kind="knobs", optimizer="hibo", plan=plan, accepted=False,
                     why="measured gain +3.1% (95% CI -2.0% .. +8.0%, 5 rounds); the interval does not clear the "
                         "minimum gain of 2%", dropped=DROPPED)


def _text(rec) -> str:
    console = Console(file=io.StringIO(), width=250)
    render.recommendation(console, rec)
    return console.file.getvalue()


def test_the_cli_shows_what_was_tried_and_why_not_never_sql_to_apply(tmp_path, capsys, monkeypatch):
    from advisor.storage.store import open_store

    monkeypatch.setenv("COLUMNS", "250")  # rich wraps at the terminal's width
    path = str(tmp_path / "s.duckdb")
    store = open_store(path)
    rec = _rejected(store)
    store.close()
    assert rec.state == "rejected" and rec.apply_sql == APPLY  # stored, as validation saw it
    assert main(["recommendations", "show", rec.id, "--store", path]) == 0
    out = capsys.readouterr().out
    assert "ALTER SYSTEM" not in out and "to apply (after approval)" not in out and "to revert" not in out
    assert "what was tried (rejected: nothing to apply)" in out and "work_mem = 64MB" in out
    assert "the interval does not clear the minimum gain" in out
    assert "not recommended" in out and "shared_buffers = 2GB" in out and "paid less than its restart" in out
    assert "statement q2 regressed (1.52x)" in out
    assert main(["recommendations", "show", rec.id, "--store", path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["recommendation"]
    assert doc["details"]["dropped"] == [d.to_dict() for d in DROPPED]
    # a validated one still says how to apply it, and what it left out
    validated = _text(dataclasses.replace(rec, state="validated"))
    assert "to apply (after approval)" in validated and "ALTER SYSTEM SET work_mem = '64MB';" in validated
    assert "not recommended" in validated and "paid less than its restart" in validated


def test_the_pages_show_what_was_tried_and_why_not(app_client, tokens):
    client, service = app_client
    rec = _rejected(service.store)
    target_id = rec.target_id
    run_id = new_id()  # a run that recommended nothing: what it tried is on the run's result
    service.store.add_run(run_id, target_id, "indexes", "extend", {}, state="done")
    service.store.update_run(run_id, result={"recommendation": None, "message": "no index is worth its space",
                                             "dropped": [d.to_dict() for d in DROPPED]})
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/recommendations/{rec.id}").text
    assert "What was tried" in page and 'id="nothing-to-apply"' in page
    hint = page[page.index('id="nothing-to-apply"'):page.index("</p>", page.index('id="nothing-to-apply"'))]
    assert "the interval does not clear the minimum gain of 2%" in hint
    # rejected by a whole run's bundle after its own validation: the page says the bundle's why first
    service.store.add_details(rec.id, {"bundle_verdict": "in the bundle with indexes it does not pay"})
    page = client.get(f"/recommendations/{rec.id}").text
    hint = page[page.index('id="nothing-to-apply"'):page.index("</p>", page.index('id="nothing-to-apply"'))]
    assert "in the bundle with indexes it does not pay (on its own: measured gain +3.1%" in hint
    assert 'id="apply-sql"' not in page and "ALTER SYSTEM" not in page
    table = page[page.index('id="dropped"'):page.index("</table>", page.index('id="dropped"'))]
    assert "Not recommended" in table and "shared_buffers = 2GB" in table and "paid less than its restart" in table
    assert "<script>alert" not in page and table.count("&lt;script&gt;") == 2
    # a validated one with a rare statement slower: shown as such, beside its share of the time, not hidden
    rounds = [ArmRound({"heavy": [20.0], "adhoc": [10.0]}, {}) for _ in range(5)]
    slower = [ArmRound({"heavy": [1.0], "adhoc": [13.8 + i * 0.1]}, {}) for i in range(5)]
    ev = compare(rounds, slower, {"heavy": 500, "adhoc": 1}, {"heavy": "SELECT 1", "adhoc": "select count(*) x"},
                 min_time_share=0.01, min_call_share=0.01)
    good = recommend(service.store, target_id=target_id, kind="knobs", optimizer="hibo",
                     plan=Applied(TRIED[:1], APPLY[:1], (), False), evidence=ev, accepted=ev.accepted,
                     why=verdict_note(ev))
    page = client.get(f"/recommendations/{good.id}").text
    assert good.state == "validated" and 'id="apply-sql"' in page and "ALTER SYSTEM SET work_mem" in page
    assert '<span id="rare-count">1 rare slower</span>' in page and "slower, too rare to block (0.1% of the time" in page
    assert 'class="rare-slower"' in page and "0.1%" in page
    run_page = client.get(f"/runs/{run_id}").text
    assert 'id="dropped"' in run_page and "paid less than its restart" in run_page
    assert "statement q2 regressed (1.52x)" in run_page and "<script>alert" not in run_page
