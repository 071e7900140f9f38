"""``advisor bench knobs`` over generated workloads: the workload names a command line expands to, and (slow) a
generated multi-knob workload loaded, drawn and tuned by every optimizer on both engines at a tiny size, with the
summary over seeds; a run past its time limit still writes its table, JSON and plot and lists what it cut."""

import pytest

from advisor.bench.knobs.bench import BenchOptions, KnobBench
from advisor.bench.knobs.workloads import expand
from advisor.bench.knobs.generated import lines, parse, summary
from advisor.bench.knobs.table import table
from advisor.core.errors import NotFound


def test_gen_expands_to_every_schema_seed_and_kind_and_a_bad_name_is_refused():
    assert expand(("joins", "gen"), ("tpch", "job"), ("1", "2"), ("multi",)) == \
        ("joins", "multi-tpch.s1", "multi-tpch.s2", "multi-job.s1", "multi-job.s2")
    assert parse("gen-tpcds.s3").schema == "tpcds"
    with pytest.raises(NotFound):
        expand(("gen-oracle.s1",), (), (), ())
    with pytest.raises(ValueError):
        expand(("gen",), ("oracle",), ("1",), ("gen",))


@pytest.mark.slow  # a server, a load, 8 short runs and their re-measures per engine: minutes here
@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_a_generated_multi_knob_workload_runs_on_each_engine(engine, tmp_path):
    options = BenchOptions(workloads=("multi-tpch.s1",), trials=3, repeats=1, surrogate_seeds=0, opt_seeds=2,
                           statements=2, scale=0.01, validate="none", engine=engine, out_dir=str(tmp_path))
    doc = KnobBench(options).run()
    (w,) = doc["workloads"]
    assert w["engine"] == engine and w["statements"] == 2 and w["pooled_trials"] == 2 * 4 * 3
    assert sorted({(r["label"], r["seed"]) for r in w["runs"]}) == \
        sorted((label, s) for label in ("hibo", "smac", "gp", "tpe") for s in (0, 1))
    (row,) = doc["generated"]["workloads"]
    assert row["seeds"] == 2 and set(row["optimizers"]) == {"hibo", "smac", "gp", "tpe"}
    assert (tmp_path / "knobs.json").exists() and (tmp_path / "knobs-convergence.png").exists()


def test_a_run_past_its_time_limit_writes_what_it_has_and_lists_the_cut_workloads(tmp_path):
    options = BenchOptions(workloads=("multi-tpch.s1", "multi-tpch.s2"), engine="postgres,mariadb",
                           time_limit_s=1e-9, out_dir=str(tmp_path))
    doc = KnobBench(options).run()  # the limit has passed before the first server would start
    assert doc["workloads"] == [] and not doc["partial"]
    assert {(c["name"], c["engine"]) for c in doc["cut"]} == \
        {(n, e) for n in ("multi-tpch.s1", "multi-tpch.s2") for e in ("postgres", "mariadb")}
    assert (tmp_path / "knobs.json").exists()
    text = table(doc)
    assert "CUT by the time limit" in text and "multi-tpch.s2 on mariadb: the whole workload" in text


def test_a_run_whose_re_measure_was_cut_is_left_out_of_the_mean_not_counted_as_no_gain():
    def run(label, seed, again, cut=False):
        return {"label": label, "seed": seed, "gain": 0.3, "feasible_gain": 0.3, "share_of_gstar": 1.0,
                "remeasured_gain": again, "remeasure_cut": cut}
    w = {"name": "multi-tpch.s1", "engine": "postgres", "gstar": 0.3, "validated": [],
         "runs": [run("hibo", 0, 0.2), run("hibo", 1, None, cut=True), run("smac", 0, 0.2), run("smac", 1, None)]}
    s = summary([w])
    assert s["overall"]["hibo"]["gain"] == 0.2  # the cut run is not a run that kept the defaults
    assert s["overall"]["smac"]["gain"] == 0.1  # nothing to re-measure: it kept the defaults, 0


def test_a_workload_measured_in_single_passes_only_is_left_out_of_means_over_re_measured_ones():
    def run(label, gain, again):
        return {"label": label, "seed": 0, "gain": gain, "feasible_gain": gain, "share_of_gstar": 1.0,
                "remeasured_gain": again, "remeasure_cut": again is None}
    kept = {"name": "multi-tpch.s1", "engine": "mariadb", "gstar": 0.3, "validated": [],
            "runs": [run("hibo", 0.3, 0.1), run("smac", 0.3, 0.2)]}
    cut = {"name": "multi-tpch.s2", "engine": "mariadb", "gstar": 0.5, "validated": [],
           "runs": [run("hibo", 0.5, None), run("smac", 0.1, None)]}  # every re-measure cut: single passes
    s = summary([kept, cut])
    assert s["per_engine"]["mariadb"] == {"hibo": 0.1, "smac": 0.2}  # not the single passes' 0.5 and 0.1 mixed in
    assert s["left_out_of_means"] == ["mariadb/multi-tpch.s2"]
    assert summary([cut])["per_engine"]["mariadb"] == {"hibo": 0.5, "smac": 0.1}  # alone, single passes compare
    assert any("left out of the means" in line for line in lines(s))
