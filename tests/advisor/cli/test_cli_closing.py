"""The last screen of a whole run (issue 44, item 6): at 80 columns it fits one terminal (24 lines); it names what
to apply with its commands each on a line of its own, what was left out and why in a line per step, and where the
details are; the demo's (its servers stopped) shows what to read and the way to one's own database; when nothing
validated it says why, in each measurement's own words (rounds, why it stopped, the machine's load), and what to
try."""

from __future__ import annotations

import time

from rich.console import Console

from advisor.cli import render
from advisor.tuning import kinds
from advisor.core.domain import IndexChange, KnobChange, Recommendation
from advisor.core.measured import Evidence
from advisor.tuning.all.pipeline import Step, WholeResult

MEASURED = "5 rounds (not settled within the round budget); load 2.4, cores 97% busy, nice -10"


def _evidence(gain: float, ci: tuple[float, float]) -> Evidence:
    return Evidence(5, (100.0,) * 5, (100.0 * (1 - gain),) * 5, gain, ci, (), 0.05, 1.25, measured=MEASURED)


def _rec(rec_id: str, kind: str, state: str, changes: tuple, gain: float, ci: tuple[float, float]) -> Recommendation:
    apply_sql = tuple(f"-- apply {i}" for i, _c in enumerate(changes))
    return Recommendation(rec_id, "t-1", kind, "extend", changes, apply_sql, apply_sql, False, state, time.time(),
                          evidence=_evidence(gain, ci))


def _result(index_state: str) -> WholeResult:
    index = _rec("a1b2c3d4e5f6", "indexes", index_state,
                 tuple(IndexChange("public", "orders", (c,)) for c in ("customer_id", "placed_at", "status")),
                 0.209, (0.201, 0.263))
    knobs = _rec("0f0e0d0c0b0a", "knobs", "rejected", (KnobChange("work_mem", "64MB"),), -0.012, (-0.05, 0.02))
    steps = (Step("indexes", index, "3 indexes measured on the shadow"),
             Step("rewrites", None, "aurora: no statement rewritten; 9 statements tried (not faster)"),
             Step("knobs", knobs, "keep your current settings: none of its 2 changes pays on its own (each one's "
                                  "figures: under \"not recommended\"); the last measured: x"))
    dropped = tuple({"change": f"rewrite {i}", "kind": "query_rewrite", "why": "not faster: " + "x " * 40}
                    for i in range(9)) + ({"change": "work_mem = 64MB", "kind": "knob", "why": "within noise"},)
    return WholeResult(steps, message="indexes: validated; rewrites: ...", dropped=dropped,
                       recommendations=(index, knobs))


def _last_screen(result: WholeResult, demo: bool) -> list[str]:
    console = Console(width=80, record=True, force_terminal=False)
    render.report(console, kinds.get("all").shown(result), result=result, demo=demo)
    lines = console.export_text().splitlines()
    return lines[max(i for i, line in enumerate(lines) if "what to do" in line):]


def test_the_last_screen_fits_one_terminal_with_the_commands_whole():
    screen = _last_screen(_result("validated"), demo=False)
    assert len(screen) <= 24 and max(map(len, screen)) <= 80
    text = "\n".join(screen)
    assert "indexes: 3 change(s), measured gain +20.9% (95% CI +20.1% .. +26.3%)" in text
    stripped = [line.strip() for line in screen]
    assert "advisor recommendations approve a1b2c3d4e5f6" in stripped
    assert "advisor recommendations apply a1b2c3d4e5f6" in stripped
    assert "approve 0f0e0d0c0b0a" not in text  # the rejected knob set is left out, never offered
    left = {line.split(":")[0].strip() for line in screen[screen.index("left out:") + 1:] if line.startswith("  ")}
    assert {"rewrites", "knobs"} <= left
    assert "10 change(s) tried and not recommended (9 query_rewrite, 1 knob)" in text
    assert "details:" in text


def test_the_demo_s_last_screen_offers_reading_and_the_way_to_one_s_own_database():
    screen = _last_screen(_result("validated"), demo=True)
    text = "\n".join(screen)
    assert len(screen) <= 24 and "advisor recommendations show a1b2c3d4e5f6" in text
    assert "recommendations apply" not in text and "servers are stopped" in text
    assert "advisor targets add --name NAME --replica" in [line.strip() for line in screen]


def test_when_nothing_validated_the_last_screen_says_why_and_what_to_try():
    screen = _last_screen(_result("not validated"), demo=False)
    text = "\n".join(screen)
    assert len(screen) <= 24 and "nothing validated" in text and "approve" not in text
    indexes = next(line for line in screen if line.strip().startswith("indexes:"))
    assert "not validated" in indexes and "load 2.4, cores 97% busy" in text
    assert "--rounds 10" in text


def test_a_set_rejected_for_slowed_statements_says_so_in_its_line():
    from advisor.core.domain import StatementEvidence

    slowed = StatementEvidence("q1", "SELECT 1", 1.0, 10.0, 13.0, 1.3, (1.1, 1.5), True, 0, 0.5, 0.5)
    result = _result("rejected")
    index = result.recommendations[0]
    index = Recommendation(index.id, index.target_id, index.kind, index.optimizer, index.changes, index.apply_sql,
                           index.revert_sql, False, "rejected", index.created_at,
                           evidence=Evidence(5, (100.0,) * 5, (80.0,) * 5, 0.2, (0.18, 0.22), (slowed,), 0.05, 0.10,
                                             measured=MEASURED))
    screen = _last_screen(WholeResult(result.steps, dropped=result.dropped,
                                      recommendations=(index, result.recommendations[1])), demo=False)
    text = " ".join(line.strip() for line in screen)
    assert "indexes: rejected: measured gain +20.0% (95% CI +18.0% .. +22.0%), but 1 statement(s) slower by more " \
           "than 10%" in text
