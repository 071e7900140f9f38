"""``advisor bench latency`` at a tiny scale, on a real production sandbox: every peer (a thin clone of a warm
replica, the full and the sampled copy) and the first one-off rewrite after ``targets add --replica`` are timed in
one run, and the table, the JSON and the plot say so. Nothing about the figures is asserted (they are the bench's
to report), only that each was measured."""

from __future__ import annotations

import json

from advisor.bench.latency.bench import ONEOFF, LatencyBenchOptions, run, table


def test_the_bench_times_every_peer_and_the_first_rewrite_in_one_run(tmp_path):
    lines = []
    doc = run(LatencyBenchOptions(scales=(0.01,), clones=1, out_dir=str(tmp_path)), say=lines.append)
    by = {r["method"]: r for r in doc["rows"]}
    assert set(by) == {"thin clone", "full copy", "sampled copy", ONEOFF}
    assert all(r["error"] is None and len(r["ready_s"]) == 1 and r["median_s"] > 0 for r in by.values()), by
    assert by[ONEOFF]["once_s"] > 0 and by["thin clone"]["once_s"] > 0  # each replica's one-time build
    assert doc["oneoff_meets_target"] in (True, False) and "first one-off rewrite" in table(doc)
    assert json.loads((tmp_path / "latency.json").read_text())["rows"] == doc["rows"]
    assert (tmp_path / "latency.png").stat().st_size > 0
