"""The learned-index kind end to end on the real index (``connectors.factory.learned_index``) over small
synthetic key sets: ``service.tune("learned-index", ...)`` stores its run, every evaluation and a handed-over
recommendation with its evidence (thread CPU time per operation, per phase); the harness as a trial target (its
objective the CPU time per operation, wall time beside it; the safety cut on CPU time makes a trial unsafe and
failed); keys from a column of the target; bad input as one line before any work."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from advisor.core.errors import AdvisorError
from advisor.service.service import AdvisorService
from advisor.storage.store import Store
from advisor.tuning.learned_index import keys as key_sources
from advisor.tuning.learned_index.pipeline import evaluate, problem, search, tune_index
from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.plan import RunPlan
from connectors import factory
from advisor.tuning import kinds
from optimizers import registry
from tests.conftest import run
from workloads.datasets.learned import keysets, mixes

KEYS = "synthetic:books:20000"
INDEX, MIX = "pgm", "read-only"  # the quick engine for most checks; the updatable one (alex) has its own test


@pytest.fixture(scope="module")
def target_db(pg):
    name = "li_" + uuid.uuid4().hex[:8]
    dsn = pg.create_database(name)
    run(dsn, "CREATE TABLE events (id bigint PRIMARY KEY, at bigint)",
        "INSERT INTO events SELECT x, (x * 2654435761) % 4294967296 FROM generate_series(1, 20000) x")
    return dsn


@pytest.fixture
def service(tmp_path):
    return AdvisorService(Store(str(tmp_path / "advisor.duckdb")))


def plan(**fields) -> RunPlan:
    return kinds.parse_plan({"kind": "learned-index", "keys": KEYS, "workload": MIX, "index": INDEX, "budget": 5,
                          "optimizer": "random", "rounds": 3, **fields})


def small_target(index=INDEX, mix=MIX, n=20_000, keyset="books"):
    engine = factory.learned_index(index)
    keys = keysets.synthetic(keyset, n, 0)
    initial, stream = mixes.workload(keys, mixes.parse_mix(mix), n, 0)
    return engine, HarnessTarget(engine, initial, [stream])


def test_a_run_stores_every_evaluation_and_a_handed_over_recommendation(service, target_db):
    result = service.tune("learned-index", target_db, plan(), by_hand=True)
    doc = result.document()
    assert doc["index"] == INDEX and doc["evaluations"] == 5 == len(result.trials)
    assert result.trials[0].source == "default" and result.trials[0].result.status == "measured"
    assert doc["default"]["throughput_ops"] > 0 and doc["default"]["p99_ns"] > 0
    assert set(doc["parameters"]) == {p.name for p in factory.learned_index(INDEX).parameters()}
    stored = service.store.trials(result.run_id)
    assert [t["number"] for t in stored] == [0, 1, 2, 3, 4] and stored[0]["source"] == "default"
    measured = [t for t in stored if t["status"] == "measured"]  # decided on CPU time, wall time beside it
    assert measured and all(t["objective"] == t["metrics"]["cpu_ns_per_op"] and t["metrics"]["throughput_ops"] > 0
                            for t in measured)
    assert [t["cpu_ns_per_op"] for t in doc["trials"]] == [t.result.objective for t in result.trials]
    assert service.store.run(result.run_id)["result"]["objective_unit"] == "thread CPU ns per operation"
    run_row = service.store.run(result.run_id)
    assert run_row["kind"] == "learned-index" and run_row["state"] == "done"
    assert doc["finalists"] == [f.doc() for f in result.result.finalists]  # the pick's re-measure, when there was one
    assert not doc["finalists"] or (doc["finalists"][0]["trial"] == 0 and doc["picked"]
                                    and sum(f["chosen"] for f in doc["finalists"]) == 1)
    rec = result.recommendation
    if rec is None:  # the defaults stayed best: said so, nothing stored as a recommendation
        assert "no configuration beat the defaults" in result.message
        return
    assert rec.kind == "learned-index" and rec.state in ("validated", "rejected") and rec.apply_sql == ()
    assert all(c.kind == "learned_index_param" for c in rec.changes)
    assert {c.name: c.value for c in rec.changes}.items() <= doc["parameters"].items()
    details = rec.details
    assert details["evaluations"] == 5 and details["tuned"]["throughput_ops"] > 0
    ev = rec.evidence  # one phase (the run's one operation stream), its CPU ns per operation
    assert ev.rounds == 3 and {s.queryid: s.weight for s in ev.statements} == {"operations": 1.0}
    assert all(s.baseline_ms > 0 for s in ev.statements)  # CPU ns per operation
    assert "decided on thread CPU time" in ev.measured and "wall-time throughput" in ev.measured
    assert details["measured"] == ev.measured and details["tuned"]["cpu_ns_per_op"] > 0
    assert details["finalists"] == doc["finalists"] and details["picked"] == doc["picked"]
    assert doc["measured"] == ev.measured and "on thread CPU time per operation, measured gain" in result.message
    assert service.store.recommendation(rec.id).details["index"] == INDEX


def test_a_trial_objective_is_its_cpu_time_per_operation_with_wall_time_beside_it():
    engine, target = small_target()
    base = evaluate(target, {})
    assert base.status == "measured" and base.metrics["unsafe"] == 0 and base.objective > 0
    assert base.objective == base.metrics["cpu_ns_per_op"] == target.last.cpu_ns_per_op  # decides
    wall_ns_per_op = 1e9 / base.metrics["throughput_ops"]  # recorded beside it
    assert base.objective <= wall_ns_per_op * 1.01 + 1.0  # a thread's CPU time never exceeds its wall time
    assert target.display(base.objective).endswith("ns CPU/op")


def test_the_safety_cut_makes_a_trial_unsafe_and_failed_on_cpu_time():
    engine, target = small_target()
    base = evaluate(target, {})
    target.max_cpu_ns_per_op = base.metrics["cpu_ns_per_op"] / 1000  # no configuration is this fast
    cut = evaluate(target, {})
    assert cut.status == "failed" and cut.reason.startswith("unsafe: over") and cut.metrics["unsafe"] == 1
    assert cut.objective is None and cut.metrics["cpu_ns_per_op"] > target.max_cpu_ns_per_op
    target.max_cpu_ns_per_op = base.metrics["cpu_ns_per_op"] * 1000  # every configuration is faster
    assert evaluate(target, {}).status == "measured"


def test_the_search_bounds_its_trials_by_the_defaults_cpu_time():
    """``search`` sets the cut from the defaults' trial: their CPU ns per operation over the safety fraction."""
    engine, target = small_target()
    from advisor.core.params import ParamSpace

    prob = problem(ParamSpace(engine.parameters()), engine.name, safety=0.25)
    found = search(target, registry.create("learned-index", "random", prob, seed=3), 2, rounds=0)
    base = found.trials[0].result
    assert target.max_cpu_ns_per_op == pytest.approx(base.metrics["cpu_ns_per_op"] / 0.25)
    assert all(t.result.objective == (t.result.metrics or {}).get("cpu_ns_per_op") for t in found.trials
               if t.result.status == "measured")
    assert found.default["cpu_ns_per_op"] == base.objective and found.default["throughput_ops"] > 0


def test_search_on_the_updatable_index_counts_unsafe_evaluations_and_validates():
    engine, target = small_target("alex", "read-heavy", keyset="uniform")
    from advisor.core.params import ParamSpace

    prob = problem(ParamSpace(engine.parameters()), engine.name, safety=0.999999)  # almost any dip is unsafe
    opt = registry.create("learned-index", "grid", prob, seed=1)
    found = search(target, opt, 4, rounds=2)
    assert found.evaluations == 4 and len(found.trials) == 4
    unsafe = [t for t in found.trials if (t.result.metrics or {}).get("unsafe")]
    assert found.unsafe_evaluations == len(unsafe)
    assert all(t.result.status == "failed" and t.result.reason.startswith("unsafe") for t in unsafe)
    if found.changes:
        assert found.evidence is not None and found.evidence.rounds == 2


def test_keys_from_a_column_of_the_target(service, target_db):
    result = service.tune("learned-index", target_db, plan(keys="events.at", budget=2, optimizer="grid",
                                                           validate=False), by_hand=True)
    assert result.keys == 20000 and result.document()["evaluations"] == 2


@pytest.mark.parametrize("fields, message", [
    ({"keys": "books"}, "unknown key source 'books'"),
    ({"keys": "synthetic:nosuch"}, "unknown synthetic key set 'nosuch'"),
    ({"keys": "/nonexistent/keys.txt"}, "does not exist"),
    ({"keys": "events.nope"}, "nope"),
    ({"keys": "nosuch.column"}, "nosuch"),
    ({"workload": "lookup=2,insert=x"}, "insert needs a number"),
    ({"index": "btree"}, "unknown learned index 'btree'"),
    ({"keys": None}, "needs keys"),
    ({"range": "nosuch=1:2"}, "unknown parameter 'nosuch'"),
    ({"range": "oops"}, "expected NAME=LOW:HIGH"),
    ({"workload": "write-heavy"}, "pgm is read-only"),
])
def test_bad_input_is_one_line_before_any_work(service, target_db, fields, message):
    with pytest.raises(AdvisorError, match=message) as e:
        service.tune("learned-index", target_db, plan(**fields), by_hand=True)
    assert "\n" not in e.value.message
    assert service.store.runs() == []  # refused before anything was stored


def test_bad_sources_at_run_time_are_one_line(service, target_db, tmp_path):
    bad = tmp_path / "keys.txt"
    bad.write_text("12\nnot a key\n")
    with pytest.raises(AdvisorError, match="line 2 is not a non-negative integer key") as e:
        service.tune("learned-index", target_db, plan(keys=str(bad)), by_hand=True)
    assert "\n" not in e.value.message and "not a key" not in e.value.message  # never the file's content


def test_a_key_file_is_read_sorted_and_unique(tmp_path):
    path = tmp_path / "keys.txt"
    values = np.random.default_rng(0).integers(0, 2**40, 3000, dtype=np.uint64)
    path.write_text("\n".join(map(str, values)) + "\n")
    keys = key_sources.read(str(path))
    assert keys.dtype == np.uint64 and np.all(keys[1:] > keys[:-1]) and len(keys) == len(set(values.tolist()))


def test_a_range_narrows_the_searched_space(service, target_db):
    engine = factory.learned_index(INDEX)
    numeric = next(p for p in engine.parameters() if not p.categorical and p.low < float(p.default) < p.high)
    item = f"{numeric.name}={numeric.default}:{numeric.default}"
    result = service.tune("learned-index", target_db, plan(range=item, budget=3, validate=False), by_hand=True)
    assert {t.config[numeric.name] for t in result.trials} == {numeric.check(numeric.default)}


def test_the_bench_entry_point_runs_an_engine_over_streams():
    engine = factory.learned_index(INDEX)
    keys = keysets.synthetic("osm", 20_000, 2)
    initial, stream = mixes.workload(keys, mixes.parse_mix(MIX), 20_000, 2)
    from advisor.core.params import ParamSpace

    opt = registry.create("learned-index", "random", problem(ParamSpace(engine.parameters()), engine.name), seed=2)
    found = tune_index(engine, initial, [stream, stream], opt, 3, rounds=0)
    assert found.evaluations == 3 and found.evidence is None and found.default["throughput_ops"] > 0
    assert [t.source for t in found.trials] == ["default", "random", "random"]


def test_a_killed_run_resumes_where_it_stopped(tmp_path, target_db):
    """The one trial loop (``advisor.tuning.trials``): a learned-index run interrupted after its third evaluation
    is marked interrupted with three trials stored; resumed by its id, with the plan it was started with, it
    runs only the two left, numbered on from there, and ends done."""
    def say(message: str) -> None:
        if message.startswith("evaluation 3/5"):
            raise KeyboardInterrupt

    store = Store(str(tmp_path / "advisor.duckdb"))
    with pytest.raises(KeyboardInterrupt):
        AdvisorService(store, say=say).tune("learned-index", target_db, plan(), by_hand=True)
    (row,) = store.runs()
    assert row["state"] == "interrupted"
    first = store.trials(row["id"])
    assert [t["number"] for t in first] == [0, 1, 2] and first[0]["metrics"]["throughput_ops"] > 0
    lines = []
    service = AdvisorService(store, say=lines.append)
    resumed_plan = service.resumed_plan(row["id"], "learned-index")
    assert resumed_plan == plan()
    result = service.tune("learned-index", target_db, resumed_plan, by_hand=True, resume=row["id"])
    stored = store.trials(row["id"])
    assert [t["number"] for t in stored] == [0, 1, 2, 3, 4] and [t["id"] for t in stored[:3]] == \
        [t["id"] for t in first]
    assert result.run_id == row["id"] and store.run(row["id"])["state"] == "done" and len(result.trials) == 5
    assert any(x.startswith(f"resuming run {row['id']}: 3 evaluation(s) already done") for x in lines)
    assert [x.split(" [")[0] for x in lines if x.startswith("evaluation ")] == ["evaluation 4/5", "evaluation 5/5"]
    with pytest.raises(AdvisorError, match="is a learned-index run; resume it as one"):
        service.resumed_plan(row["id"], "knobs")


def test_a_run_with_parallel_evaluations_stores_every_one(service, target_db):
    """``parallel=2``: the evaluations run two at a time on two copies of the harness (said in the run's progress),
    every one stored and numbered in the order it ended, the defaults' first."""
    lines: list[str] = []
    service = AdvisorService(service.store, say=lines.append)
    result = service.tune("learned-index", target_db, plan(parallel=2, budget=6, rounds=1), by_hand=True)
    stored = service.store.trials(result.run_id)
    assert [t["number"] for t in stored] == list(range(6)) and stored[0]["source"] == "default"
    assert all(t["status"] in ("measured", "failed") for t in stored)
    assert len({str(sorted(t["config"].items())) for t in stored}) == 6  # none run twice
    assert any("evaluations: in-process, 2 trials side by side" in x for x in lines)
    assert service.store.run(result.run_id)["options"]["parallel"] == 2
