"""How long a shadow takes to be ready, by the way it is made, on databases of growing size: a thin clone of a warm
replica beside a full copy (``pg_dump | pg_restore``, ``mariadb-dump``) and a sampled copy, in the same run.

For each engine and TPC-H scale: a local "production" server with the generated data; then each peer makes a
shadow of it (``connectors.factory.clone`` for the copies; ``build_replica`` once, then ``Replica.clone`` for the
thin clones), and the time from the request to the first answered statement on the shadow is its ready time. The
replica's build is a one-time cost and reported apart. Thin clones are made ``clones`` times (the median is the
figure); copies once each (they take minutes at scale). Nothing is asserted: the table says what was measured,
the JSON and PNG keep it, and ``meets_target`` compares the thin clone's median with ``READY_TARGET_S``.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent
from connectors import factory
from connectors.base import Connector, Shadow
from workloads import tpch

READY_TARGET_S = 5.0  # issue 43: a shadow from a warm replica ready in at most 5 s, whatever the size


@dataclass(frozen=True)
class LatencyBenchOptions:
    engines: tuple[str, ...] = (factory.DEFAULT_ENGINE,)
    scales: tuple[float, ...] = (1.0,)  # TPC-H scale factors (SF 1 is about 1 GB loaded)
    clones: int = 3  # thin clones timed per size (the median is reported)
    sample_percent: float = 10.0  # the sampled copy's share of each large table
    copies: bool = True  # time the full and sampled copies too (minutes at scale)
    out_dir: str = "bench-results/latency"


@dataclass
class Row:
    engine: str
    scale: float
    database_bytes: int
    method: str  # "thin clone" | "full copy" | "sampled copy"
    ready_s: list[float] = field(default_factory=list)
    once_s: float | None = None  # the replica's one-time build
    error: str | None = None

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.ready_s) if self.ready_s else None


def _ready(make: Callable[[], Shadow]) -> float:
    """Seconds from asking for a shadow to its first answered statement; the shadow is closed after."""
    started = time.monotonic()
    shadow = make()
    try:
        shadow.connector.table_rows()  # the catalog answers: the server is up and the data is there
        return time.monotonic() - started
    finally:
        shadow.close()


def _copies(target: Connector, row_of: Callable[[str], Row], o: LatencyBenchOptions, say: Say) -> None:
    for method, percent in (("full copy", None), ("sampled copy", o.sample_percent)):
        row = row_of(method)
        say(f"  {method}{f' ({percent:g}%)' if percent else ''}: copying the target into a new shadow")
        try:
            row.ready_s.append(_ready(lambda: factory.clone(target, sample_percent=percent, say=say)))
        except AdvisorError as e:
            row.error = str(e)


def _thin(target: Connector, row: Row, o: LatencyBenchOptions, say: Say) -> None:
    with tempfile.TemporaryDirectory(prefix="advisor-bench-replica-") as tmp:
        say("  warm replica: building it once (base copy + replication)")
        started = time.monotonic()
        try:
            replica = factory.build_replica(target, Path(tmp) / "replica", say)
        except AdvisorError as e:
            row.error = str(e)
            return
        row.once_s = time.monotonic() - started
        try:
            replica.wait_for(replica.position(target), 120.0, say)
            for i in range(o.clones):
                say(f"  thin clone {i + 1}/{o.clones}")
                row.ready_s.append(_ready(lambda: replica.clone(say)))
        except AdvisorError as e:
            row.error = str(e)
        finally:
            replica.remove()


def measure(engine: str, scale: float, o: LatencyBenchOptions, say: Say) -> list[Row]:
    rows: dict[str, Row] = {}
    production = factory.sandbox(engine, "latency-production", feeds_replicas=True)
    say(f"{engine}, TPC-H scale {scale:g}: starting the production server and loading the data")
    with production:
        production.create_database("tpch")
        target = production.connector("tpch")
        tpch.load(target, scale, progress=lambda m: say(f"  {m}"))
        size = target.database_bytes()
        say(f"  the database holds {size / 2**30:.2f} GiB")

        def row_of(method: str) -> Row:
            return rows.setdefault(method, Row(engine, scale, size, method))

        _thin(target, row_of("thin clone"), o, say)
        if o.copies:
            _copies(target, row_of, o, say)
    return list(rows.values())


def run(o: LatencyBenchOptions = LatencyBenchOptions(), say: Say = silent) -> dict:
    started = time.monotonic()
    rows = [r for engine in o.engines for scale in o.scales for r in measure(engine, scale, o, say)]
    doc = {"machine": asdict(detect()), "options": asdict(o), "target_s": READY_TARGET_S,
           "rows": [{**asdict(r), "median_s": r.median_s} for r in rows], "wall_s": time.monotonic() - started}
    thin = [r.median_s for r in rows if r.method == "thin clone" and r.median_s is not None]
    doc["meets_target"] = bool(thin) and max(thin) <= READY_TARGET_S
    out = Path(o.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latency.json").write_text(json.dumps(doc, indent=2))
    plot(doc, out / "latency.png")
    return doc


def table(doc: dict) -> str:
    head = f"{'engine':<9} {'scale':>5} {'GiB':>6}  {'method':<13} {'ready s':>8} {'n':>2} {'vs full':>8} {'once s':>7}"
    lines = [head, "-" * len(head)]
    full = {(r["engine"], r["scale"]): r["median_s"] for r in doc["rows"] if r["method"] == "full copy"}
    for r in doc["rows"]:
        base = full.get((r["engine"], r["scale"]))
        ratio = f"{base / r['median_s']:.0f}x" if base and r["median_s"] else "-"
        ready = f"{r['median_s']:.2f}" if r["median_s"] is not None else "-"
        once = f"{r['once_s']:.0f}" if r["once_s"] is not None else "-"
        lines.append(f"{r['engine']:<9} {r['scale']:>5g} {r['database_bytes'] / 2**30:>6.2f}  {r['method']:<13} "
                     f"{ready:>8} {len(r['ready_s']):>2} {ratio:>8} {once:>7}" + (f"  {r['error']}" if r["error"] else ""))
    verdict = "meets" if doc["meets_target"] else "does NOT meet"
    lines.append(f"\nthin clones {verdict} the {doc['target_s']:g} s target; 'vs full': how many times faster than a "
                 f"full copy; 'once s': the replica's one-time build")
    lines.append(f"wall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores")
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    methods = sorted({r["method"] for r in doc["rows"]})
    sizes = sorted({(r["engine"], r["scale"]) for r in doc["rows"]})
    width = 0.8 / max(len(methods), 1)
    for i, method in enumerate(methods):
        ys = [next((r["median_s"] or 0 for r in doc["rows"] if (r["engine"], r["scale"]) == s and
                    r["method"] == method), 0) for s in sizes]
        ax.bar([k + i * width for k in range(len(sizes))], ys, width, label=method)
    ax.axhline(doc["target_s"], color="grey", linestyle="--", linewidth=1, label=f"{doc['target_s']:g} s target")
    ax.set_xticks([k + width * (len(methods) - 1) / 2 for k in range(len(sizes))])
    ax.set_xticklabels([f"{e} SF {s:g}" for e, s in sizes])
    ax.set_yscale("log")
    ax.set_ylabel("seconds until the shadow answers")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
