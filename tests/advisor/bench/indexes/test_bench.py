"""``advisor bench indexes`` end to end on a real server, at a tiny scale (the full run is many minutes)."""

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow  # benchmark-scale (27 s here): in `make test-slow`
def test_bench_indexes_small_run_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "bench"
    res = subprocess.run([sys.executable, "-m", "advisor", "bench", "indexes", "--scale", "0.01", "--mixes", "2",
                          "--budgets", "0.1,0.5", "--episodes", "6", "--rounds", "1", "--device", "cpu",
                          "--out", str(out)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "ADVISOR_STORE": str(tmp_path / "s.duckdb")})
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "indexes.json").read_text())
    assert {c["advisor"] for c in doc["cells"]} == {"noindex", "dexter", "extend", "ilp", "ia2"}
    assert len(doc["cells"]) == 5 * 2 * 2 and len(doc["held_out"]) == 4
    for c in doc["cells"]:
        if c["status"] == "ok":
            assert 0 < c["rc"] <= 1.0 + 1e-9
            assert c["estimated_bytes"] <= c["budget"] * doc["data_bytes"]
    assert all(c["rc"] == 1.0 for c in doc["cells"] if c["advisor"] == "noindex")
    assert doc["training"]["episodes"] == 6
    assert {"ia2", "extend", "whatif_rc"} <= set(doc["real"])
    assert (out / "indexes-rc.png").stat().st_size > 10_000
    assert "mean relative what-if cost" in res.stdout and "real runs" in res.stdout


# benchmark-scale (47 s here): in `make test-slow`; the default run keeps the generated-workload run below, which
# goes through the same WorkloadBench flow
@pytest.mark.slow
def test_bench_new_workloads_tiny_app_every_advisor_through_the_pipeline_with_real_runtimes(tmp_path):
    """``--workloads app`` at a tiny scale: every advisor advised by the pipeline and measured for real."""
    from advisor.bench.indexes.workloads import ADVISORS, PEERS, WorkloadBench, WorkloadBenchOptions, table

    options = WorkloadBenchOptions(workloads=("app",), app_scale=0.01, fill_rounds=2, measure_bindings=1, rounds=1,
                                   warmup=0, validation_rounds=1, episodes=4, samples=2, device="cpu",
                                   out_dir=str(tmp_path / "bench"))
    doc = WorkloadBench(options).run()
    rows = doc["workloads"]["app"]["advisors"]
    own = [r["advisor"] for r in rows if not r["advisor"].endswith("-raw")]
    assert own[:len(ADVISORS)] == list(ADVISORS)
    assert all(a.startswith("ia2@") and a[4:] in PEERS for a in own[len(ADVISORS):])  # within a peer's storage
    for raw in (r for r in rows if r["advisor"].endswith("-raw")):  # a peer's set as chosen, measured unvalidated
        peer = next(r for r in rows if r["advisor"] == raw["advisor"][:-4])
        assert raw["chosen"] == peer["chosen"] == len(raw["indexes"]) and set(peer["indexes"]) <= set(raw["indexes"])
    for r in rows:
        assert r["advise_s"] > 0 and r["relative_runtime"] > 0
        # the advised set's built sizes: some for a set, none without one (they may exceed the budget by what
        # HypoPG underestimated, so no bound by the budget)
        assert (r["storage_mb"] > 0) == bool(r["indexes"]), r
        if r["indexes"]:  # built and measured against no index on the production server
            assert r["baseline_ms"] > 0 and len(r["statements"]) == doc["workloads"]["app"]["statements"]
    assert next(r for r in rows if r["advisor"] == "noindex")["relative_runtime"] == 1.0
    assert "no_statement_slower" in doc["workloads"]["app"]["targets"]
    sizes = doc["workloads"]["app"]["sizes"]  # every index a validation built against a first run's estimate
    assert sizes["indexes"] and all(s["built_bytes"] > 0 for s in sizes["indexes"])
    assert all(isinstance(r["over_budget"], list) for r in rows)
    text = table(doc)
    assert all(a in text for a in ADVISORS) and "runtime/no-index" in text and "size model" in text
    assert (tmp_path / "bench" / "workloads.json").exists() and (tmp_path / "bench" / "workloads.png").exists()


@pytest.mark.slow  # a variant of the small index bench above (generated workloads): about 1 min
def test_bench_generated_workload_through_the_pipeline_against_the_peers(tmp_path):
    """``--workloads gen``: a workload drawn from the loaded data (not written for the advisor), observed, advised
    by IA2 and its peers through the pipeline, measured for real, and summed up against the best peer."""
    from advisor.bench.indexes.workloads import WorkloadBench, WorkloadBenchOptions, table
    from workloads.datasets.synthetic import INDEX_FAMILIES

    options = WorkloadBenchOptions(workloads=("gen-tpch.s3",), advisors=("ia2", "ilp", "supabase"), app_scale=0.01,
                                   generated_statements=6, fill_rounds=2, rounds=1, warmup=0, validation_rounds=1,
                                   episodes=4, samples=2, device="cpu", out_dir=str(tmp_path / "bench"))
    doc = WorkloadBench(options).run()
    w = doc["workloads"]["gen-tpch.s3"]
    assert 0 < w["statements"] <= 6 and w["fill_statements"] >= w["statements"]
    runs = {r["advisor"]: r for r in w["advisors"]}
    ia2 = runs["ia2"]
    # the pipeline's statements were the generated ones as run (not the generator's EXPLAINs), so IA2 planned them
    assert ia2["whatif_rc"] is not None and ia2["whatif_rc"] < 1.0, ia2
    # IA2's own set was costed against the baselines, the ILP among them, on the same problem
    assert {"ia2", "extend", "dexter", "ilp"} <= set(ia2["baselines"]) and not runs["ilp"]["baselines"]
    assert ia2["fallback"] in ("", "extend", "dexter", "ilp")
    if ia2["fallback"]:
        assert ia2["baselines"][ia2["fallback"]] <= ia2["baselines"]["ia2"]
    g = doc["generated"]
    [row] = g["workloads"]
    assert row["workload"] == "gen-tpch.s3" and row["peer"] in ("ilp", "supabase")
    assert row["ratio"] is not None and row["ratio"] > 0
    assert row["own_vs_ilp"] == pytest.approx(ia2["baselines"]["ia2"] / ia2["baselines"]["ilp"], rel=1e-3)
    duel = w.get("head_to_head")  # measured where IA2's set and the best peer's differ
    assert duel is None or (duel["peer"] == row["peer"] and duel["ratio"] > 0 and row["head_to_head"] == duel["ratio"])
    assert set(g["targets"]) == {"median_ratio_at_most_1", "worst_ratio_at_most_1.2", "no_statement_10pct_slower",
                                 "own_set_within_2pct_of_ilp_on_80pct", "head_to_head_median_at_most_1",
                                 "head_to_head_worst_at_most_1.2"}
    assert all(f in INDEX_FAMILIES for f in {q.split(".")[2] for q in ia2["statements"]})
    text = table(doc)
    assert "generated workloads" in text and "median ratio" in text
    assert (tmp_path / "bench" / "workloads-generated.png").exists()


def test_the_generated_summary_takes_the_median_and_worst_over_workloads():
    from advisor.bench.indexes.generated import summary

    def workload(mine, peer, slower=(), fallback="", own=None, plain=None, taken="", by="", duel=None):
        return {"statements": 10, **({"head_to_head": {"ratio": duel}} if duel else {}), "advisors": [
            {"advisor": "ia2", "slower": list(slower), "fallback": fallback, "correction": taken, "rechosen_from": by,
             "baselines": {"ia2": own, "ilp": 0.5} if own else {}},
            *([{"advisor": "ia2-uncorrected", "relative_runtime": plain}] if plain else []),
            {"advisor": "ilp", "slower": [], "fallback": "", "baselines": {}, "relative_runtime": peer}],
            "targets": {"vs_best_peer": {"peer": "ilp", "ia2": "ia2", "runtime": [mine, peer],
                                         "storage_mb": [1.0, 1.0]}}}

    s = summary({"app": workload(0.1, 0.1), "gen-tpch.s1": workload(0.2, 0.25, own=0.505, duel=0.9),
                 "gen-job.s1": workload(0.3, 0.2, slower=["q"], fallback="ilp", own=0.6, plain=0.4, taken="rechosen",
                                        duel=1.3),
                 "gen-tpcds.s1": workload(0.1, 0.1, own=0.5),
                 "gen-tpch.s2": workload(0.1, 0.1, fallback="ilp", own=0.5, taken="rechosen", by="extend")})
    assert [r["workload"] for r in s["workloads"]] == ["gen-tpch.s1", "gen-job.s1", "gen-tpcds.s1",
                                                       "gen-tpch.s2"]  # app is not generated
    assert s["median_ratio"] == 1.0 and s["worst_ratio"] == 1.5 and s["slower_statements"] == 1
    assert s["fallback_rate"] == 0.5 and s["own_within_2pct_share"] == 0.75
    assert s["uncorrected_median_ratio"] == 2.0 and s["rechosen"] == 2  # the step's effect, side by side
    # IA2's own set, the baseline's it fell back to, or the set the correction step took (a baseline's here)
    assert s["recommended_from"] == {"ia2": 2, "extend": 1, "ilp": 1}
    # measured head to head where the bench did (two workloads here): the median of 0.9 and 1.3, the worst
    assert (s["head_to_head_median"], s["head_to_head_worst"]) == (1.1, 1.3)
    assert s["targets"] == {"median_ratio_at_most_1": True, "worst_ratio_at_most_1.2": False,
                            "no_statement_10pct_slower": False, "own_set_within_2pct_of_ilp_on_80pct": False,
                            "head_to_head_median_at_most_1": False, "head_to_head_worst_at_most_1.2": False}
    assert summary({"app": workload(0.1, 0.1)}) is None


@pytest.mark.slow
def test_bench_new_workloads_app_and_job_from_the_command_line(tmp_path):
    out = tmp_path / "bench"
    res = subprocess.run([sys.executable, "-m", "advisor", "bench", "indexes", "--workloads", "app,job,gen",
                          "--schemas", "job,tpcds", "--seeds", "1", "--generated", "8",
                          "--app-scale", "0.02", "--job-scale", "0.01", "--episodes", "20", "--samples", "8",
                          "--rounds", "2", "--device", "cpu", "--out", str(out)], capture_output=True, text=True,
                         timeout=3600, env={**os.environ, "ADVISOR_STORE": str(tmp_path / "s.duckdb")})
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "workloads.json").read_text())
    assert set(doc["workloads"]) == {"app", "job", "gen-job.s1", "gen-tpcds.s1"}
    assert doc["workloads"]["job"]["statements"] == 33 and doc["generated"]["median_ratio"] is not None
    assert "runtime/no-index" in res.stdout and "target" in res.stdout and "generated workloads" in res.stdout


def test_the_peer_target_compares_ia2_within_the_peers_storage():
    """When IA2's set took more storage than the best peer's, the target uses its run within that storage."""
    from advisor.bench.indexes.workloads import targets

    def row(name, runtime, mb, slower=()):
        return {"advisor": name, "relative_runtime": runtime, "storage_mb": mb, "slower": list(slower),
                "indexes": ["x"], "advise_s": 1.0}

    result = {"advisors": [row("ia2", 0.06, 18.6), row("supabase", 0.085, 16.4), row("fkeys", 0.8, 12.0)]}
    assert not targets(result, "app")["vs_best_peer"]["met"]  # faster, but with more storage
    result["advisors"].append(row("ia2@supabase", 0.07, 16.1))
    got = targets(result, "app")
    assert got["vs_best_peer"]["met"] and got["vs_best_peer"]["ia2"] == "ia2@supabase"
    result["advisors"][-1] = row("ia2@supabase", 0.07, 16.1, slower=["q1"])
    assert not targets(result, "app")["no_statement_slower"]["met"]
    # the peers' own, unvalidated sets are compared too, with their slower statements shown
    result["advisors"].append({**row("supabase-raw", 0.05, 17.0, slower=["q7"])})
    raw = targets(result, "app")["vs_best_raw_peer"]  # ia2@supabase (16.1 MB) is the one within its storage
    assert raw["peer"] == "supabase-raw" and raw["ia2"] == "ia2@supabase" and raw["peer_slower"] == ["q7"]
    assert not raw["met"]  # 0.07 is slower than the raw set's 0.05
    result["advisors"][-1] = row("supabase-raw", 0.08, 17.0)
    assert targets(result, "app")["vs_best_raw_peer"]["met"]
    result["advisors"][-1] = row("supabase-raw", 0.08, 10.0)  # no run of ours fits in 10 MB
    assert not targets(result, "app")["vs_best_raw_peer"]["met"]


@pytest.mark.parametrize("args, said", [
    (["--workloads", "gen", "--schemas", "tpch,oracle"], "unknown: ['oracle']"),
    (["--workloads", "gen", "--seeds", "1,x"], "seeds must be comma-separated integers"),
    (["--workloads", "app,gen-mysql.s1"], "unknown workloads ['gen-mysql.s1']"),
])
def test_bench_indexes_refuses_unknown_generated_workloads_before_any_work(args, said, tmp_path):
    res = subprocess.run([sys.executable, "-m", "advisor", "bench", "indexes", *args, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and said in " ".join(res.stderr.split()), res.stderr[-1500:]
    assert "Traceback" not in res.stderr and not list(tmp_path.iterdir())
