"""``advisor bench indexes`` end to end on a real server, at a tiny scale (the full run is many minutes)."""

import json
import os
import subprocess
import sys


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
