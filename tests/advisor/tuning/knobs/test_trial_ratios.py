"""A knob trial's per-statement times: measured on a real shadow, stored with the trial, told to the optimizer as
ratios to the run's baseline trial, and the same again after a resume from the store."""

import pytest

from advisor.storage.store import open_store
from advisor.tuning.knobs.trials import ReplayRunner, TrialRunner, TuningOptions, TuningRun
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from tests.advisor.items import cheap_space, items_shadow, stmt

WORKLOAD = [stmt("count", "SELECT count(*) FROM items"),
            stmt("groups", "SELECT k, sum(v) FROM items GROUP BY k")]


@pytest.fixture
def shadow():
    yield from items_shadow("ratios")


def test_trials_carry_per_statement_ratios_to_the_baseline_through_the_store(shadow, tmp_path):
    space = cheap_space(shadow)
    options = TuningOptions(optimizer="random", trials=3, seed=0, use_seeds=False)
    store = open_store(tmp_path / "s.duckdb")
    target = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    store.add_run("run-1", target, "knobs", "random", options.to_dict())
    opt = registry.create("knobs", "random", KnobProblem(space), seed=0)
    run = TuningRun(store, "run-1", target, TrialRunner(shadow, ReplayRunner(WORKLOAD, repeats=2, warmup=0), space),
                    opt, options)
    records = run.execute()
    run.trials.reset()

    base, *others = records
    assert base.source == "default" and set(base.statement_ms) == {"count", "groups"}
    assert base.result.ratios == {"count": 1.0, "groups": 1.0}
    for rec in others:
        assert set(rec.result.ratios) == {"count", "groups"}
        for key, ratio in rec.result.ratios.items():
            measured = rec.statement_ms[key] / base.statement_ms[key]
            # the guard's absolute floor: under 1 ms slower is no slowdown
            assert ratio == pytest.approx(measured if rec.statement_ms[key] - base.statement_ms[key] >= 1.0
                                          else min(measured, 1.0), rel=1e-3)
    assert [o.worst for o in opt.history] == [r.result.worst_ratio for r in records]
    rows = store.trials("run-1")
    assert [r["statements"] for r in rows] == [r.statement_ms for r in records]

    store.update_run("run-1", optimizer_state=None)  # the optimizer is told the stored trials again
    resumed_opt = registry.create("knobs", "random", KnobProblem(space), seed=0)
    resumed = TuningRun(store, "run-1", target, TrialRunner(shadow, ReplayRunner(WORKLOAD), space), resumed_opt,
                        options)
    resumed.resume_from_store()
    assert [r.result.ratios for r in resumed.records] == [r.result.ratios for r in records]
    assert [o.worst for o in resumed_opt.history] == [o.worst for o in opt.history]
    store.close()
