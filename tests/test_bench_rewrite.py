"""``advisor bench rewrite`` end to end on a real server, on a few statements at a tiny scale (the full run takes
many minutes): the pipeline's answers checked again by the bench, sqlglot's outputs planned and checked, both timed
against the original, the strategies compared; a table, JSON and a plot."""

import json
import os
import subprocess
import sys

NAMES = "q17,q21,few_orders_count_bug,not_in_nullable"


def test_bench_rewrite_small_run_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "bench"
    res = subprocess.run([sys.executable, "-m", "advisor", "bench", "rewrite", "--scale", "0.01", "--rounds", "1",
                          "--episodes", "12", "--only", NAMES, "--out", str(out)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "ADVISOR_STORE": str(tmp_path / "s.duckdb")})
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((out / "rewrite.json").read_text())
    rows = {r["name"]: r for r in doc["statements"]}
    assert set(rows) == set(NAMES.split(","))
    assert not doc["summary"]["ours_wrong_or_invalid"]  # every answer of ours re-checked by the bench
    assert all(r["ours_verdict"] in (None, "equivalent") for r in rows.values())
    assert rows["few_orders_count_bug"]["rewritten"] and "COALESCE" in rows["few_orders_count_bug"]["rewritten"]
    assert rows["not_in_nullable"]["rewritten"] is None and rows["not_in_nullable"]["reason"]
    assert all(r["original_lat_ms"] > 0 for r in rows.values())
    assert {"aurora", "saturate", "greedy", "random"} <= set(doc["strategies"]["q17"])
    assert all(r["sqlglot_verdict"] or r["sqlglot_error"] for r in rows.values())
    assert (out / "rewrite.png").stat().st_size > 10_000
    assert "target zero wrong or invalid (ours): met" in res.stdout and "sqlglot" in res.stdout
