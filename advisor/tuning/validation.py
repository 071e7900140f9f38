"""Validating changes on a shadow: the A/B measurement.

The shadow (``connectors.base.Shadow``, made by ``connectors.factory.clone``) holds a copy of the target with one
statistics sample. Validation interleaves the arms through the measurement engine (``advisor.tuning.measure``): round i runs A then B
when i is even and B then A when odd (ABBA), each pass after an unmeasured warm-up, noise rounds run again, until
the gain's interval settles; ``advisor.tuning.evidence.compare`` turns the passes into Evidence. Latencies are in ms; gains are fractions (0.02 = 2%).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.core.progress import Say
from advisor.core.domain import Applied, Change, Evidence, StatementEvidence
from advisor.core.plans import Plan
from advisor.core.sqltext import shorten
from advisor.core.errors import AdvisorError, BadStatement, SandboxError
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.measure import StopRule, interleave
from connectors.base import Shadow
from workloads.binding import BoundStatement
from workloads.replay import ReplayOptions, ReplayResult, replay

__all__ = ["ShadowCrashed", "ValidationOptions", "validate"]


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


def validate(shadow: Shadow, statements: Sequence[BoundStatement], changes: Sequence[Change],
             options: ValidationOptions = ValidationOptions(), say: Say | None = None,
             built: Sequence[Change] = (), before: Sequence[Plan] | None = None) -> Evidence:
    """Measure ``changes`` against the shadow's current state in interleaved rounds (``advisor.tuning.measure``:
    ABBA, noise rounds run again, from ``min_rounds`` to ``rounds`` rounds until the gain's interval settles); the
    shadow is left in its baseline state afterwards (also on error). The Evidence says how the measurement went
    (``Evidence.measured``).

    ``built``: index builds (a superset of ``changes``) that the caller holds built on the shadow, every statement
    being a read, with ``before`` the reads' plans without them. Then nothing is built or dropped here: the baseline
    arm times each statement with ``built`` hidden from the planner inside a rolled-back transaction
    (``Connector.timings_without``), the candidate arm with them (the same way, nothing hidden), and the shadow is
    left as it was. An index set is then built once a pass, not once per arm switch (on TPC-H at 4.3 GB, a build
    of 7 indexes took ~40 s, and a pass made four)."""
    say = say or (lambda _m: None)
    if not statements:
        raise AdvisorError("nothing to replay: the workload has no replayable statements")
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
        same = _same_plans(shadow, statements, changes, state, say, before if built else None) \
            if through_plans(changes, options) and (before is not None or not built) else {}
        timed = [s for s in statements if s.queryid not in same]
        once = _time_once(shadow, [s for s in statements if s.queryid in same], warm, say, built)
        left: dict[str, dict[str, list[float]]] = {}  # a settled statement's samples per arm, for later rounds
        cut = _Caps() if through_plans(changes, options) else None

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
            if not options.settled_leave or len(timed) < 2 or len(rounds["A"]) < 2:
                return
            going = leaving(decide(rounds), rounds, set(same) | set(left), options)
            if len(left) + len(going) >= len(timed):  # every one settled: the measurement's own rule decides;
                going = {}                            # rounds of frozen medians alone would invent certainty
            for s, medians in going.items():
                left[s.queryid] = medians
                say(f"{shorten(s.sql, 50)}: settled at {s.ratio:.2f}x round after round; it leaves the later "
                    "rounds, its medians stand for them")

        # the candidate first only when it is applied already (switching would cost a revert and an apply); a held
        # set switches for free, and its baseline first gives the candidate's first pass its caps (CAP_FACTOR x the
        # baseline): on JOB a regressed join otherwise ran in full, twice (warm-up and run), in the first round
        measured = interleave(run, ("A", "B"), rule, decide, order="baab" if state["applied"] else "abba",
                              say=say, between=between)
    finally:
        if state["applied"] is not None:
            shadow.connector.revert(state["applied"])
    evidence = measured.evidence
    if same:
        evidence = replace(evidence, statements=tuple(replace(s, same_plan=same.get(s.queryid, ""))
                                                      for s in evidence.statements))
    line = measured.line() + (f"; {len(same)} of {len(statements)} statements kept their plan and were timed once"
                              if same else "") + (f"; {len(left)} left the later rounds settled" if left else "") \
        + (f"; {len(cut.cut)} cut at {CAP_FACTOR:g}x their baseline time under the candidate"
           if cut is not None and cut.cut else "") + sampling_error(evidence, statements, shadow)
    return replace(evidence, measured=line)


EARLY_FAR = 0.5  # after two rounds, a statement leaves only at this ratio or below (or its inverse or above) in both


def leaving(evidence: Evidence, rounds: dict[str, list[ArmRound]], skip: set[str],
            options: ValidationOptions) -> dict[StatementEvidence, dict[str, list[float]]]:
    """The statements (not in ``skip``) that leave the later rounds, each with its median per arm (A, B) over the
    rounds so far: those whose ratio is clearly away from no change round after round (the Student t interval of
    its per-round ratios, candidate median over baseline median, all of it below one less twice the minimum gain,
    or all of it above the regression threshold), with no error: more rounds of them would not change their
    verdict. Per-round ratios, not every execution pooled: under a busy machine the executions of one round share
    its luck, and a statement pooled at 1.74x (1.48 .. 2.47) was 0.55x when timed again. From two rounds on, but
    after two only a statement far from no change in each round (``EARLY_FAR``: at most half or at least twice its
    baseline time) whose t interval (12.7 standard errors each side) also clears: two rounds alike by chance must
    not let a statement of no real change go as settled, its frozen medians then narrowing the gain's interval. On
    JOB, where one pass takes half a minute, that is most of a third round's time.

    >>> from advisor.tuning.evidence import compare
    >>> a = [ArmRound({"fast": [10.0, 10.2, 9.9], "same": [5.0, 5.3, 4.8]}, {}) for _ in range(3)]
    >>> b = [ArmRound({"fast": [2.0, 2.1, 1.9], "same": [5.1, 4.9, 5.2]}, {}) for _ in range(3)]
    >>> ev = compare(a, b, {"fast": 1.0, "same": 1.0}, min_time_share=0.0, min_call_share=0.0)
    >>> [(s.queryid, m) for s, m in leaving(ev, {"A": a, "B": b}, set(), ValidationOptions()).items()]
    [('fast', {'A': [10.0], 'B': [2.0]})]
    >>> noisy = [ArmRound({"fast": [x]}, {}) for x in (2.0, 9.0, 3.0)]  # 0.2x, 0.9x, 0.3x round by round
    >>> ev = compare(a, noisy, {"fast": 1.0}, min_time_share=0.0, min_call_share=0.0)
    >>> leaving(ev, {"A": a, "B": noisy}, set(), ValidationOptions())
    {}
    >>> two = [ArmRound({"q": [10.0]}, {}), ArmRound({"q": [10.4]}, {})]
    >>> tenth, most, alike = ([ArmRound({"q": [x]}, {}) for x in xs]  # 0.1x; 0.7-0.77x; 0.90x twice, by chance
    ...                       for xs in ((1.0, 1.1), (7.0, 8.0), (9.0, 9.37)))
    >>> [list(leaving(compare(two, b, {"q": 1.0}, min_time_share=0.0, min_call_share=0.0), {"A": two, "B": b},
    ...               set(), ValidationOptions()).values()) for b in (tenth, most, alike)]
    [[{'A': [10.2], 'B': [1.05]}], [], []]
    """
    from scipy.stats import t as student

    out = {}
    for s in evidence.statements:
        if s.queryid in skip or s.errors or s.ratio != s.ratio:
            continue
        pairs = [(_median(ra, s.queryid), _median(rb, s.queryid)) for ra, rb in zip(rounds["A"], rounds["B"])]
        ratios = [b / a for a, b in pairs if a and b and a > 0]
        if len(ratios) < 2:
            continue
        if len(ratios) == 2 and not (max(ratios) <= EARLY_FAR or min(ratios) >= 1 / EARLY_FAR):
            continue  # two rounds judge only a statement far from no change in each of them
        mean, sd = statistics.fmean(ratios), statistics.stdev(ratios)
        half = float(student.ppf(0.975, len(ratios) - 1)) * sd / len(ratios) ** 0.5
        if mean + half < 1 - 2 * options.min_gain or mean - half > 1 + options.regression_threshold:
            out[s] = {arm: [statistics.median(x for r in rounds[arm] for x in r.samples.get(s.queryid, ()))]
                      for arm in ("A", "B")}
    return out


def _median(r: ArmRound, queryid: str) -> float | None:
    values = r.samples.get(queryid)
    return statistics.median(values) if values else None


def sampling_error(evidence: Evidence, statements: Sequence[BoundStatement], shadow: Shadow) -> str:
    """On a sampled copy, what its sample implies for the gain, said beside it: a sample shrinks statements
    unevenly (a scan by the sample's share, a lookup hardly at all), so the shadow's mix of statement times is not
    the target's. Each statement's measured ratio weighted by the target's own time for it (calls x its observed
    mean) gives the gain the target's mix implies; the difference to the measured gain is the error the sampling
    implies. "" on any other shadow, or when the target's times are known for under half of the workload.

    >>> from advisor.core.domain import StatementEvidence
    >>> st = lambda q, ratio: StatementEvidence(q, "", 1.0, 10.0, 10.0 * ratio, ratio, (ratio, ratio), False)
    >>> ev = Evidence(3, (), (), 0.45, (0.4, 0.5), (st("scan", 0.1), st("lookup", 1.0)), 0.02, 0.1)
    >>> bound = [BoundStatement("scan", "", "", 1, "literal", False, mean_ms=100.0),
    ...          BoundStatement("lookup", "", "", 1, "literal", False, mean_ms=900.0)]
    >>> print(sampling_error(ev, bound, Shadow(None, None, "db", method="sampled copy"))[2:])
    on the sampled copy the gain is +45.0%, with the target's own statement times +9.0% (the sampling implies an error of 36.0 points)
    """
    if shadow.method != "sampled copy":
        return ""
    observed = {s.queryid: s.weight * s.mean_ms for s in statements if s.mean_ms > 0}
    rows = [(observed[s.queryid], s.ratio) for s in evidence.statements
            if s.queryid in observed and s.ratio == s.ratio and s.ratio > 0]
    total = sum(observed.values())
    if not rows or len(rows) * 2 < len(evidence.statements) or total <= 0:
        return ""
    weight = sum(w for w, _ in rows)
    target_gain = 1.0 - sum(w * r for w, r in rows) / weight
    return (f"; on the sampled copy the gain is {evidence.gain:+.1%}, with the target's own statement times "
            f"{target_gain:+.1%} (the sampling implies an error of {abs(target_gain - evidence.gain) * 100:.1f} "
            "points)")


CAP_FACTOR = 3.0  # a candidate statement this many times slower than its baseline is cut there: a regression
CAP_FLOOR_MS = 100.0  # the least cap


class _Caps:
    """Per statement, where a candidate pass cuts it: ``CAP_FACTOR`` x its baseline time on this shadow (the
    median of the baseline passes so far; a candidate pass before any baseline pass is not cut: the target's own
    times say nothing of a colder or busier shadow), at least ``CAP_FLOOR_MS``. A cut statement's sample is its cap
    (a censored time) and it counts as failing under the candidate, so it is a regression that blocks whatever
    its share (a censored time cannot say how much it adds); ``cut`` names the statements cut.

    >>> from workloads.binding import BoundStatement
    >>> caps = _Caps()
    >>> caps.caps()
    {}
    >>> caps.saw("A", ReplayResult(samples={"q": [10.0, 12.0], "r": [50.0]}))
    >>> caps.caps()
    {'q': 100.0, 'r': 150.0}
    """

    def __init__(self) -> None:
        self.baseline: dict[str, list[float]] = {}
        self.cut: set[str] = set()

    def caps(self) -> dict[str, float]:
        return {q: max(CAP_FLOOR_MS, CAP_FACTOR * statistics.median(v)) for q, v in self.baseline.items() if v}

    def saw(self, arm: str, result: ReplayResult) -> None:
        if arm == "A":
            for q, v in result.samples.items():
                if not result.timeouts.get(q):
                    self.baseline.setdefault(q, []).extend(v)
        else:
            self.cut.update(q for q, n in result.timeouts.items() if n and q in self.baseline)


def through_plans(changes: Sequence[Change], options: ValidationOptions) -> bool:
    """Whether ``changes`` act only through plans (index builds and drops), so that a read whose plan they leave
    the same is not moved by them (validation and the whole run's bundle time or count it once)."""
    return options.same_plans_once and bool(changes) and all(getattr(c, "acts_through_plans", False)
                                                             for c in changes)


def _same_plans(shadow: Shadow, statements: Sequence[BoundStatement], changes: Sequence[Change],
                state: dict[str, Applied | None], say: Say, before: Sequence[Plan] | None = None) -> dict[str, str]:
    """queryid -> plan shape of each read whose plan is the same with ``changes`` as without; the shadow is left
    with the changes applied (``state``), so the first round starts with the candidate. With ``before`` (the
    reads' plans without them, the changes being held built already), nothing is applied. {} when a read cannot be
    planned (every statement is then timed)."""
    reads = [s for s in statements if not s.is_write]
    if not reads:
        return {}
    try:
        if before is None:
            before = shadow.connector.plans([s.sql for s in reads])
            state["applied"] = _apply(shadow, changes)
        after = shadow.connector.plans([s.sql for s in reads])
    except BadStatement:
        return {}
    same = {s.queryid: a.shape() for s, a, b in zip(reads, before, after) if a.shape() == b.shape()}
    say(f"planned {len(reads)} reads with and without the change: {len(reads) - len(same)} plans differ, "
        f"{len(same)} the same (timed once)")
    return same


def _time_once(shadow: Shadow, statements: Sequence[BoundStatement], options: ReplayOptions, say: Say,
               built: Sequence[Change] = ()):
    """One pass of ``statements`` (warmed up as the rounds are), whose times stand for both arms."""
    if not statements:
        return ReplayResult()
    result = _timed_without(shadow, statements, (), options) if built else replay(shadow.connector, statements,
                                                                                   options)
    say(f"timed the {len(statements)} statements with the same plan once: {result.wall_ms / 1000:.1f}s")
    return result


def _timed_without(shadow: Shadow, statements: Sequence[BoundStatement], hidden: Sequence[Change],
                   options: ReplayOptions) -> ReplayResult:
    """A pass of read ``statements`` one at a time with the built indexes ``hidden`` out of the planner's reach
    (``Connector.timings_without``: dropped inside a rolled-back transaction, or ignored), ``options.repeats``
    timed runs after ``options.warmup`` unmeasured (none after the first round: ``warm_once``); a run past its cap (``caps_ms``) or the statement timeout counts as a
    timeout at it, as replay records one."""
    result = ReplayResult()
    started = time.perf_counter()
    for st in statements:
        cap = (options.caps_ms or {}).get(st.queryid)
        limit = int(min(options.statement_timeout_ms, cap)) if cap is not None else options.statement_timeout_ms
        try:
            times = shadow.connector.timings_without(st.sql, list(hidden), max(1, options.repeats), max(1, limit),
                                                     warmup=options.warmup)
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
