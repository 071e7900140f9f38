"""A rule-based knob seeder in the spirit of PGTune: hardware + workload kind -> a configuration.

The rules are the heuristic a DBA would apply by hand (memory fractions, SSD costs, WAL sizes by workload kind).
Every value is clamped to the target's catalog bounds, and knobs already at the proposed value are left out.
Each proposed knob carries its reason (``explain()``).
"""

from __future__ import annotations

import math

from advisor.core import knobvalues
from advisor.core.domain import KnobChange
from optimizers.base import Config
from optimizers.knobs.problem import KnobOptimizer

GB = 1024**3
MB = 1024**2
KB = 1024
WAL_SIZES = {"web": (1 * GB, 4 * GB), "oltp": (2 * GB, 8 * GB), "dw": (4 * GB, 16 * GB),
             "desktop": (100 * MB, 2 * GB), "mixed": (1 * GB, 4 * GB)}
WORK_MEM_DIVISOR = {"web": 1, "oltp": 1, "dw": 2, "desktop": 6, "mixed": 2}


def pgtune(memory: int, cores: int, storage: str, kind: str, max_connections: int) -> dict[str, tuple[float, str, str]]:
    """Proposed values: name -> (value in bytes for memory knobs or plain number, unit family, reason)."""
    out: dict[str, tuple[float, str, str]] = {}
    shared = memory / 16 if kind == "desktop" else memory / 4
    out["shared_buffers"] = (shared, "memory", "25% of RAM" if kind != "desktop" else "1/16 of RAM (desktop)")
    out["effective_cache_size"] = (memory / 4 if kind == "desktop" else memory * 3 / 4, "memory",
                                   "75% of RAM: what the OS cache and shared buffers can hold")
    maint = min(memory / (8 if kind == "dw" else 16), 2 * GB)
    out["maintenance_work_mem"] = (maint, "memory", "RAM/16 (RAM/8 for analytics), at most 2GB")
    out["checkpoint_completion_target"] = (0.9, "", "spread checkpoint writes over 90% of the interval")
    wal_buffers = min(max(shared * 0.03, 32 * KB), 16 * MB)
    if 14 * MB <= wal_buffers < 16 * MB:
        wal_buffers = 16 * MB
    out["wal_buffers"] = (wal_buffers, "memory", "3% of shared_buffers, at most 16MB")
    out["default_statistics_target"] = (500 if kind == "dw" else 100, "", "richer statistics for analytics"
                                        if kind == "dw" else "the default sample size")
    out["random_page_cost"] = (4.0 if storage == "hdd" else 1.1, "", f"{storage}: random reads cost "
                               + ("4x sequential" if storage == "hdd" else "about the same as sequential"))
    out["effective_io_concurrency"] = ({"hdd": 2, "ssd": 200, "san": 300}.get(storage, 200), "",
                                       f"concurrent I/O a {storage} sustains")
    min_wal, max_wal = WAL_SIZES.get(kind, WAL_SIZES["mixed"])
    out["min_wal_size"] = (min_wal, "memory", f"WAL kept for a {kind} workload")
    out["max_wal_size"] = (max_wal, "memory", f"fewer forced checkpoints for a {kind} workload")
    workers = cores
    per_gather = 1
    if cores >= 4:
        per_gather = min(math.ceil(cores / 2), 4)
        out["max_worker_processes"] = (cores, "", "one worker per core")
        out["max_parallel_workers"] = (cores, "", "one parallel worker per core")
        out["max_parallel_workers_per_gather"] = (per_gather, "", "half the cores per query, at most 4")
        out["max_parallel_maintenance_workers"] = (per_gather, "", "half the cores for index builds, at most 4")
    work_mem = (memory - shared) / ((max_connections + workers) * 3) / per_gather
    work_mem = max(work_mem / WORK_MEM_DIVISOR.get(kind, 2), 64 * KB)
    out["work_mem"] = (work_mem, "memory", f"RAM left after shared_buffers over 3x {max_connections} connections"
                       + (f", halved for {kind}" if WORK_MEM_DIVISOR.get(kind, 2) > 1 else ""))
    if memory >= 32 * GB:
        out["huge_pages"] = (float("nan"), "try", "huge pages pay off with large shared_buffers")
    return out


class RulesOptimizer(KnobOptimizer):
    """One configuration from PGTune's rules, for the problem's hardware, workload kind and connection count;
    ``explain()`` gives each knob's reason. Asked again, it proposes the same configuration."""

    name = "rules"
    description = "PGTune-style rules from hardware and workload kind (a seeder; suggests one configuration)"

    def _setup(self) -> None:
        self.reasons: dict[str, str] = {}

    def explain(self) -> dict[str, str]:
        return dict(self.reasons)

    def _ask(self, n: int, current: Config | None) -> list[Config]:
        catalog = self.problem.space.catalog
        hw = self.problem.space.hardware
        max_conn = self.problem.max_connections
        if max_conn is None:
            max_conn = int(float(catalog["max_connections"].setting)) if "max_connections" in catalog else 100
        proposal = pgtune(hw.memory_bytes, hw.cores, hw.storage, self.problem.workload_kind, max_conn)
        changes: list[KnobChange] = []
        self.reasons = {}
        for name, (value, family, reason) in proposal.items():
            spec = catalog.get(name)
            if spec is None:
                continue
            if family == "try":
                text = "try"
            elif family == "memory":
                if value >= 16 * MB:
                    value = value // MB * MB  # whole megabytes read better and change nothing that matters
                _, unit_bytes = knobvalues.unit_factor(spec.unit)
                text = knobvalues.clamp(spec, value / unit_bytes)
            else:
                text = knobvalues.clamp(spec, value)
            if knobvalues.same_value(spec, spec.setting, text) if spec.vartype in {"integer", "real"} \
                    else spec.setting == text:
                continue
            changes.append(KnobChange(name, text))
            self.reasons[name] = reason
        return [tuple(changes)]
