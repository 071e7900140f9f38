"""``advisor bench learned-index`` at a tiny size on the real compiled index: the JSON's structure (cells, tuners'
validated figures, the sorted array, LITune's meta-training on held-out datasets, drift phases, the targets), the
table and the plots written, a tuned figure below the defaults' always flagged; bad names refused in one line."""

from __future__ import annotations

import json

import pytest

from advisor.bench.learned import compare, report
from advisor.bench.learned.bench import LearnedBenchOptions, LearnedIndexBench, interval, summarize, table
from advisor.core.errors import InvalidInput
from tests.advisor.cli.test_cli_service import cli

TINY = dict(datasets=("books",), workloads=("balanced",), seeds=(1,), keys=20_000, budget=4,
            tuners=("random", "litune"), rounds=2, episodes=3, device="cpu", drift_phases=2, drift_ops=3_000, drift_budget=3, online_budget=2)


# the tiny run takes ~30 s here (the index's compiled loops load, LITune meta-trains): its tests are marked slow
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-li")
    doc = LearnedIndexBench(LearnedBenchOptions(**TINY, out_dir=str(out))).run()
    return out, doc


@slow
def test_the_json_document(tiny):
    out, doc = tiny
    assert json.loads((out / "learned-index.json").read_text())["cells"][0]["cell"] == doc["cells"][0]["cell"]
    [cell] = doc["cells"]
    assert (cell["dataset"], cell["workload"], cell["seed"], cell["index"]) == ("books", "balanced", 1, "alex")
    assert cell["keys"] == 20_000 and cell["operations"] > 0
    assert [r["tuner"] for r in cell["tuners"]] == ["random", "litune"]
    for r in cell["tuners"]:
        assert r["default"]["throughput_ops"] > 0 and r["tuned"]["throughput_ops"] > 0 and r["tuned"]["p99_ns"] > 0
        assert 1 <= r["evaluations"] <= 4 and len(r["trace"]) == r["evaluations"] == len(r["objectives"])
        assert 0 <= r["unsafe"] <= r["evaluations"] - 1  # the defaults' trial runs without the safety cut
        assert r["reach95"] is None or 1 <= r["reach95"] <= r["evaluations"]
        assert r["gain"] == pytest.approx(r["tuned"]["throughput_ops"] / r["default"]["throughput_ops"], rel=1e-3)
        assert r["verdict"] == {True: "accepted", False: "rejected", None: "unchanged"}[r["accepted"]]
        if r["finalists"]:  # the pick re-measured: the defaults first, 4 rotating rounds each, one picked
            assert r["finalists"][0]["trial"] == 0 and all(f["rounds"] == 4 for f in r["finalists"])
            assert sum(f["chosen"] for f in r["finalists"]) == 1 and r["picked"]
            chosen = next(f for f in r["finalists"] if f["chosen"])
            typed_as_text = {k: str(v) for k, v in chosen["config"].items()}  # finalists' values are typed
            assert typed_as_text == r["best"] and f"picked {r['picked']}" in table(doc)
        if r["accepted"] is not None:  # validated: the CPU-time gain it decided on, inside its interval
            lo, hi = r["cpu_gain_ci"]
            assert lo <= r["cpu_gain"] <= hi and 1 <= r["rounds"] <= 2 and "decided on thread CPU time" in r["measured"]
            assert not r["accepted"] or lo >= r["min_gain"]  # accepted only where the interval clears it
            assert interval(r) in table(doc)
    assert max(v for r in cell["tuners"] for v in r["trace"]) == cell["best_trial_throughput"]
    assert any(r["reach95"] is not None for r in cell["tuners"])  # whoever found the best trial reached it
    assert cell["sorted_array"]["throughput_ops"] > 0 and cell["defaults"]["throughput_ops"] > 0
    sa = cell["sorted_array"]  # measured side by side with the configuration of the highest validated gain
    assert sa["index_tuner"] == max(cell["tuners"], key=lambda r: r["gain"])["tuner"]
    assert sa["index_over_sorted"] == pytest.approx(sa["index_throughput_ops"] / sa["throughput_ops"], rel=1e-3)
    training = doc["training"]["alex"]
    assert training["episodes"] == 3 and training["device"] == "cpu" and training["seconds"] > 0
    assert training["tasks"] and not any(t.startswith("books/") for t in training["tasks"])  # books held out
    assert "books" in training["held_out"]
    assert (out / "models").is_dir() and any((out / "models").iterdir())  # the model the cells loaded


@slow
def test_drift_phases(tiny):
    _, doc = tiny
    drift = doc["drift"]
    assert [p["phase"] for p in drift["phases"]] == [1, 2]
    first, second = drift["phases"]
    assert second["keys"] > first["keys"]  # the first phase's inserts stay in the live index
    assert first["mix"]["insert"] < second["mix"]["insert"]  # read-heavy toward write-heavy
    for p in drift["phases"]:
        assert min(p["online"], p["retuned"], p["one_shot"], p["defaults"]) > 0 and p["online_p99_ns"] > 0
        assert p["ratio_online_retuned"] == pytest.approx(p["online"] / p["retuned"], rel=1e-3)
    assert second["online_evaluations"] <= 2 and first["online_evaluations"] <= 3
    assert drift["one_shot_config"] and drift["retuned_by"] == "hibo"


@slow
def test_targets_table_and_plots(tiny):
    out, doc = tiny
    t = doc["targets"]
    assert set(t) == {"gain", "litune_vs_bo", "drift", "sorted_array", "leader"}
    assert t["leader"]["ahead"] in ("random", "litune") and set(t["leader"]["tuners"]) == {"random", "litune"}
    assert "ahead: " in table(doc)
    rows = doc["cells"][0]["tuners"]
    assert t["gain"]["gains"] == {"books/balanced": pytest.approx(max(r["gain"] if r["accepted"] else 1.0
                                                                      for r in rows), abs=1e-3)}
    assert t["gain"]["measured"] == {"books/balanced": pytest.approx(max(r["gain"] for r in rows), abs=1e-3)}
    assert t["litune_vs_bo"]["met"] is None  # GP-BO was not run
    assert t["drift"]["ratios"] == [p["ratio_online_retuned"] for p in doc["drift"]["phases"]]
    assert t["sorted_array"]["met"] is None  # neither a read-only nor a write-heavy cell
    text = table(doc)
    assert "books/balanced/s1/alex" in text and "sorted" in text and "targets:" in text
    for name in ("learned-index.png", "learned-index-drift.png"):
        assert (out / name).stat().st_size > 10_000


@slow
def test_below_the_defaults_is_always_flagged(tiny):
    """Every tuner row whose validated throughput is under the defaults' is flagged, listed by the target and
    marked in the table; a flagged row the validation did not reject makes the target unmet."""
    _, doc = tiny
    rows = [(c, r) for c in doc["cells"] for r in c["tuners"]]
    for c, r in rows:
        assert r["below_defaults"] == (r["tuned"]["throughput_ops"] < r["default"]["throughput_ops"])
    listed = set(doc["targets"]["gain"]["below_defaults"])
    assert listed == {f"{c['cell']}:{r['tuner']}" for c, r in rows if r["below_defaults"]}
    # the same document with the first row measured below its defaults and accepted
    c, r = rows[0]
    r.update(tuned={**r["tuned"], "throughput_ops": r["default"]["throughput_ops"] * 0.5}, below_defaults=True,
             accepted=True)
    r["gain"] = 0.5
    doc["targets"] = report.targets(doc)
    assert f"{c['cell']}:{r['tuner']}" in doc["targets"]["gain"]["below_not_rejected"]
    assert doc["targets"]["gain"]["met"] is False
    assert "BELOW DEFAULTS" in table(doc)


def _doc(*rows):
    """A bench document of one cell whose tuner rows are (tuner, accepted, cpu gain, interval, configuration)."""
    return {"cells": [{"cell": "books/read-only/s1/alex", "tuners": [
        {"tuner": t, "accepted": a, "cpu_gain": g, "cpu_gain_ci": ci, "best": {"density": b}} for t, a, g, ci, b in rows]}]}


def test_two_runs_compared_cell_by_cell():
    quiet = _doc(("tpe", True, 0.30, [0.25, 0.35], "0.5"), ("litune", True, 0.10, [0.04, 0.16], "0.6"),
                 ("random", None, None, None, "0.7"))
    loaded = _doc(("tpe", True, 0.28, [0.20, 0.33], "0.5"), ("litune", False, 0.01, [-0.05, 0.06], "0.8"),
                  ("random", None, None, None, "0.7"))
    cmp = compare.compare(quiet, loaded)
    by = {p["tuner"]: p for p in cmp["pairs"]}
    assert by["tpe"]["same_verdict"] and by["tpe"]["inside"] and by["tpe"]["same_configuration"]
    assert not by["litune"]["same_verdict"] and by["litune"]["inside"] is False
    assert not by["litune"]["same_configuration"]
    assert by["random"]["same_verdict"] and by["random"]["inside"] is None
    assert (cmp["same_verdicts"], cmp["rows"], cmp["inside"], cmp["validated_both"]) == (2, 3, 1, 2)
    text = compare.table(cmp)
    assert "+10.0% [+4.0%, +16.0%]" in text and "same verdicts: 2/3" in text


@pytest.mark.parametrize("change, words", [
    (dict(datasets=("books", "wiki")), "unknown datasets wiki"),
    (dict(workloads=("read-mostly",)), "unknown workloads read-mostly"),
    (dict(tuners=("smac",)), "unknown tuners smac"),
    (dict(device="tpu"), "unknown device 'tpu'"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, change, words):
    with pytest.raises(InvalidInput, match=words):
        LearnedIndexBench(LearnedBenchOptions(**{**TINY, **change}, out_dir=str(tmp_path / "x")))
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("option, value, words", [
    ("--datasets", "books,wiki", "unknown datasets wiki: choose from books, fb, osm, uniform, normal"),
    ("--workloads", "read-mostly", "unknown workloads read-mostly: choose from read-only, read-heavy"),
])
def test_the_cli_refuses_bad_names_in_one_line(tmp_path, option, value, words):
    res = cli(tmp_path, "bench", "learned-index", option, value, "--out", str(tmp_path / "out"))
    assert res.returncode == 1 and res.stdout == ""
    assert words in res.stderr and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@slow
def test_meta_train_only_times_the_training_alone(tmp_path):
    res = cli(tmp_path, "bench", "learned-index", "--meta-train-only", "--datasets", "books,fb,osm,uniform",
              "--workloads", "balanced", "--episodes", "2", "--device", "cpu", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads(res.stdout)
    alex = doc["training"]["alex"]
    assert doc["requested_device"] == "cpu" and alex["device"] == "cpu" and alex["episodes"] == 2
    assert alex["seconds"] > 0 and alex["evaluations"] >= 2
    from workloads.datasets.learned.keysets import SYNTHETIC  # the families the grid leaves out, and only those

    assert {t.split("/")[0] for t in alex["tasks"]} == set(SYNTHETIC) - {"books", "fb", "osm", "uniform"}
    assert json.loads((tmp_path / "out" / "meta-train.json").read_text())["training"]["alex"]["episodes"] == 2
    assert not (tmp_path / "out" / "learned-index.json").exists()  # nothing else ran


def test_the_shipped_model_stands_in_only_for_families_it_never_saw(tmp_path):
    from advisor.bench.learned import meta
    from advisor.tuning.learned_index.training import HELD_OUT_SETS

    held = LearnedBenchOptions(**{**TINY, "datasets": HELD_OUT_SETS, "litune_model": "shipped"})
    (tmp_path / "litune-alex-stale.pt").write_text("")
    info = meta.meta_train(held, tmp_path, lambda _m: None, ("alex",))["alex"]
    assert info["episodes"] > 0 and info["model"].endswith(".pt") and "bursty" in info["held_out"]
    assert not {t.split("/")[0] for t in info["tasks"]} & set(HELD_OUT_SETS)  # none of the evaluated families
    seen = LearnedBenchOptions(**{**TINY, "datasets": ("books", "normal"), "litune_model": "shipped"})
    with pytest.raises(InvalidInput, match="shipped LITune model for alex was trained on books, which the grid"):
        meta.meta_train(seen, tmp_path, lambda _m: None, ("alex",))
    with pytest.raises(InvalidInput, match="unknown LITune model 'mine'"):
        LearnedIndexBench(LearnedBenchOptions(**{**TINY, "litune_model": "mine"}, out_dir=str(tmp_path / "x")))


@slow
def test_summarize_recomputes_the_targets_from_a_saved_document(tiny, tmp_path):
    out, doc = tiny
    again = summarize(str(out / "learned-index.json"), str(tmp_path / "again"))
    assert again["cells"] == json.loads((out / "learned-index.json").read_text())["cells"]
    assert again["targets"] == report.targets(again)
    assert (tmp_path / "again" / "learned-index-drift.png").stat().st_size > 10_000


def test_summarize_refuses_a_file_that_is_not_a_bench_document(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("not json")
    res = cli(tmp_path, "bench", "learned-index", "--summarize", str(bad), "--out", str(tmp_path / "out"))
    assert res.returncode == 1 and res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.strip() == f"error: {bad} is not a learned-index bench document: Expecting value: line 1 " \
                                 "column 1 (char 0)"
