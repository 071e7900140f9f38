"""What observing a production database costs it: pgbench TPS with and without observation, in the same run.

One pgbench run (``--builtin``, ``--progress 1``) of ``blocks`` x ``block_s`` seconds against a server with
production settings (fsync on; a sandbox of our own unless a DSN is given). The blocks alternate observation off
and on in ABBA order (off on on off off on ...), so a linear drift over the run (table growth, checkpoints)
cancels. In an "on" block a thread observes the database every ``interval_s`` seconds exactly as a scheduled job
or ``advisor targets observe`` does: ``AdvisorService.observe`` (pg_stat_statements, metrics, settings, table and
column statistics, indexes; the snapshot written to a DuckDB store). In an "off" block it does nothing.

Blocks are placed on pgbench's own clock (its per-second progress lines). The first ``settle_s`` seconds of every
block are dropped (an observation running past its block lands there), so observations in an "on" block start at
``block start + settle_s`` and then every ``interval_s``: all of them fall in measured seconds, at a rate of at
least one per ``interval_s`` (so the estimate errs on the high side).

Reported: TPS off and on (means of the blocks' per-second TPS), overhead = 1 - on/off, and its 95% t-interval with
blocks as the unit: each on-block is paired with its neighbouring off-block, the interval is that of the mean
paired difference (n - 1 degrees of freedom; none with a single pair), divided by the off mean. Also the
observations (count, median/max wall ms, client CPU ms), pgbench's failed transactions, the machine.
``meets_target`` is the point estimate ``overhead < 1%``, not the interval's upper bound. The observer, pgbench
and the server share this machine, so the observer's own CPU (client side) counts in the overhead; in production
the advisor runs on another host.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from connectors.factory import DEFAULT_ENGINE

OVERHEAD_TARGET = 0.01
_PROGRESS = re.compile(r"^progress: ([0-9.]+) s, ([0-9.]+) tps")


@dataclass(frozen=True)
class ObservationBenchOptions:
    scale: int = 10  # pgbench -s
    clients: int = 4
    jobs: int = 2
    block_s: int = 30
    blocks: int = 8  # even; ABBA order, observation off in the first
    interval_s: float = 10.0  # between observations in an "on" block
    settle_s: int = 2  # seconds dropped at the start of every block
    builtin: str = "tpcb-like"
    seed: int = 0  # pgbench --random-seed
    out_dir: str = "bench-results/observation"
    engine: str = DEFAULT_ENGINE  # of the sandbox observed when no DSN is given (the CLI's --engine)


def schedule(blocks: int) -> list[bool]:
    """True where observation is on: off on on off off on on off ..."""
    return [(i % 4) in (1, 2) for i in range(blocks)]


def summarize(samples: list[tuple[float, float]], on: list[bool], block_s: int, settle_s: int) -> dict:
    """Block means of per-second (pgbench second, tps) samples, the overhead and its 95% t-interval over pairs."""
    from scipy.stats import t as student

    per_block: list[list[float]] = [[] for _ in on]
    for sec, tps in samples:  # the sample at second k covers (k - 1, k]
        k = round(sec)
        block = (k - 1) // block_s if k > 0 else -1
        if 0 <= block < len(on) and k - block * block_s > settle_s:
            per_block[block].append(tps)
    means = [statistics.fmean(b) if b else math.nan for b in per_block]
    pairs = [(means[i], means[i + 1]) if not on[i] else (means[i + 1], means[i]) for i in range(0, len(on) - 1, 2)]
    off = statistics.fmean(p[0] for p in pairs)
    on_mean = statistics.fmean(p[1] for p in pairs)
    diffs = [a - b for a, b in pairs]
    ci = [None, None]
    if len(diffs) > 1 and off > 0 and all(math.isfinite(d) for d in diffs):
        half = student.ppf(0.975, len(diffs) - 1) * statistics.stdev(diffs) / math.sqrt(len(diffs))
        ci = [(statistics.fmean(diffs) - half) / off, (statistics.fmean(diffs) + half) / off]
    return {"tps_off": off, "tps_on": on_mean, "overhead": 1 - on_mean / off if off > 0 else math.nan,
            "overhead_ci": ci, "pairs": len(pairs), "block_tps": means, "block_samples": [len(b) for b in per_block]}


def run_observation_bench(options: ObservationBenchOptions = ObservationBenchOptions(), say: Say = silent,
                          dsn: str | None = None) -> dict:
    """Run the bench against ``dsn`` (its pgbench tables are replaced), or a sandbox of its own; see the module."""
    from connectors import factory

    factory.supported(options.engine)
    if options.blocks < 2 or options.blocks % 2:
        raise AdvisorError(f"blocks must be even and at least 2, not {options.blocks}")
    if not 0 <= options.settle_s < options.block_s - 1 or not options.interval_s > 0:
        raise AdvisorError("need 0 <= settle_s < block_s - 1 and interval_s > 0")
    if dsn is not None:
        return _bench(dsn, options, say)
    with factory.sandbox(options.engine, "bench-observe") as sandbox:  # production settings: fsync on
        return _bench(sandbox.create_database("obsbench"), options, say)


def _bench(dsn: str, options: ObservationBenchOptions, say: Say) -> dict:
    from advisor.service.factory import build_service
    from workloads.datasets import pgbench

    o = options
    say(f"pgbench --initialize --scale {o.scale}")
    pgbench.initialize(dsn, o.scale)
    on = schedule(o.blocks)
    due = [(b, b * o.block_s + o.settle_s + j * o.interval_s) for b in range(o.blocks) if on[b]
           for j in range(math.ceil((o.block_s - o.settle_s) / o.interval_s))]
    clock: dict[str, float] = {}  # base: monotonic time of pgbench second 0 (the earliest progress line's estimate)
    stop = threading.Event()
    observations: list[dict] = []
    errors: list[BaseException] = []

    def now() -> float | None:
        return time.monotonic() - clock["base"] if "base" in clock else None

    def observer() -> None:
        service = build_service(":memory:")
        try:
            for block, at in due:
                while not stop.is_set() and ((t := now()) is None or t < at):
                    stop.wait(0.02)
                if stop.is_set():
                    return
                if now() >= (block + 1) * o.block_s:  # the previous one overran this block: skip
                    continue
                start, cpu = now(), time.thread_time()
                service.observe(dsn, name="obsbench")
                observations.append({"block": block, "start_s": round(start, 3), "end_s": round(now(), 3),
                                     "cpu_ms": round(1000 * (time.thread_time() - cpu), 1)})
        except BaseException as e:  # reported after the run
            errors.append(e)
        finally:
            service.store.close()

    seconds = o.blocks * o.block_s
    args, env = pgbench.command(dsn, ["--no-vacuum", "--time", str(seconds), "--client", str(o.clients), "--jobs",
                                      str(o.jobs), "--builtin", o.builtin, "--progress", "1", "--random-seed",
                                      str(o.seed)])  # no secret on the command line
    say(f"pgbench {seconds} s, {o.clients} clients; {o.blocks} blocks of {o.block_s} s, observation every "
        f"{o.interval_s:g} s in blocks {[i + 1 for i, x in enumerate(on) if x]}")
    samples: list[tuple[float, float]] = []
    tail: list[str] = []
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watcher = threading.Thread(target=observer, name="observer", daemon=True)
    watcher.start()
    try:
        for line in proc.stderr:
            m = _PROGRESS.match(line)
            if not m:
                tail = [*tail[-4:], line.strip()]
                continue
            sec, tps = float(m.group(1)), float(m.group(2))
            clock["base"] = min(clock.get("base", math.inf), time.monotonic() - sec)
            samples.append((sec, tps))
            if round(sec) % o.block_s == 0 and 0 < sec <= seconds:
                b = round(sec) // o.block_s - 1
                kept = [x for s, x in samples if round(s) - b * o.block_s > o.settle_s]
                say(f"block {b + 1}/{o.blocks} ({'on' if on[b] else 'off'}): {statistics.fmean(kept or [tps]):.0f} "
                    f"tps, {sum(ob['block'] == b for ob in observations)} observations")
        stdout = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watcher.join(timeout=60)
    if proc.returncode != 0:
        raise AdvisorError(f"pgbench failed (exit {proc.returncode}): {' | '.join(tail)}")
    if errors:
        raise AdvisorError(f"observation failed during the bench: {errors[0]}") from errors[0]
    result = pgbench.parse_output(stdout)
    stats = summarize(samples, on, o.block_s, o.settle_s)
    ms = [1000 * (ob["end_s"] - ob["start_s"]) for ob in observations]
    doc = {"measures": "pgbench TPS with observation off and on, one run, ABBA blocks; overhead = 1 - on/off",
           "machine": _machine(dsn), "options": asdict(o), **stats, "block_on": on,
           "observations": len(observations),
           "observations_per_block": {str(b): sum(ob["block"] == b for ob in observations)
                                      for b in sorted({ob["block"] for ob in observations})},
           "observation_ms_median": round(statistics.median(ms), 1) if ms else None,
           "observation_ms_max": round(max(ms), 1) if ms else None,
           "observation_cpu_ms_median": statistics.median(ob["cpu_ms"] for ob in observations) if ms else None,
           "observation_log": observations, "pgbench": asdict(result), "samples": samples,
           "target": OVERHEAD_TARGET, "meets_target": stats["overhead"] < OVERHEAD_TARGET,
           "meets_target_is": "the point estimate overhead < target (not the interval's upper bound)"}
    out = Path(o.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "observation.json").write_text(json.dumps(doc, indent=2))
    return doc


def _machine(dsn: str) -> dict:
    from connectors import factory

    mem_kb = next((int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines()
                   if ln.startswith("MemTotal:")), 0)
    connector = factory.connector(dsn)
    return {"cpus": os.cpu_count(), "memory_gib": round(mem_kb / 1024**2, 1), "engine": connector.engine,
            "server_version": connector.observe().server_version,
            "note": "pgbench, the server and the observer share this machine"}


def table(doc: dict) -> str:
    """A short summary of a run."""
    o, (lo, hi) = doc["options"], doc["overhead_ci"]
    ci = f"95% CI {lo:+.2%} .. {hi:+.2%}, {doc['pairs']} block pairs" if lo is not None else "no CI: one block pair"
    m = doc["machine"]
    return "\n".join([
        f"pgbench {o['builtin']} scale {o['scale']}, {o['clients']} clients, {o['blocks']} blocks of {o['block_s']} s "
        f"(ABBA, first {o['settle_s']} s of each dropped), observation every {o['interval_s']:g} s in 'on' blocks",
        f"  TPS off {doc['tps_off']:.1f}, on {doc['tps_on']:.1f}: overhead {doc['overhead']:+.2%} ({ci})",
        f"  {doc['observations']} observations, median {doc['observation_ms_median']} ms (client CPU "
        f"{doc['observation_cpu_ms_median']} ms), max {doc['observation_ms_max']} ms; "
        f"pgbench failed transactions {doc['pgbench']['failed']}",
        f"  target overhead < {doc['target']:.0%}: {'met' if doc['meets_target'] else 'NOT met'} (point estimate)",
        f"  machine: {m['cpus']} CPUs, {m['memory_gib']} GiB, {m.get('engine', 'server')} {m['server_version']} "
        f"({m['note']})"])
