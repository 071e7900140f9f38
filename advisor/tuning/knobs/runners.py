"""How a knob trial measures a workload: the workload runners (a replay of bound statements, pgbench). Each
statement's ratio to the run's baseline trial is the trial loop's (``advisor.tuning.trials.statement_ratios``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from advisor.core.errors import AdvisorError, TargetUnreachable
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay

if TYPE_CHECKING:
    from connectors.base import Connector


class TrialTimeout(AdvisorError):
    """A trial ran past its time limit."""


@dataclass(frozen=True)
class Measured:
    """One measured pass: the objective (lower is better) and, for a replay, each statement's median (ms)."""

    objective: float
    statement_ms: dict[str, float] | None = None


# --- workload runners ---------------------------------------------------------------------------------------


class WorkloadRunner(Protocol):
    objective: str  # latency | throughput
    unit: str  # what one objective is measured in, for people ("workload ms (calls x median)")

    def run(self, connector: Connector, timeout_s: float) -> Measured | float:
        """One measured pass: its objective, lower is better (with per-statement medians when the runner has
        them). Raises TrialTimeout / TargetUnreachable."""

    def restore(self, connector: Connector) -> None:
        """Bring the data back to its starting state (a no-op for read-only workloads)."""

    def display(self, objective: float) -> str: ...


@dataclass
class ReplayRunner:
    """Replays bound statements: the objective is the weighted sum of per-statement median latencies (ms)
    over ``repeats`` executions (``objective="latency"``; weights are calls, so it is the workload's estimated
    time, far more than one pass's wall time), or, with ``objective="throughput"``, the wall time of
    the pass per statement executed (ms), whose inverse is statements per second."""

    statements: Sequence[BoundStatement]
    repeats: int = 3
    warmup: int = 1
    concurrency: int = 1
    objective: str = "latency"

    def run(self, connector: Connector, timeout_s: float) -> Measured:
        opts = ReplayOptions(self.concurrency, self.repeats, self.warmup, max(int(timeout_s * 1000), 1))
        start = time.perf_counter()
        result = replay(connector, self.statements, opts)
        if result.timeouts:
            raise TrialTimeout(f"{sum(result.timeouts.values())} statement(s) ran past the {timeout_s:.1f}s limit")
        if time.perf_counter() - start > timeout_s * max(len(self.statements), 1) * (self.repeats + self.warmup):
            raise TrialTimeout(f"the pass took longer than its limit ({timeout_s:.1f}s per statement)")
        first = result.first_error()
        if first is not None:
            if isinstance(first, TargetUnreachable):
                raise TargetUnreachable(f"the shadow lost connections during the run: {first}")
            failed = sum(1 for v in result.errors.values() if v)
            raise type(first)(f"{failed} statement(s) failed: {first}")
        per = {st.queryid: float(result.median_ms(st.queryid)) for st in self.statements}
        if self.objective == "throughput":
            executed = sum(len(v) for v in result.samples.values())
            return Measured(result.wall_ms / max(executed, 1), per)
        return Measured(float(sum(st.weight * per[st.queryid] for st in self.statements)), per)

    def restore(self, connector: Connector) -> None:
        return None  # replay rolls every write back

    @property
    def unit(self) -> str:
        """Latency: the workload's estimated time, calls x each statement's median (not one trial's wall time);
        throughput: the pass's wall time per statement executed."""
        return "ms per statement executed" if self.objective == "throughput" else "workload ms (calls x median)"

    def display(self, objective: float) -> str:
        if self.objective == "throughput":
            return f"{1000.0 / objective:,.1f} statements/s"
        return f"{objective:,.1f} workload ms"


@dataclass
class PgbenchRunner:
    """pgbench's TPC-B-like transactions for ``duration_s``: the objective is milliseconds per transaction
    (1000 / TPS), and the history table is emptied and the tables vacuumed before each run."""

    scale: ClassVar[int] = 10
    clients: int = 8
    duration_s: float = 6.0
    objective: str = "throughput"
    unit: ClassVar[str] = "ms per transaction"

    def run(self, connector: Connector, timeout_s: float) -> Measured:
        from workloads.datasets import pgbench

        result = pgbench.run(connector.dsn, pgbench.PgbenchOptions(scale=self.scale, clients=self.clients,
                                                         duration_s=self.duration_s))
        if result.tps <= 0:
            raise AdvisorError(f"pgbench finished no transaction ({result.failed} failed)")
        return Measured(1000.0 / result.tps)

    def restore(self, connector: Connector) -> None:
        from workloads.datasets import pgbench

        pgbench.restore(connector)

    def display(self, objective: float) -> str:
        return f"{1000.0 / objective:,.0f} TPS"
