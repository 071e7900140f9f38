"""Validating changes on a shadow: the A/B measurement.

The shadow (``connectors.base.Shadow``, made by ``connectors.factory.clone``) holds a copy of the target with one
statistics sample. Validation interleaves the arms through the measurement engine (``advisor.tuning.measure``): round i runs A then B
when i is even and B then A when odd (ABBA), each pass after an unmeasured warm-up, noise rounds run again, until
the gain's interval settles; ``advisor.tuning.evidence.compare`` turns the passes into Evidence. Latencies are in ms; gains are fractions (0.02 = 2%).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from advisor.core.progress import Say
from advisor.core.domain import Applied, Change, Evidence
from advisor.core.plans import Plan
from advisor.core.sqltext import shorten
from advisor.core.errors import AdvisorError, BadStatement, NothingToReplay, SandboxError
from advisor.core.wording import ratio
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.measure import StopRule, interleave
from advisor.tuning.statement_rounds import CAP_FACTOR, Caps, Reused, leaving, sampling_error
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayOptions, ReplayResult, replay

__all__ = ["Measurement", "Reused", "ShadowCrashed", "ValidationOptions", "measure_changes", "validate"]


class ShadowCrashed(AdvisorError):
    """The shadow server stopped working during a trial."""


@dataclass(frozen=True)
class ValidationOptions:
    rounds: int = 5  # ABBA rounds at most; each runs both arms once
    min_rounds: int = 3  # rounds before the measurement may stop (a clear case stops there)
    repeats: int = 1  # measured executions of each statement per pass
    warmup: int = 1  # unmeasured executions of each statement before a pass
    concurrency: int = 1  # client connections replaying at once
    statement_timeout_ms: int = 60_000
    min_gain: float = 0.02  # the gain interval's lower end must clear this fraction
    regression_threshold: float = 0.10  # a statement this fraction slower (interval above 1) is a regression
    # the guard's weights (``advisor.tuning.evidence``): a regression blocks only a statement with at least this
    # share of the workload's time or calls; None: the settings' (ADVISOR_GUARD_MIN_TIME_SHARE / _CALL_SHARE)
    min_time_share: float | None = None
    min_call_share: float | None = None
    # warm up in the first round only: right for changes that leave the caches warm (an index built or dropped),
    # not for a setting that restarts the server (each arm then starts cold)
    warm_once: bool = False
    # plan every read in both arms first and time those with the same plan once (for ``acts_through_plans``
    # changes only)
    same_plans_once: bool = True
    # a statement whose own interval is settled leaves the later rounds (its medians stand for it there)
    settled_leave: bool = True
    # the caller re-times each statement the rounds show slower by the threshold, and that decides (the index
    # validation): one slower so in every round of two or more leaves the later rounds (``statement_rounds.leaving``)
    retime_flagged: bool = False


def validate(shadow: Shadow, statements: Sequence[BoundStatement], changes: Sequence[Change],
             options: ValidationOptions = ValidationOptions(), say: Say | None = None,
             built: Sequence[Change] = (), before: Sequence[Plan | None] | None = None) -> Evidence:
    """``measure_changes``' Evidence (see there)."""
    return measure_changes(shadow, statements, changes, options, say, built, before).evidence


@dataclass(frozen=True)
class Measurement:
    """What ``measure_changes`` measured: the Evidence, and for a later measurement to reuse (``Reused``), each
    read's plan under the candidate (``Plan.shape``; only for changes that act through plans) and each statement's
    medians round by round per arm."""

    evidence: Evidence
    plans: dict[str, str]
    rounds: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]

    def reusable(self) -> dict[tuple[str, str], Reused]:
        """(queryid, candidate plan shape) -> the statement's measurement, for each read planned and measured."""
        by = {s.queryid: s for s in self.evidence.statements}
        return {(q, shape): Reused(by[q], *self.rounds[q]) for q, shape in self.plans.items()
                if q in by and q in self.rounds and self.rounds[q][0] and self.rounds[q][1]}


def measure_changes(shadow: Shadow, statements: Sequence[BoundStatement], changes: Sequence[Change],
                    options: ValidationOptions = ValidationOptions(), say: Say | None = None,
                    built: Sequence[Change] = (), before: Sequence[Plan | None] | None = None,
                    reuse: Mapping[tuple[str, str], Reused] | None = None) -> Measurement:
    """Measure ``changes`` against the shadow's current state in interleaved rounds (``advisor.tuning.measure``:
    ABBA, noise rounds run again, from ``min_rounds`` to ``rounds`` rounds until the gain's interval settles); the
    shadow is left in its baseline state afterwards (also on error). The Evidence says how the measurement went
    (``Evidence.measured``).

    ``built``: index builds (a superset of ``changes``) that the caller holds built on the shadow, every statement
    being a read, with ``before`` the reads' plans without them. Then nothing is built or dropped here: the baseline
    arm times each statement with ``built`` hidden from the planner inside a rolled-back transaction
    (``Connector.timings_without``), the candidate arm with them (the same way, nothing hidden), and the shadow is
    left as it was. An index set is then built once a pass, not once per arm switch (on TPC-H at 4.3 GB, a build
    of 7 indexes took ~40 s, and a pass made four).

    ``reuse``: measurements of earlier passes over the same baseline (``Measurement.reusable``), keyed by read and
    its plan under the candidate. A read whose plan under these changes is one of those is not timed again: that
    measurement's verdict stands (its re-timings included), and its medians, round by round, stand in these
    rounds. The index validation's later passes drop a few indexes from the set, and most reads keep their plans
    (on JOB, each pass timed the whole workload again: ~40 s per arm and round)."""
    say = say or (lambda _m: None)
    if not statements:
        raise NothingToReplay("nothing to replay: the workload has no replayable statements")
    if built and any(s.is_write for s in statements):
        raise ValueError("a held index set is measured on reads only (a write must maintain what it hides)")
    warm = ReplayOptions(options.concurrency, options.repeats, options.warmup, options.statement_timeout_ms)
    warmed = replace(warm, warmup=0) if options.warm_once else warm
    weights = {s.queryid: s.weight for s in statements}
    sql = {s.queryid: s.normalized for s in statements}
    state: dict[str, Applied | None] = {"applied": None}
    rule = StopRule(min_rounds=min(options.min_rounds, options.rounds), max_rounds=options.rounds,
                    min_gain=options.min_gain)
    try:
        same, plans = _same_plans(shadow, statements, changes, state, say, before if built else None) \
            if through_plans(changes, options) and (before is not None or not built) else ({}, {})
        reused = {q: reuse[(q, shape)] for q, shape in plans.items() if (q, shape) in reuse} if reuse else {}
        if reused:
            say(f"{len(reused)} of {len(plans)} reads keep a plan an earlier pass measured: its measurement stands, "
                "they are not timed again")
        timed = [s for s in statements if s.queryid not in same and s.queryid not in reused]
        once = _time_once(shadow, [s for s in statements if s.queryid in same and s.queryid not in reused], warm,
                          say, built)
        left: dict[str, dict[str, list[float]]] = {}  # a settled statement's samples per arm, for later rounds
        kept = {"rounds": 0}  # rounds kept so far (noise rounds run again do not count): a reused read's index
        cut = Caps() if through_plans(changes, options) else None

        def run(arm: str, i: int) -> ArmRound:
            # held built by the caller (``built``): hidden in the baseline arm, nothing built or dropped here
            if not built and arm == "B" and state["applied"] is None:
                state["applied"] = _apply(shadow, changes)
            elif not built and arm == "A" and state["applied"] is not None:
                shadow.connector.revert(state["applied"])
                state["applied"] = None
            now = [s for s in timed if s.queryid not in left]
            pass_options = warm if i == 0 else warmed
            if cut is not None and arm == "B":  # a candidate run past CAP_FACTOR x its baseline is known slower
                pass_options = replace(pass_options, caps_ms=cut.caps())
            if not now:
                result = None
            elif built:
                result = _timed_without(shadow, now, built if arm == "A" else (), pass_options)
            else:
                result = replay(shadow.connector, now, pass_options)
            errors_cut: dict[str, int] = {}
            if cut is not None and result is not None:
                cut.saw(arm, result)
                if arm == "B":  # a statement cut under the candidate (past 3x its baseline) fails there: it blocks
                    caps = pass_options.caps_ms or {}
                    errors_cut = {q: n for q, n in result.timeouts.items() if n and q in caps}
            if result is not None:
                say(f"round {i + 1} (at most {options.rounds}) {'baseline' if arm == 'A' else 'candidate'}: "
                    f"{result.wall_ms / 1000:.1f}s")
            samples, errors = dict(once.samples), {k: len(v) for k, v in once.errors.items()}
            samples.update({q: by_arm[arm] for q, by_arm in left.items()})
            samples.update({q: [r.round(arm, kept["rounds"])] for q, r in reused.items()})
            if result is not None:
                samples.update(result.samples)
                errors.update({k: len(v) for k, v in result.errors.items()})
            for q, n in errors_cut.items():
                errors[q] = errors.get(q, 0) + n
            return ArmRound(samples, errors)

        def decide(rounds: dict[str, list[ArmRound]]) -> Evidence:
            return compare(rounds["A"], rounds["B"], weights, sql, min_gain=options.min_gain,
                           regression_threshold=options.regression_threshold,
                           min_time_share=options.min_time_share, min_call_share=options.min_call_share)

        def between(rounds: dict[str, list[ArmRound]]) -> None:
            """Statements settled round after round leave the later rounds (from the second round on)."""
            kept["rounds"] = len(rounds["A"])
            if not options.settled_leave or len(timed) < 2 or len(rounds["A"]) < 2:
                return
            going = leaving(decide(rounds), rounds, set(same) | set(left) | set(reused), options.min_gain,
                            options.regression_threshold, options.retime_flagged)
            if len(left) + len(going) >= len(timed):  # every one settled: the measurement's own rule decides;
                going = {}                            # rounds of frozen medians alone would invent certainty
            for s, medians in going.items():
                left[s.queryid] = medians
                say(f"{shorten(s.sql, 50)}: settled at {ratio(s.ratio)} round after round; it leaves the later "
                    "rounds, its medians stand for them" + ("" if s.ratio < 1 + options.regression_threshold or
                                                            not options.retime_flagged else " (and it is re-timed)"))

        # the candidate first only when it is applied already (switching would cost a revert and an apply); a held
        # set switches for free, and its baseline first gives the candidate's first pass its caps (CAP_FACTOR x the
        # baseline): on JOB a regressed join otherwise ran in full, twice (warm-up and run), in the first round
        measured = interleave(run, ("A", "B"), rule, decide, order="baab" if state["applied"] else "abba",
                              say=say, between=between)
    finally:
        if state["applied"] is not None:
            shadow.connector.revert(state["applied"])
    evidence = measured.evidence
    if same or reused:
        evidence = replace(evidence, statements=tuple(
            reused[s.queryid].evidence if s.queryid in reused else replace(s, same_plan=same.get(s.queryid, ""))
            for s in evidence.statements))
    paired = {q: [(statistics.median(a.samples[q]), statistics.median(b.samples[q]))
                  for a, b in zip(measured.rounds["A"], measured.rounds["B"]) if a.samples.get(q) and b.samples.get(q)]
              for q in weights}  # only the rounds both arms timed it in, so a reused read's rounds stay paired
    rounds = {q: (tuple(a for a, _ in p), tuple(b for _, b in p)) for q, p in paired.items()}
    line = measured.line() + (f"; {len(same)} of {len(statements)} statements kept their plan and were timed once"
                              if same else "") + (f"; {len(left)} left the later rounds settled" if left else "") \
        + (f"; {len(reused)} kept a plan an earlier pass measured (not timed again)" if reused else "") \
        + (f"; {len(cut.cut)} cut at {CAP_FACTOR:g}x their baseline time under the candidate"
           if cut is not None and cut.cut else "") + sampling_error(evidence, statements, shadow)
    return Measurement(replace(evidence, measured=line), plans, rounds)  # type: ignore[arg-type]


def through_plans(changes: Sequence[Change], options: ValidationOptions) -> bool:
    """Whether ``changes`` act only through plans (index builds and drops, settings only the planner reads:
    ``KnobChange.acts_through_plans``), so that a read whose plan they leave the same is not moved by them
    (validation and the whole run's bundle time or count it once)."""
    return options.same_plans_once and bool(changes) and all(getattr(c, "acts_through_plans", False)
                                                             for c in changes)


def _same_plans(shadow: Shadow, statements: Sequence[BoundStatement], changes: Sequence[Change],
                state: dict[str, Applied | None], say: Say,
                before: Sequence[Plan | None] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(queryid -> plan shape of each read whose plan is the same with ``changes`` as without, queryid -> plan
    shape of each read with them); the shadow is left with the changes applied (``state``), so the first round
    starts with the candidate. With ``before`` (the reads' plans without them, the changes being held built
    already; None for one that could not be planned), nothing is applied. A read that cannot be planned in
    either arm is timed in every round; the others are compared all the same (one statement EXPLAIN refused
    used to leave every read timed in both arms, a primary-key lookup the index cannot serve among them)."""
    reads = [s for s in statements if not s.is_write]
    if not reads:
        return {}, {}
    if before is None:
        before = plans_each(shadow.connector, [s.sql for s in reads])
        state["applied"] = _apply(shadow, changes)
    after = plans_each(shadow.connector, [s.sql for s in reads])
    same = {s.queryid: a.shape() for s, a, b in zip(reads, before, after)
            if a is not None and b is not None and a.shape() == b.shape()}
    unplanned = sum(1 for a, b in zip(before, after) if a is None or b is None)
    say(f"planned {len(reads)} reads with and without the change: {len(reads) - len(same) - unplanned} plans differ, "
        f"{len(same)} the same (timed once)" + (f", {unplanned} could not be planned (timed)" if unplanned else ""))
    return same, {s.queryid: b.shape() for s, b in zip(reads, after) if b is not None}


def plans_each(connector, sql: Sequence[str]) -> list[Plan | None]:
    """Each statement's plan on ``connector``, None for one that cannot be planned (``BadStatement``): the others
    are planned all the same (one at a time, once the batch has failed)."""
    try:
        return list(connector.plans(list(sql)))
    except BadStatement:
        pass
    out: list[Plan | None] = []
    for text in sql:
        try:
            out.append(connector.plans([text])[0])
        except BadStatement:
            out.append(None)
    return out


def _time_once(shadow: Shadow, statements: Sequence[BoundStatement], options: ReplayOptions, say: Say,
               built: Sequence[Change] = ()):
    """One pass of ``statements`` (warmed up as the rounds are), whose times stand for both arms."""
    if not statements:
        return ReplayResult()
    result = _timed_without(shadow, statements, (), options) if built else replay(shadow.connector, statements,
                                                                                   options)
    say(f"timed the {len(statements)} statements with the same plan once: {result.wall_ms / 1000:.1f}s")
    return result


NO_WARMUP_MS = 1000.0  # a statement whose observed mean is this long or longer is timed without a warm-up (held sets)


def _timed_without(shadow: Shadow, statements: Sequence[BoundStatement], hidden: Sequence[Change],
                   options: ReplayOptions) -> ReplayResult:
    """A pass of read ``statements`` one at a time with the built indexes ``hidden`` out of the planner's reach
    (``Connector.timings_without``: dropped inside a rolled-back transaction, or ignored), ``options.repeats``
    timed runs after ``options.warmup`` unmeasured (none after the first round: ``warm_once``; none for a statement
    the target runs in ``NO_WARMUP_MS`` or more); a run past its cap (``caps_ms``) or the statement timeout counts as a
    timeout at it, as replay records one."""
    result = ReplayResult()
    started = time.perf_counter()
    for st in statements:
        cap = (options.caps_ms or {}).get(st.queryid)
        limit = int(min(options.statement_timeout_ms, cap)) if cap is not None else options.statement_timeout_ms
        # a statement the target runs in a second or more has no warm-up: a cold start is small beside its time,
        # and the warm-up doubled it (on JOB, the first round of each pass took twice the others, ~75 s per arm)
        warmup = 0 if st.mean_ms >= NO_WARMUP_MS else options.warmup
        try:
            times = shadow.connector.timings_without(st.sql, list(hidden), max(1, options.repeats), max(1, limit),
                                                     warmup=warmup)
        except AdvisorError as e:
            result.errors.setdefault(st.queryid, []).append(e)
            continue
        result.samples[st.queryid] = times
        over = sum(1 for t in times if t >= limit)
        if over:
            result.timeouts[st.queryid] = over
    result.wall_ms = (time.perf_counter() - started) * 1000.0
    return result


def _apply(shadow: Shadow, changes: Sequence[Change]) -> Applied:
    try:
        return shadow.connector.apply(changes)
    except SandboxError as e:
        raise ShadowCrashed(f"the shadow did not come back after applying the candidate: {e}") from None
