"""The observation-overhead bench at a toy size, against a real server, and its statistics on known numbers."""

import json
import math

import pytest

from advisor.bench.service.observation import ObservationBenchOptions, run_observation_bench, schedule, summarize, table
from advisor.core.errors import AdvisorError

KEYS = {"machine", "options", "tps_off", "tps_on", "overhead", "overhead_ci", "block_tps", "block_on",
        "observations", "observations_per_block", "observation_ms_median", "observation_ms_max", "pgbench",
        "meets_target", "samples"}


@pytest.mark.slow  # a bench run (pgbench blocks): about 10 s
def test_observes_only_in_on_blocks_of_a_real_pgbench_run(pg, tmp_path):
    dsn = pg.create_database("obsbench")
    options = ObservationBenchOptions(scale=1, clients=2, jobs=1, blocks=2, block_s=5, interval_s=1.0,
                                      out_dir=str(tmp_path))
    doc = run_observation_bench(options, dsn=dsn)

    assert doc["block_on"] == [False, True]
    assert doc["observations"] > 0 and set(doc["observations_per_block"]) == {"1"}
    # every observation started inside the measured part of the on-block (pgbench's clock)
    assert all(ob["block"] == 1 and 5 + 2 <= ob["start_s"] < 10 for ob in doc["observation_log"])
    assert doc["tps_off"] > 0 and doc["tps_on"] > 0 and all(t > 0 for t in doc["block_tps"])
    assert math.isfinite(doc["overhead"]) and doc["overhead"] == pytest.approx(1 - doc["tps_on"] / doc["tps_off"])
    assert doc["overhead_ci"] == [None, None]  # one block pair: no interval
    assert doc["pgbench"]["transactions"] > 0 and doc["pgbench"]["failed"] == 0
    assert doc["machine"]["server_version"].startswith("15") and doc["machine"]["cpus"] >= 1
    assert doc["meets_target"] == (doc["overhead"] < 0.01)
    saved = json.loads((tmp_path / "observation.json").read_text())
    assert KEYS <= set(saved) and saved["observations"] == doc["observations"]
    assert "overhead" in table(doc)


def test_schedule_is_abba():
    assert schedule(2) == [False, True]
    assert schedule(8) == [False, True, True, False, False, True, True, False]


def test_summary_drops_the_settling_seconds_and_pairs_blocks():
    on = schedule(4)
    tps = {0: 100.0, 1: 90.0, 2: 94.0, 3: 100.0}  # on-blocks 10% and 6% slower
    samples = [(float(s), 1.0 if (s - 1) % 10 < 2 else tps[(s - 1) // 10]) for s in range(1, 41)]
    stats = summarize(samples, on, block_s=10, settle_s=2)
    assert stats["block_tps"] == [100.0, 90.0, 94.0, 100.0] and stats["block_samples"] == [8, 8, 8, 8]
    assert stats["overhead"] == pytest.approx(0.08)
    lo, hi = stats["overhead_ci"]
    # pairs (100, 90) and (100, 94): mean diff 8, sd 2.83, t(0.975, 1) = 12.71 -> 8 +- 25.4
    assert lo == pytest.approx((8 - 12.706 * 2.828 / math.sqrt(2)) / 100, abs=1e-3) and lo < 0 < 0.08 < hi


def test_rejects_an_odd_number_of_blocks():
    with pytest.raises(AdvisorError):
        run_observation_bench(ObservationBenchOptions(blocks=3), dsn="host=127.0.0.1 dbname=unused")
