"""What a validation's rounds do per statement, beside the measurement engine's rounds of whole arms: a statement
settled round after round leaves the later rounds (``leaving``), a candidate run far slower than its baseline is
cut (``Caps``), a statement whose plan an earlier measurement already timed takes that measurement (``Reused``),
and on a sampled copy the error the sample implies is said beside the gain (``sampling_error``)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.core.domain import Evidence, StatementEvidence
from advisor.tuning.evidence import ArmRound
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement
from workloads.statements.replay import ReplayResult


EARLY_FAR = 0.5  # after two rounds, a statement leaves only at this ratio or below (or its inverse or above) in both


def leaving(evidence: Evidence, rounds: dict[str, list[ArmRound]], skip: set[str],
            min_gain: float = 0.02, regression_threshold: float = 0.10, retimed: bool = False
            ) -> dict[StatementEvidence, dict[str, list[float]]]:
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
    With ``retimed`` (the caller re-times every statement the rounds show slower by the threshold, and that longer
    measurement decides: the index validation), a statement slower by the threshold in each of two or more rounds
    leaves too: more rounds of it would only be replaced (on JOB, a pass's third round was mostly such joins).

    >>> from advisor.tuning.evidence import compare
    >>> a = [ArmRound({"fast": [10.0, 10.2, 9.9], "same": [5.0, 5.3, 4.8]}, {}) for _ in range(3)]
    >>> b = [ArmRound({"fast": [2.0, 2.1, 1.9], "same": [5.1, 4.9, 5.2]}, {}) for _ in range(3)]
    >>> ev = compare(a, b, {"fast": 1.0, "same": 1.0}, min_time_share=0.0, min_call_share=0.0)
    >>> [(s.queryid, m) for s, m in leaving(ev, {"A": a, "B": b}, set()).items()]
    [('fast', {'A': [10.0], 'B': [2.0]})]
    >>> noisy = [ArmRound({"fast": [x]}, {}) for x in (2.0, 9.0, 3.0)]  # 0.2x, 0.9x, 0.3x round by round
    >>> ev = compare(a, noisy, {"fast": 1.0}, min_time_share=0.0, min_call_share=0.0)
    >>> leaving(ev, {"A": a, "B": noisy}, set())
    {}
    >>> two = [ArmRound({"q": [10.0]}, {}), ArmRound({"q": [10.4]}, {})]
    >>> tenth, most, alike = ([ArmRound({"q": [x]}, {}) for x in xs]  # 0.1x; 0.7-0.77x; 0.90x twice, by chance
    ...                       for xs in ((1.0, 1.1), (7.0, 8.0), (9.0, 9.37)))
    >>> [list(leaving(compare(two, b, {"q": 1.0}, min_time_share=0.0, min_call_share=0.0), {"A": two, "B": b},
    ...               set()).values()) for b in (tenth, most, alike)]
    [[{'A': [10.2], 'B': [1.05]}], [], []]
    >>> slower = [ArmRound({"q": [x]}, {}) for x in (13.0, 12.0)]  # 1.3x and 1.15x: the re-timing will judge it
    >>> [list(leaving(compare(two, slower, {"q": 1.0}, min_time_share=0.0, min_call_share=0.0),
    ...               {"A": two, "B": slower}, set(), retimed=flag)) != [] for flag in (False, True)]
    [False, True]
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
        if retimed and min(ratios) >= 1 + regression_threshold:
            out[s] = {arm: [statistics.median(x for r in rounds[arm] for x in r.samples.get(s.queryid, ()))]
                      for arm in ("A", "B")}
            continue
        if len(ratios) == 2 and not (max(ratios) <= EARLY_FAR or min(ratios) >= 1 / EARLY_FAR):
            continue  # two rounds judge only a statement far from no change in each of them
        mean, sd = statistics.fmean(ratios), statistics.stdev(ratios)
        half = float(student.ppf(0.975, len(ratios) - 1)) * sd / len(ratios) ** 0.5
        if mean + half < 1 - 2 * min_gain or mean - half > 1 + regression_threshold:
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


class Caps:
    """Per statement, where a candidate pass cuts it: ``CAP_FACTOR`` x its baseline time on this shadow (the
    median of the baseline passes so far; a candidate pass before any baseline pass is not cut: the target's own
    times say nothing of a colder or busier shadow), at least ``CAP_FLOOR_MS``. A cut statement's sample is its cap
    (a censored time) and it counts as failing under the candidate, so it is a regression that blocks whatever
    its share (a censored time cannot say how much it adds); ``cut`` names the statements cut.

    >>> from workloads.statements.binding import BoundStatement
    >>> caps = Caps()
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




@dataclass(frozen=True)
class Reused:
    """A read's measurement from an earlier pass over the same baseline, for a later pass in which its plan under
    the candidate is the same (``validation.measure_changes``): its verdict (``evidence``, re-timings included)
    and its medians round by round per arm, which stand in the later pass's rounds in turn.

    >>> r = Reused(StatementEvidence("q", "", 1.0, 10.0, 5.0, 0.5, (0.4, 0.6), False), (10.0, 11.0), (5.0, 6.0))
    >>> [r.round("A", i) for i in range(3)], r.round("B", 2)
    ([10.0, 11.0, 10.5], 5.5)
    """

    evidence: StatementEvidence
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]

    def round(self, arm: str, i: int) -> float:
        """Its median in kept round ``i`` of ``arm`` (A: the baseline); past the rounds it was measured in, its
        median over them (as a settled statement's medians stand in later rounds: replaying its rounds again
        would pass for new, independent ones)."""
        values = self.baseline if arm == "A" else self.candidate
        return values[i] if i < len(values) else statistics.median(values)
