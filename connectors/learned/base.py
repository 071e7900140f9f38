"""What a learned index engine offers the harness above it: ``LearnedIndexEngine`` (its parameters, ``build``),
``Built`` (an index built over keys: ``run`` a stream, ``set_params`` online, ``copy``, ``contains``, ``range``),
and ``Measurement``, what one run of an ``OpStream`` measured.

Measuring: every engine executes a whole stream in ONE compiled loop (numba), in order. Per-operation latency is
read with the CPU cycle counter around each single operation (``connectors.learned.timing``), so ``p99_ns`` is the
99th percentile of single operations (the ~10 ns the two counter reads cost included). Throughput is operations
done over the wall time of the run (``time.perf_counter_ns`` around the compiled loop and, where an index had to
grow its memory pools in between, around the re-entries too); ``cpu_ns`` is the calling thread's CPU time over the
same span (``time.thread_time_ns``: the compiled loop runs in that thread, holding the GIL), which time spent
waiting for a core on a busy machine does not inflate. ``max_cpu_ns_per_op`` is the safety cut, on that CPU
time: every 1024 operations (after the first 4096) the compiled loop compares the cycle counter's elapsed time with
the operations done times the bound (a cheap first test: a thread's CPU time never exceeds its wall time) and
returns when it is over; the driver then reads the thread's CPU time (``cut``): over the bound, the run stops
(``stopped_early``); under it, the time was spent waiting for a core, the loop's clock is moved on by that wait
(``rebased``) and the loop resumes. ``memory_limit_bytes``: a structure larger than it after the run is a failed
measurement.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from advisor.core import priority
from advisor.core.params import ParamSpec
from connectors.learned.ops import OP_NAMES, OpStream

CHECK_EVERY = 1024  # the safety cut looks at the clock every this many operations
WARM_OPS = 4096  # ... but not before this many


@dataclass(frozen=True)
class Measurement:
    """One run of a stream: ``throughput_ops`` (ops/s over all ops done), ``p99_ns`` (99th percentile of single-op
    latency, ns), ``samples_ns`` (per op type, the latency of every op done, ns), ``memory_bytes`` (the structure's
    size after the run), ``stats`` (structure statistics, finite floats), ``ops_done``; ``stopped_early`` when
    the safety cut stopped it; ``failed`` says why the configuration could not run ("" when it ran); ``cpu_ns``:
    the thread CPU time of the run (ns), beside the wall time ``throughput_ops`` is computed from."""

    throughput_ops: float
    p99_ns: float
    samples_ns: dict[str, np.ndarray]
    memory_bytes: int
    stats: dict[str, float]
    ops_done: int
    stopped_early: bool = False
    failed: str = ""
    cpu_ns: int = 0

    @classmethod
    def failure(cls, why: str, memory_bytes: int = 0, stats: Mapping[str, float] | None = None) -> Measurement:
        return cls(0.0, float("inf"), {}, memory_bytes, dict(stats or {}), 0, failed=why)


class Built(Protocol):
    def run(self, stream: OpStream, *, max_cpu_ns_per_op: float | None = None,
            memory_limit_bytes: int | None = None) -> Measurement: ...
    def set_params(self, params: Mapping[str, str]) -> None: ...
    def copy(self) -> Built: ...
    def memory_bytes(self) -> int: ...
    def contains(self, keys: np.ndarray) -> np.ndarray: ...
    def range(self, start: int, n: int) -> np.ndarray: ...


class LearnedIndexEngine(Protocol):
    name: str
    read_only: bool

    def parameters(self) -> tuple[ParamSpec, ...]: ...
    def build(self, keys: np.ndarray, params: Mapping[str, str]) -> Built: ...


def check_keys(keys) -> np.ndarray:
    """``keys`` as sorted unique uint64 (ValueError otherwise; 2**64-1 is reserved)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    if keys.ndim != 1:
        raise ValueError("keys must be a one-dimensional array")
    if len(keys) > 1 and not np.all(keys[1:] > keys[:-1]):
        raise ValueError("keys must be sorted and unique")
    if len(keys) and keys[-1] == np.uint64(2**64 - 1):
        raise ValueError("key 2**64-1 is reserved")
    return keys


# loop status codes shared by the compiled loops: done, stopped by the safety cut, stuck (no progress: the run
# fails, ``_stuck()`` says why), or (an engine's own codes) a pool to grow first
DONE, STOPPED, STUCK = 0, 1, 3
NO_PROGRESS = "the index stopped making progress: "
MAX_GROWS = 8  # pool growths one operation may ask for before the run fails


def cut(ops_done: int, cpu_ns: int, max_cpu_ns_per_op: float) -> bool:
    """Whether the safety cut stops a run: its thread CPU time over ``ops_done`` operations is above the bound.

    >>> cut(8192, 8192 * 300, 200.0), cut(8192, 8192 * 150, 200.0)  # 300 ns/op of CPU stops; 150 goes on
    (True, False)
    """
    return cpu_ns > ops_done * max_cpu_ns_per_op


def rebased(now_ticks: int, t_begin: int, cpu_ns: int, ns_per_tick: float) -> int:
    """The loop's new start tick after a stop the CPU time does not confirm: ``cpu_ns`` before ``now_ticks``,
    so that the loop's elapsed ticks count the thread's CPU time and not the wait for a core (never before the
    run's own start).

    >>> rebased(10_000, 2_000, 3_000, 1.0)  # 8,000 ticks elapsed, 3,000 ns of it on the CPU: 5,000 were a wait
    7000
    """
    return max(int(t_begin), int(now_ticks) - int(cpu_ns / ns_per_tick))


class CompiledRun:
    """The run driver every engine shares. A subclass offers ``_loop(stream, start, lat, t_begin,
    max_ticks_per_op) -> (next_op, status)`` (a compiled loop from op ``start``; status ``DONE``, ``STOPPED``,
    ``STUCK`` (``_stuck()`` says why) or an engine's own code asking ``_grow(status, memory_limit_bytes)`` to enlarge
    a pool before it resumes at ``next_op``; ``_grow`` returns why it refuses ("memory bound exceeded: ..." past
    the run's memory limit), "" when it grew), and
    ``memory_bytes()``, ``stats()``. Termination is structural: every compiled loop is bounded; a stuck loop, a
    pool that may not grow, or one that grows ``MAX_GROWS`` times for one operation ends the run as a failed
    measurement ("the index stopped making progress: ...")."""

    def _loop(self, stream, start, lat, t_begin, max_ticks_per_op):  # pragma: no cover - abstract
        raise NotImplementedError

    def _grow(self, status: int, memory_limit_bytes: int | None) -> str:  # pragma: no cover - abstract
        raise NotImplementedError(f"loop status {status}")

    def _stuck(self) -> str:  # pragma: no cover - abstract
        return "a compiled loop gave up"

    def stats(self) -> dict[str, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, stream: OpStream, *, max_cpu_ns_per_op: float | None = None,
            memory_limit_bytes: int | None = None) -> Measurement:
        from connectors.learned.timing import ns_per_tick, ticks  # numba: loaded with the first run
        stream = stream.check()
        refused = self._refuse(stream)
        if refused:
            return Measurement.failure(refused, self.memory_bytes(), self.stats())
        rate = ns_per_tick()
        max_ticks = 0.0 if not max_cpu_ns_per_op else float(max_cpu_ns_per_op) / rate
        lat = np.zeros(len(stream), dtype=np.uint64)
        self._loop(stream, len(stream), lat, np.uint64(0), 0.0)  # compiled (or loaded from cache) before the clock
        with priority.raised():  # a busy machine preempts the timed loop less (advisor.core.priority)
            begin, cpu_begin = time.perf_counter_ns(), time.thread_time_ns()
            t_begin = np.uint64(ticks())
            start, status, why, grows, at = 0, DONE, "", 0, -1
            while True:
                start, status = self._loop(stream, start, lat, t_begin, max_ticks)
                if status == STOPPED:
                    cpu_now = time.thread_time_ns() - cpu_begin
                    if not cut(start, cpu_now, max_cpu_ns_per_op):  # over on the wall clock only: it waited
                        t_begin = np.uint64(rebased(ticks(), t_begin, cpu_now, rate))
                        continue
                if status in (DONE, STOPPED):
                    break
                grows = grows + 1 if start == at else 1
                at = start
                if status == STUCK:
                    why = NO_PROGRESS + self._stuck()
                elif grows > MAX_GROWS:
                    why = f"{NO_PROGRESS}its memory pools grew {MAX_GROWS} times for one operation"
                else:
                    why = self._grow(status, memory_limit_bytes)
                if why:
                    break
            wall_ns, cpu_ns = time.perf_counter_ns() - begin, time.thread_time_ns() - cpu_begin
        done = int(start)
        memory = self.memory_bytes()
        stats = {k: float(v) for k, v in self.stats().items()}
        if why:
            return Measurement.failure(f"{why} (at operation {start} of {len(stream)})", memory, stats)
        if memory_limit_bytes is not None and memory > memory_limit_bytes:
            return Measurement.failure(f"memory bound exceeded: {memory} bytes > {memory_limit_bytes}", memory,
                                       stats)
        ns = lat[:done].astype(np.float64) * rate
        ops = stream.ops[:done]
        samples = {name: ns[ops == code] for code, name in enumerate(OP_NAMES) if np.any(ops == code)}
        return Measurement(throughput_ops=done / max(wall_ns, 1) * 1e9,
                           p99_ns=float(np.percentile(ns, 99)) if done else float("inf"),
                           samples_ns=samples, memory_bytes=memory, stats=stats, ops_done=done,
                           stopped_early=status == STOPPED, cpu_ns=cpu_ns)

    def _refuse(self, stream: OpStream) -> str:
        """Why this index cannot run ``stream`` at all ("" when it can)."""
        return ""
