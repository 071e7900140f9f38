"""``advisor bench knobs`` end to end on a real server, at a tiny budget (the real run is minutes long)."""

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow  # benchmark-scale (50 s here): in `make test-slow`
def test_bench_knobs_small_run_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "bench"
    res = subprocess.run([sys.executable, "-m", "advisor", "bench", "knobs", "--workloads", "joins", "--trials", "3",
                          "--repeats", "1", "--surrogate-seeds", "0", "--out", str(out)],
                         capture_output=True, text=True,
                         timeout=600, env={**os.environ, "ADVISOR_STORE": str(tmp_path / "s.duckdb")})
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "knobs.json").read_text())
    (joins,) = doc["workloads"]
    assert [r["label"] for r in joins["runs"]] == ["hibo", "hibo-unseeded", "smac", "gp", "tpe", "random"]
    assert joins["pooled_trials"] == 18 and all(r["trials"] == 3 for r in joins["runs"])
    assert joins["gstar_ci"][0] <= joins["gstar"] <= joins["gstar_ci"][1]
    # every curve is best-so-far: it never goes down
    for r in joins["runs"]:
        assert all(b >= a for a, b in zip(r["curve"], r["curve"][1:]))
    assert (out / "knobs-convergence.png").stat().st_size > 10_000
    assert "G* =" in res.stdout and "hibo-unseeded" in res.stdout
