"""``advisor bench service`` (observation part): what observing a production database costs it.

One pgbench run (TPC-B-like, production settings: fsync on) of ``blocks`` x ``block_s`` seconds, with
``--progress 1``. The blocks alternate observation off and on in an ABBA order (off on on off off on ...), so that
a drift over the run cancels; during an "on" block the advisor observes the database every ``interval_s`` seconds,
exactly as a nightly job or ``advisor targets observe`` does (``AdvisorService.observe``: pg_stat_statements,
metrics, settings, tables, column statistics, indexes, stored in a DuckDB store). pgbench's per-second TPS is
attributed to blocks by pgbench's own clock; the first ``settle_s`` seconds of each block are left out.

Reported: TPS off and on (means of block means), overhead = 1 - on/off, its 95% interval (bootstrap over
adjacent off/on block pairs), observations made and their duration. Target: overhead < 1%.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.hardware import detect
from advisor.progress import Say, silent

OVERHEAD_TARGET = 0.01
_PROGRESS = re.compile(r"^progress: ([0-9.]+) s, ([0-9.]+) tps")


@dataclass(frozen=True)
class ObservationBenchOptions:
    scale: int = 10
    clients: int = 4
    jobs: int = 2
    blocks: int = 12  # even; ABBA order
    block_s: int = 20
    settle_s: int = 2
    interval_s: float = 10.0
    builtin: str = "tpcb-like"
    seed: int = 0
    out_dir: str = "bench-results/service"


def schedule(blocks: int) -> list[bool]:
    """True where observation is on: off on on off off on on off ..."""
    return [(i % 4) in (1, 2) for i in range(blocks)]


def run_observation_bench(options: ObservationBenchOptions, say: Say = silent, dsn: str | None = None) -> dict:
    from connectors.sandbox import PostgresSandbox

    if options.blocks < 2 or options.blocks % 2:
        raise AdvisorError(f"blocks must be even and at least 2, got {options.blocks}")
    if options.block_s <= options.settle_s:
        raise AdvisorError("block_s must be longer than settle_s")
    if dsn is not None:
        return _bench(dsn, options, say)
    with PostgresSandbox("bench-observe") as sandbox:  # production-like: fsync on
        return _bench(sandbox.create_database("pgbench"), options, say)


def _bench(dsn: str, options: ObservationBenchOptions, say: Say) -> dict:
    from advisor.service import AdvisorService
    from advisor.store import Store
    from workloads import pgbench

    say(f"pgbench -i -s {options.scale}")
    pgbench.initialize(dsn, options.scale)
    on = schedule(options.blocks)
    seconds = options.blocks * options.block_s
    samples: list[tuple[float, float]] = []  # (pgbench second, tps)
    clock = {"t": 0.0, "done": False}
    durations: list[float] = []
    observed_in: list[int] = []
    service = AdvisorService(Store(":memory:"))

    def observer() -> None:
        last = -1e9
        while not clock["done"]:
            block = int(clock["t"] // options.block_s)
            if block < options.blocks and on[block] and time.monotonic() - last >= options.interval_s:
                last = time.monotonic()
                service.observe(dsn, name="bench")
                durations.append(time.monotonic() - last)
                observed_in.append(block)
            time.sleep(0.05)

    connection, env = pgbench._connection(dsn)
    args = [pgbench._binary(), "--no-vacuum", "--time", str(seconds), "--client", str(options.clients), "--jobs",
            str(options.jobs), "--builtin", options.builtin, "--progress", "1", *connection]
    say(f"pgbench {seconds} s, {options.clients} clients; observation every {options.interval_s:g} s in blocks "
        f"{[i for i, o in enumerate(on) if o]} of {options.blocks} ({options.block_s} s each)")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watcher = threading.Thread(target=observer, daemon=True)
    watcher.start()
    tail: list[str] = []
    try:
        for line in proc.stderr:
            m = _PROGRESS.match(line)
            if m:
                t, tps = float(m.group(1)), float(m.group(2))
                clock["t"] = t
                samples.append((t, tps))
                if int(t) % options.block_s == 0:
                    block = int(t // options.block_s) - 1
                    say(f"block {block + 1}/{options.blocks} ({'on' if on[block] else 'off'}): {tps:.0f} tps")
            else:
                tail = [*tail[-4:], line.strip()]
        stdout = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        clock["done"] = True
        if proc.poll() is None:
            proc.kill()
        watcher.join(timeout=30)
        service.store.close()
    if proc.returncode != 0:
        raise AdvisorError(f"pgbench failed (exit {proc.returncode}): {' | '.join(tail)}")
    result = pgbench.parse_output(stdout)
    blocks: list[list[float]] = [[] for _ in range(options.blocks)]
    for t, tps in samples:
        block = int((t - 1e-9) // options.block_s)
        if 0 <= block < options.blocks and t - block * options.block_s > options.settle_s:
            blocks[block].append(tps)
    means = [statistics.fmean(b) if b else float("nan") for b in blocks]
    off = statistics.fmean(m for m, o in zip(means, on) if not o)
    on_mean = statistics.fmean(m for m, o in zip(means, on) if o)
    pairs = [(means[i], means[i + 1]) if not on[i] else (means[i + 1], means[i]) for i in range(0, options.blocks, 2)]
    rng = random.Random(options.seed)
    boot = []
    for _ in range(2000):
        pick = [rng.choice(pairs) for _ in pairs]
        boot.append(1 - statistics.fmean(p[1] for p in pick) / statistics.fmean(p[0] for p in pick))
    boot.sort()
    overhead = 1 - on_mean / off
    doc = {"machine": asdict(detect()), "options": asdict(options), "tps_off": round(off, 1),
           "tps_on": round(on_mean, 1), "overhead": overhead,
           "overhead_ci": [boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]],
           "block_tps": [round(m, 1) for m in means], "block_on": on,
           "observations": len(durations), "observations_per_block": {str(b): observed_in.count(b) for b in set(observed_in)},
           "observation_ms_median": round(1000 * statistics.median(durations), 1) if durations else None,
           "observation_ms_max": round(1000 * max(durations), 1) if durations else None,
           "pgbench": asdict(result), "target": OVERHEAD_TARGET, "meets_target": overhead < OVERHEAD_TARGET}
    out = Path(options.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "observation.json").write_text(json.dumps(doc, indent=2))
    return doc


def table(doc: dict) -> str:
    o = doc["options"]
    lo, hi = doc["overhead_ci"]
    return "\n".join([
        f"pgbench {o['builtin']} scale {o['scale']}, {o['clients']} clients, {o['blocks']} blocks of {o['block_s']} s "
        f"(ABBA), observation every {o['interval_s']:g} s in 'on' blocks",
        f"  TPS off {doc['tps_off']:.1f}, on {doc['tps_on']:.1f}: overhead {doc['overhead']:+.2%} "
        f"(95% CI {lo:+.2%} .. {hi:+.2%})",
        f"  {doc['observations']} observations, median {doc['observation_ms_median']} ms, max "
        f"{doc['observation_ms_max']} ms; pgbench failed transactions {doc['pgbench']['failed']}",
        f"  target overhead < {doc['target']:.0%}: {'met' if doc['meets_target'] else 'NOT met'} (point estimate)"])
