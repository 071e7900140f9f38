"""The correction step of an index run on a real server (PostgreSQL): after validation, what was measured is
learned, the choice is made again on corrected costs, and the run says what it learned and which set it took; what
was learned is kept for the target's next run; the plan's ``correct`` option switches the step off."""

from __future__ import annotations

import json

from advisor.service.service import AdvisorService
from advisor.storage.store import open_store
from advisor.tuning import kinds
from advisor.tuning.indexes.correct import HISTORY
from tests.advisor.tuning.indexes.test_index_explain import _workload_db


def test_a_run_learns_from_its_validation_and_chooses_again(pg, tmp_path):
    shop = _workload_db(pg)
    service = AdvisorService(open_store(tmp_path / "s.duckdb"))
    plan = kinds.plan_of("indexes", optimizer="extend", budget_mb=20, rounds=2)
    first = service.tune("indexes", shop, plan, register="shop")
    report = first.whatif["correction"]
    assert report["applied"] and report["learned"]["statements"] >= 1  # the lookups' plans used the new index
    assert report["taken"] in ("first", "rechosen") and report["first"]
    if report["taken"] == "rechosen":  # validated before it replaced the first set, and the run says so
        assert "gain" in report and "chosen again on what-if costs corrected" in first.message
        # the run's figures describe the set recommended, not the first choice
        assert first.whatif["relative_cost"] == report["relative_cost"]["rechosen"]
        assert {ix.label() for ix in first.chosen} == set(report["rechosen"])
    else:
        assert "chosen again" not in first.message
    if "gain" in report:  # a second set was measured: whose, and why it was worth measuring
        assert report["from"] == "extend" and report["why"] in ("rated better", "within the estimates' doubt")
    stored = list(tmp_path.rglob(HISTORY))
    doc = json.loads(stored[0].read_text()) if len(stored) == 1 else {}
    assert "points" in doc and any(used for _q, used, _b, _c in doc["measured"])  # statements with their indexes
    again = service.tune("indexes", shop, plan)
    assert again.whatif["correction"]["learned"]["points"] >= report["learned"]["points"]  # history carried over
    # the second run's first choice is already made on costs corrected by what the first measured
    assert again.whatif["from_history"]["statements"] >= 1


def test_history_is_read_back_and_an_unreadable_one_is_ignored(tmp_path):
    from advisor.core.domain import IndexChange
    from advisor.tuning.indexes.correct import load_history, save_history
    from optimizers.indexes.corrected import Correction, Measured

    a, b = IndexChange("public", "t", ("a",)), IndexChange("public", "t", ("b",), include=("c",))
    old, new = Measured("q1", frozenset({a}), 10.0, 9.0), Measured("q1", frozenset({a}), 10.0, 2.0)
    save_history(tmp_path, Correction(points=[(("range", False), -1.0, -0.5)]),
                 [old, Measured("q2", frozenset({a, b}), 5.0, 1.0), new])
    points, measured = load_history(tmp_path)
    assert points == [(("range", False), -1.0, -0.5)]
    assert measured == [Measured("q2", frozenset({a, b}), 5.0, 1.0), new]  # the latest per statement and set
    (tmp_path / HISTORY).write_text("{not json")
    assert load_history(tmp_path) == ([], [])


def test_the_step_can_be_switched_off(pg, tmp_path):
    shop = _workload_db(pg)
    service = AdvisorService(open_store(tmp_path / "s.duckdb"))
    plan = kinds.plan_of("indexes", optimizer="extend", budget_mb=20, rounds=2, correct=False)
    result = service.tune("indexes", shop, plan, register="shop")
    assert "correction" not in result.whatif and not list(tmp_path.rglob(HISTORY))
    assert result.recommendation is not None
