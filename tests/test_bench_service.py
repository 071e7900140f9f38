"""The service benches at toy sizes: they run against real servers and report what they measured."""

import json
import math

from advisor.bench.observation import ObservationBenchOptions, run_observation_bench, schedule


def test_observation_bench_observes_only_in_on_blocks(pg, tmp_path):
    dsn = pg.create_database("obsbench")
    options = ObservationBenchOptions(scale=1, clients=2, jobs=1, blocks=4, block_s=5, settle_s=1, interval_s=1.0,
                                      out_dir=str(tmp_path))
    doc = run_observation_bench(options, dsn=dsn)
    assert schedule(4) == [False, True, True, False]
    assert doc["observations"] >= 2 and set(doc["observations_per_block"]) <= {"1", "2"}
    assert doc["tps_off"] > 0 and doc["tps_on"] > 0 and math.isfinite(doc["overhead"])
    lo, hi = doc["overhead_ci"]
    assert lo <= hi
    saved = json.loads((tmp_path / "observation.json").read_text())
    assert saved["block_on"] == [False, True, True, False] and len(saved["block_tps"]) == 4
