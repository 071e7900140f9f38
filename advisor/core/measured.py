"""What one interleaved measurement on a shadow found (``advisor.tuning.measure`` makes it): per statement
(``StatementEvidence``) and for the whole workload (``Evidence``), with the guard that decides which slowdowns block
a change. Plain frozen dataclasses; ``advisor.core.domain`` re-exports both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatementEvidence:
    """One statement measured in both arms. ``regressed``: slower by the regression threshold (or failing only
    under the candidate); whether that blocks the change is the evidence's call (``Evidence.blocks``: not when the
    statement is ``rare``). ``time_share`` / ``call_share``: its part of the baseline's weighted time (calls x
    median ms) and of the calls, fractions; None in evidence stored before they were recorded."""

    queryid: str
    sql: str
    weight: float
    baseline_ms: float  # median
    candidate_ms: float  # median
    ratio: float  # candidate / baseline
    ratio_ci: tuple[float, float]
    regressed: bool
    errors: int = 0
    time_share: float | None = None
    call_share: float | None = None
    # the plan both arms run (``Plan.shape``), when the change left it the same: then the statement was timed
    # once, and that time stands for both arms; "" when it was timed in every round
    same_plan: str = ""

    @property
    def faster(self) -> bool:
        """Measured faster: the whole 95% interval of its ratio below 1, and no error under the candidate (a
        statement that regressed never is)."""
        return not self.errors and not self.regressed and self.ratio_ci[1] < 1.0

    def rare(self, min_time_share: float, min_call_share: float) -> bool:
        """Too small a part of the workload for a slowdown to block a change: under ``min_time_share`` of the time
        and under ``min_call_share`` of the calls, and the time it would add (``time_share x (ratio - 1)``) under
        ``min_time_share`` too. A statement that fails under the candidate, or whose shares are unknown, is never
        rare."""
        if self.errors or self.time_share is None or self.call_share is None or not self.ratio == self.ratio:
            return False
        added = self.time_share * max(self.ratio - 1.0, 0.0)
        return self.time_share < min_time_share and self.call_share < min_call_share and added < min_time_share


WORKLOAD_TIME = "workload time (calls x median ms, summed over statements)"  # a database's evidence's unit


@dataclass(frozen=True)
class Evidence:
    """Baseline vs candidate measured interleaved on one shadow. gain = 1 - candidate_ms / baseline_ms, where each
    is the workload's estimated time W = sum over statements of calls x the statement's median over rounds (in
    ``symbol``: ms for a database's statements; a learned index's harness measures ns per operation);
    ``*_totals_ms`` are the same sum per round. ``baseline_ms`` / ``candidate_ms`` are None in evidence stored
    before they were recorded (``advisor.service.summary`` derives them there)."""

    rounds: int
    baseline_totals_ms: tuple[float, ...]
    candidate_totals_ms: tuple[float, ...]
    gain: float
    gain_ci: tuple[float, float]
    statements: tuple[StatementEvidence, ...]
    min_gain: float
    regression_threshold: float
    # the guard's weights (``StatementEvidence.rare``); 0 (evidence stored before them): every regression blocks
    min_time_share: float = 0.0
    min_call_share: float = 0.0
    baseline_ms: float | None = None  # W of the baseline, the gain's denominator
    candidate_ms: float | None = None  # W of the candidate
    measured: str = ""  # how the measurement went: rounds, why it stopped, noise rounds, the machine's load
    # what the ``*_ms`` figures are in: a workload's time in ms (a database's statements), or what a harness
    # measured (a learned index's thread CPU time per operation, ns): ``unit`` says it, ``symbol`` abbreviates it
    unit: str = WORKLOAD_TIME
    symbol: str = "ms"

    def blocks(self, s: StatementEvidence) -> bool:
        """``s`` regressed and matters enough to block the change."""
        return s.regressed and not s.rare(self.min_time_share, self.min_call_share)

    @property
    def regressions(self) -> tuple[StatementEvidence, ...]:
        """The regressions that block the change."""
        return tuple(s for s in self.statements if self.blocks(s))

    @property
    def rare_slower(self) -> tuple[StatementEvidence, ...]:
        """Statements that regressed but are too rare to block: reported beside the verdict, never hidden."""
        return tuple(s for s in self.statements if s.regressed and not self.blocks(s))

    @property
    def significant(self) -> bool:
        return self.gain_ci[0] >= self.min_gain

    @property
    def accepted(self) -> bool:
        return self.significant and not self.regressions
