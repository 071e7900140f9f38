"""Every non-recommendation says why, the same way for every kind (``advisor.tuning.recommend.Dropped``): what an
index run and a rewrite run tried and left out, with the reason and its figures, from fixed inputs."""

from __future__ import annotations

from advisor.core.domain import DropIndexChange, IndexChange
from advisor.tuning.indexes.drops import DropVerdict
from advisor.tuning.indexes.explain import not_recommended as index_dropped
from advisor.tuning.indexes.validation import IndexVerdict
from advisor.tuning.recommend import Dropped, dropped_rows
from advisor.tuning.rewrites.pipeline import Outcome
from advisor.tuning.rewrites.pipeline import not_recommended as rewrite_dropped

KEPT = IndexChange("public", "orders", ("customer",))
SLOWING = IndexChange("public", "orders", ("note",))
IDLE = IndexChange("public", "orders", ("amount",), include=("note",))


def _candidate(ix: IndexChange, fate: str, cost_with: float, gain: float, reason: str) -> dict:
    return {"index": f"{ix.table}_{'_'.join(ix.columns)}_advisor_idx", "label": ix.label(), "fate": fate,
            "cost_with": cost_with, "gain": gain, "reason": reason}


def test_an_index_run_says_what_it_dropped_and_why():
    verdicts = [IndexVerdict(KEPT, 1, 2, ("q1",), True, "measured benefit"),
                IndexVerdict(SLOWING, 1, 2, ("q2",), False, "statement q2 regressed (1.52x, 12% of the time: SELECT ..)"),
                IndexVerdict(IDLE, 1, 2, (), False, "no statement's plan uses it on the shadow")]
    drops = [DropVerdict(DropIndexChange("public", "orders", "orders_old", "CREATE INDEX ..."), 8192, ("q3",), False,
                         "statement q3 regressed without it (3.10x, 40% of the time)"),
             DropVerdict(DropIndexChange("public", "orders", "orders_dup", "CREATE INDEX ..."), 8192, (), True, "ok")]
    wide = IndexChange("public", "orders", ("customer", "amount"))
    rows = [{"queryid": "q1", "candidates": [
                _candidate(KEPT, "kept", 10.0, 0.9, "kept in validation: measured benefit"),
                _candidate(wide, "not chosen", 9.0, 0.91, "over budget: 30.0 MB alone, the budget is 20.0 MB"),
                _candidate(IDLE, "not chosen", 99.0, 0.0, "no what-if benefit")]},
            {"queryid": "q4", "candidates": [
                _candidate(wide, "not chosen", 5.0, 0.5, "over budget: 30.0 MB alone, the budget is 20.0 MB")]},
            {"queryid": "q5", "status": "not bound", "candidates": []}]
    out = dropped_rows(index_dropped(rows, verdicts, drops))
    assert out == [
        {"change": "orders(note)", "kind": "index",
         "why": "dropped in validation: statement q2 regressed (1.52x, 12% of the time: SELECT ..)"},
        {"change": "orders(amount) INCLUDE (note)", "kind": "index",
         "why": "dropped in validation: no statement's plan uses it on the shadow"},
        {"change": "drop index orders_old", "kind": "drop_index",
         "why": "the index stays: statement q3 regressed without it (3.10x, 40% of the time)"},
        # from the selection: each statement's best candidate not chosen, each index once
        {"change": "orders(customer, amount)", "kind": "index",
         "why": "not chosen (statement q1, alone it would save 91% of its what-if cost): over budget: 30.0 MB "
                "alone, the budget is 20.0 MB"},
    ]


def test_a_rewrite_run_says_what_it_left_out_and_why():
    outcomes = (
        Outcome("q1", "SELECT a FROM t WHERE x IN (SELECT y FROM u)", "SELECT a FROM t JOIN u ON x = y", ("semi",),
                2.0, (1.5, 2.5), True, rejected=({"sql": "SELECT a FROM t, u WHERE x = y", "why": "not equivalent: "
                                                  "3 rows on check database nulls, 2 for the original"},)),
        Outcome("q2", "SELECT count(*) FROM t", reason="not faster: candidate 1: 10.0 ms -> 10.2 ms (gain -2.0%, "
                                                         "95% CI -5.0% .. +1.0%)"),
        Outcome("q3", "SELECT 1", reason="no rule applied"),
    )
    assert dropped_rows(rewrite_dropped(outcomes)) == [
        {"change": "rewrite of `SELECT a FROM t WHERE x IN (SELECT y FROM u)`: SELECT a FROM t, u WHERE x = y",
         "kind": "query_rewrite",
         "why": "not equivalent: 3 rows on check database nulls, 2 for the original"},
        {"change": "SELECT count(*) FROM t", "kind": "query_rewrite",
         "why": "left as written: not faster: candidate 1: 10.0 ms -> 10.2 ms (gain -2.0%, 95% CI -5.0% .. +1.0%)"},
        {"change": "SELECT 1", "kind": "query_rewrite", "why": "left as written: no rule applied"},
    ]


def test_dropped_rows_are_one_shape_whatever_their_source():
    knob = {"change": "work_mem = 64MB", "kind": "knob", "why": "within noise: +0.4% of the gain (95% CI -1% .. +2%)",
            "share": 0.004}
    assert dropped_rows([Dropped("t(a)", "index", "no measurable benefit"), knob, knob]) == [
        {"change": "t(a)", "kind": "index", "why": "no measurable benefit"},
        {"change": "work_mem = 64MB", "kind": "knob", "why": "within noise: +0.4% of the gain (95% CI -1% .. +2%)",
         "share": 0.004}]  # a knob's measured share stays beside the three keys
