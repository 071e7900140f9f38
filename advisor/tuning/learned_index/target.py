"""A learned index's benchmark harness as a trial target (``advisor.tuning.target.TrialTarget``).

``apply(config)`` builds the index over the initial keys with the configuration (a build is cached for the last
``KEPT_BUILDS`` configurations: validation alternates two, the finalists' re-measure rotates four); ``measure(rounds)`` runs the operation streams in order on a
fresh copy of that build each round (inserts stay in for the next phase, never for the next round);
``warm_up`` runs a round that is not measured (the compiled loops' first call loads them). A round's
``ArmRound`` holds, per phase (an operation stream: ``phases()`` names them), the thread CPU time of the phase in ns
per operation (``Measurement.cpu_ns``; one sample per round, as a shadow's holds each statement's median per
pass), so ``evidence.compare`` with the phases' shares of the operations as weights compares CPU ns per operation
of the whole round; time spent waiting for a core on a busy machine is not in it. (Per operation type it cannot
be had: a wait falls on the one operation the cycle counter was timing, and a few waits of milliseconds in a
round make any op type's share of the phase's time swing by several times.) ``last`` holds the round's figures
(``RoundFigures``): wall-time throughput, CPU ns per operation, p99, memory and the structure's statistics, which
become ``TrialResult.metrics``. A trial's objective is the round's thread CPU time per operation, the figure the
validation decides on, so a busy machine does not steer the search; its wall-time throughput is in the metrics
beside it. The safety cut (``max_cpu_ns_per_op``, set by the search from the defaults' trial) is on CPU time too
(``connectors.learned.base``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from advisor.core.domain import TrialResult
from advisor.core.errors import AdvisorError
from advisor.core.params import ParamSpace
from advisor.tuning.evidence import ArmRound
from advisor.tuning.target import TrialFailed

UNSAFE = "unsafe: over {:.3g}x the defaults' CPU time per operation"
KEPT_BUILDS = 4  # builds kept for the configurations applied last (the defaults and three finalists)


@dataclass(frozen=True)
class RoundFigures:
    """One measured round: ops/s over every op of every phase (wall time), the 99th percentile of single-op
    latency (ns), the structure's bytes and statistics after the last phase, whether the safety cut stopped it,
    and the thread CPU time per operation over the round (ns; 0 when not measured)."""

    throughput_ops: float
    p99_ns: float
    memory_bytes: int
    stats: dict[str, float]
    unsafe: bool = False
    cpu_ns_per_op: float = 0.0

    def metrics(self) -> dict[str, float]:
        """The trial's metrics: the structure's statistics, wall-time throughput, p99, bytes, the unsafe flag and
        the CPU time per operation (the objective; 0 when the round did not finish)."""
        return {**{k: float(v) for k, v in self.stats.items()}, "throughput_ops": float(self.throughput_ops),
                "p99_ns": float(self.p99_ns), "memory_bytes": float(self.memory_bytes),
                "unsafe": 1.0 if self.unsafe else 0.0, "cpu_ns_per_op": float(self.cpu_ns_per_op)}


@dataclass
class HarnessTarget:
    """The engine (``connectors.factory.learned_index``), the keys it is built over and the operation streams
    (phases) every round runs."""

    engine: object
    initial_keys: np.ndarray
    streams: Sequence[object]
    max_cpu_ns_per_op: float | None = None  # the safety cut (None: off)
    memory_limit_bytes: int | None = None
    safety: float = 0.5
    config: dict[str, str] = field(default_factory=dict)
    good: dict[str, str] = field(default_factory=dict)
    last: RoundFigures | None = None

    def __post_init__(self) -> None:
        self.space = ParamSpace(self.engine.parameters())
        self.config = self.space.default_config()
        self.good = dict(self.config)
        self._builds: dict[tuple, object] = {}

    def apply(self, config: Mapping[str, str]) -> None:
        try:
            full = self.space.full(config)
        except AdvisorError as e:
            raise TrialFailed(f"could not apply: {e}", status="infeasible") from None
        key = tuple(sorted(full.items()))
        if key not in self._builds:
            try:
                built = self.engine.build(self.initial_keys, full)
            except AdvisorError as e:  # parameters that do not go together (the engine's own constraints)
                raise TrialFailed(f"infeasible: {e}", status="infeasible") from None
            except (ValueError, ArithmeticError, MemoryError) as e:  # a bug of the engine's on these parameters
                raise TrialFailed(f"the index could not be built: {e}") from None
            self._builds = {**dict(list(self._builds.items())[1 - KEPT_BUILDS:]), key: built}
        self.config = full

    last_ms = None  # no per-statement medians: a trial's figures are its metrics (``TrialResult.metrics``)

    def trial(self, config: Mapping[str, str]) -> tuple[TrialResult, float, bool]:
        """One trial over the protocol (the trial loop's verb): apply, one measured round; the objective is the
        thread CPU ns per op, the round's figures (wall-time throughput among them) are the metrics (an unsafe or
        failed trial's too, where it got that far; none of an earlier trial's). (result, seconds, restarted:
        never)."""
        start = time.perf_counter()
        self.last = None
        try:
            self.apply(config)
            self.measure(1)
        except TrialFailed as e:
            self.recover()
            metrics = self.last.metrics() if self.last is not None else {"unsafe": 0.0}
            self.last = None
            return TrialResult(None, e.status, e.message, metrics=metrics), time.perf_counter() - start, False
        figures = self.last
        assert figures is not None
        return TrialResult(figures.cpu_ns_per_op, metrics=figures.metrics()), time.perf_counter() - start, False

    def display(self, objective: float) -> str:
        """An objective in words: thread CPU time per operation."""
        return f"{objective:,.0f} ns CPU/op"

    def measure(self, rounds: int = 1) -> list[ArmRound]:
        out = []
        for _ in range(rounds):
            out.append(self._round())
        self.good = dict(self.config)
        return out

    def warm_up(self, config: Mapping[str, str] | None = None) -> None:
        """One round of ``config`` (the defaults when None) whose figures are thrown away: compiled code loaded,
        caches filled, before anything is measured."""
        self.apply(config if config is not None else self.space.default_config())
        self._round()
        self.last = None

    def recover(self) -> None:
        """A failed configuration leaves nothing behind (each round runs on a copy): back to the good one."""
        self.config = dict(self.good)

    def phases(self) -> dict[str, tuple[float, str]]:
        """The phases a round's ``ArmRound`` holds, by id: each one's share of the round's operations and what
        it runs ("operations" for a single stream; "phase 1", "phase 2", ... for several).

        >>> from connectors.learned.ops import OpStream
        >>> t = object.__new__(HarnessTarget)
        >>> t.streams = [OpStream.of([0, 0, 0, 1], [1, 2, 3, 4])]
        >>> t.phases()
        {'operations': (1.0, '4 operations: lookup 75%, insert 25%')}
        """
        total = sum(len(s) for s in self.streams) or 1
        out = {}
        for i, stream in enumerate(self.streams):
            counts = {op: n for op, n in stream.counts().items() if n}
            mix = ", ".join(f"{op} {n / max(len(stream), 1):.0%}" for op, n in counts.items())
            out[_phase(i, len(self.streams))] = (len(stream) / total, f"{len(stream):,} operations: {mix}")
        return out

    def _round(self) -> ArmRound:
        built = self._builds[tuple(sorted(self.config.items()))].copy()
        samples: dict[str, list[np.ndarray]] = {}
        cpu: dict[str, list[float]] = {}  # per phase: its thread CPU ns per operation
        ops, seconds, cpu_ns, m = 0, 0.0, 0, None
        for i, stream in enumerate(self.streams):
            m = built.run(stream, max_cpu_ns_per_op=self.max_cpu_ns_per_op,
                          memory_limit_bytes=self.memory_limit_bytes)
            if m.failed:
                self.last = RoundFigures(0.0, float("inf"), m.memory_bytes, dict(m.stats))
                raise TrialFailed(m.failed)
            if m.stopped_early:
                self.last = RoundFigures(m.throughput_ops, m.p99_ns, m.memory_bytes, dict(m.stats), unsafe=True,
                                         cpu_ns_per_op=m.cpu_ns / m.ops_done if m.ops_done else 0.0)
                raise TrialFailed(UNSAFE.format(1 / self.safety))
            ops += m.ops_done
            seconds += m.ops_done / m.throughput_ops if m.throughput_ops > 0 else 0.0
            cpu_ns += m.cpu_ns
            if m.ops_done:
                cpu[_phase(i, len(self.streams))] = [m.cpu_ns / m.ops_done]
            for op, ns in m.samples_ns.items():
                if len(ns):
                    samples.setdefault(op, []).append(np.asarray(ns, dtype=float))
        pooled = {op: np.concatenate(parts) for op, parts in samples.items()}
        every = np.concatenate(list(pooled.values())) if pooled else np.array([np.inf])
        self.last = RoundFigures(ops / seconds if seconds > 0 else 0.0, float(np.percentile(every, 99)),
                                 int(m.memory_bytes) if m else 0, dict(m.stats) if m else {},
                                 cpu_ns_per_op=cpu_ns / ops if ops else 0.0)
        return ArmRound(cpu, {})


@dataclass(frozen=True)
class HarnessRecipe:
    """How a worker elsewhere (``advisor.tuning.executors.on_ray``) builds a copy of a harness: the engine by name
    (``connectors.factory.learned_index``), the keys, the streams and the bounds; the copy is warmed up, and its
    safety cut arrives later (``Executor.configure``) once the defaults are measured."""

    index: str
    initial_keys: np.ndarray
    streams: tuple
    memory_limit_bytes: int | None = None
    safety: float = 0.5

    @classmethod
    def of(cls, target: HarnessTarget) -> "HarnessRecipe":
        return cls(target.engine.name, target.initial_keys, tuple(target.streams), target.memory_limit_bytes,
                   target.safety)

    def make(self) -> HarnessTarget:
        from connectors import factory

        target = HarnessTarget(factory.learned_index(self.index), self.initial_keys, list(self.streams),
                               memory_limit_bytes=self.memory_limit_bytes, safety=self.safety)
        target.warm_up()
        return target


def _phase(i: int, n: int) -> str:
    return "operations" if n == 1 else f"phase {i + 1}"
