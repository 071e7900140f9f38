"""Timing a statement against its rewrites on the shadow, through the measurement engine
(``advisor.tuning.measure``), the same evidence model as knobs and indexes: one unmeasured warm-up of every arm (the
original and each candidate), then rounds in which every arm runs (3 times, once when the original takes over a
second), the arms' order rotating from round to round, noise rounds run again, until every candidate's question
against the original is settled (from ``min_rounds``, at most ``rounds``); per candidate ``evidence.compare``
against the original (medians, a paired bootstrap interval).

A candidate wins only when its gain's interval (over rounds) clears the minimum gain, the interval of its latency
ratio to the original (over all executions) lies below 1, and it does not regress (a timeout or an error under
the candidate is a regression); the fastest such candidate is the answer. With a few rounds, the round-level
interval alone is too narrow for a statement of a few milliseconds: TPC-H Q2's rewrite passed it at 1.07x with a
ratio interval of 0.75..1.54, and measured 0.93x in the bench's own re-run.

Speedups are original / rewrite (2.0 = twice as fast), from the medians of all measured executions; their
interval is the inverse of the latency ratio's bootstrap interval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.core.domain import Evidence
from advisor.core.progress import Say, silent
from advisor.core.sqltext import named
from advisor.core.wording import ratio
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.validation import ValidationOptions
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, replay


SLOW_MS = 1000.0  # an original slower than this runs once per pass, a faster one REPEATS times
REPEATS = 3


@dataclass(frozen=True)
class Race:
    evidence: tuple[Evidence, ...]  # per candidate, against the original
    baseline: tuple[ArmRound, ...]  # the original's passes
    candidates: tuple[tuple[ArmRound, ...], ...]  # each candidate's passes
    measured: str = ""  # how the measurement went (``measure.Measured.line``)

    @property
    def speedups(self) -> tuple[float | None, ...]:
        return tuple(_speedup(e) for e in self.evidence)

    @property
    def cis(self) -> tuple[tuple[float, float] | None, ...]:
        out = []
        for e in self.evidence:
            s = e.statements[0] if e.statements else None
            ok = s is not None and s.ratio_ci[0] > 0 and s.ratio_ci[1] > 0
            out.append((1 / s.ratio_ci[1], 1 / s.ratio_ci[0]) if ok else None)
        return tuple(out)

    @property
    def best(self) -> int | None:
        """The fastest candidate that is measurably faster (its gain's interval clears the minimum gain, and the
        latency ratio's interval lies below 1) and regresses nothing, or None."""
        winners = [i for i, e in enumerate(self.evidence)
                   if _speedup(e) is not None and rule(e) is None]
        return max(winners, key=lambda i: _speedup(self.evidence[i]) or 0.0) if winners else None

    def summary(self) -> str:
        """Why no candidate won, each candidate's timing with the rule that decided it (``rule``), headed "not
        faster" when none measured faster, else "not proven faster"."""
        parts, faster = [], False
        for i, e in enumerate(self.evidence):
            s = e.statements[0] if e.statements else None
            if s is None or s.errors:
                parts.append(f"candidate {i + 1} failed or timed out on the shadow")
                continue
            faster = faster or e.significant
            parts.append(f"candidate {i + 1}: {describe(e)}: {rule(e) or 'faster'}")
        head = "not proven faster" if faster else "not faster"
        return f"{head}: " + "; ".join(parts) + (f" ({self.measured})" if self.measured else "")


def rule(e: Evidence) -> str | None:
    """The rule a candidate's timing against the original failed (``Race.best``), by name; None when it wins.

    >>> from advisor.core.domain import StatementEvidence as S
    >>> s = S("q1", "select 1", 1, 5.2, 0.9, 0.17, (0.05, 1.1), False)
    >>> rule(Evidence(5, (), (), 0.829, (0.469, 0.834), (s,), 0.02, 0.1, baseline_ms=5.2, candidate_ms=0.9))
    'its time per execution is not below the original every time: the 95% CI of its latency ratio over all executions is 0.0500x .. 1.10x, and the rule needs it under 1x'
    >>> rule(Evidence(5, (), (), 0.01, (-0.01, 0.03), (s,), 0.02, 0.1))
    'its gain is within noise: its 95% CI starts at -1.0%, under the minimum gain of +2%'
    """
    s = e.statements[0] if e.statements else None
    if s is None or s.errors:
        return "it failed or timed out on the shadow"
    if e.regressions:
        return (f"it regressed: {ratio(s.ratio)} the original's time, slower by more than the regression threshold "
                f"(+{e.regression_threshold:.0%})")
    if not e.significant:
        return (f"its gain is within noise: its 95% CI starts at {e.gain_ci[0]:+.1%}, under the minimum gain of "
                f"{e.min_gain:+.0%}")
    if not s.ratio_ci[1] < 1.0:
        return (f"its time per execution is not below the original every time: the 95% CI of its latency ratio "
                f"over all executions is {ratio(s.ratio_ci[0])} .. {ratio(s.ratio_ci[1])}, and the rule needs it "
                "under 1x")
    return None


def describe(e: Evidence) -> str:
    """One candidate's timing against the original in words, from the same numbers as its gain (the medians over
    rounds, ``Evidence.baseline_ms`` / ``candidate_ms``; gain = 1 - candidate / baseline): a slower candidate is
    never said to gain.

    >>> describe(Evidence(3, (), (), -0.0029, (-0.01, 0.004), (), 0.02, 0.1, baseline_ms=927.3, candidate_ms=930.0))
    '927.3 ms -> 930.0 ms (0.3% slower, gain 95% CI -1.0% .. +0.4%)'
    """
    s = e.statements[0] if e.statements else None
    base = e.baseline_ms if e.baseline_ms is not None else s.baseline_ms if s else float("nan")
    cand = e.candidate_ms if e.candidate_ms is not None else s.candidate_ms if s else float("nan")
    gain = 1.0 - cand / base if base > 0 else e.gain
    change = f"{gain:.1%} faster" if gain > 0 else f"{-gain:.1%} slower" if gain < 0 else "no change"
    lo, hi = e.gain_ci
    return f"{base:.1f} ms -> {cand:.1f} ms ({change}, gain 95% CI {lo:+.1%} .. {hi:+.1%})"


def _speedup(e: Evidence) -> float | None:
    s = e.statements[0] if e.statements else None
    if s is None or not s.ratio > 0 or s.errors:
        return None
    return 1.0 / s.ratio


def race(connector, statement: BoundStatement, rewrites: Sequence[str], options: ValidationOptions,
         say: Say = silent) -> Race:
    """Time ``statement`` and each rewrite of it (SQL with the same constants) on ``connector``'s database (the
    shadow's), interleaved."""
    arms = [statement] + [replace(statement, sql=text) for text in rewrites]
    warm = [replay(connector, [arm], ReplayOptions(1, 1, 0, options.statement_timeout_ms)) for arm in arms]  # unmeasured
    slow = warm[0].wall_ms > SLOW_MS  # a slow original: one execution per pass is a sample enough
    replay_options = ReplayOptions(1, 1 if slow else max(options.repeats, REPEATS), 0, options.statement_timeout_ms)
    names = [str(j) for j in range(len(arms))]
    weights = {statement.queryid: 1.0}
    label = named(statement.normalized, statement.queryid)

    def run(arm: str, r: int) -> ArmRound:
        result = replay(connector, [arms[int(arm)]], replay_options)
        if arm == names[(r - 1) % len(names)]:  # the last arm of round r in the rotated order
            say(f"{label}: timing round {r + 1} (at most {options.rounds})")
        return ArmRound(result.samples, {k: len(v) for k, v in result.errors.items()})

    def decide(rounds: dict[str, list[ArmRound]]) -> list[Evidence]:
        return [compare(rounds["0"], rounds[j], weights, min_gain=options.min_gain,
                        regression_threshold=options.regression_threshold,
                        min_time_share=options.min_time_share, min_call_share=options.min_call_share)
                for j in names[1:]]

    rule = StopRule(min_rounds=min(options.min_rounds, options.rounds), max_rounds=options.rounds,
                    min_gain=options.min_gain)
    measured = interleave(run, names, rule, decide, order="rotate", say=say)
    passes = [tuple(measured.rounds[j]) for j in names]
    return Race(tuple(decide(measured.rounds)), passes[0], tuple(passes[1:]), measured.line())
