"""The measurement engine: interleaved rounds of a baseline and candidate arms that stop when the answer is known,
with rounds that the machine's noise spoiled detected and run again, and the machine's load recorded.

``interleave(run, arms, rule, decide)`` runs rounds. In each round every arm makes one measured pass
(``run(arm, round) -> ArmRound``), in an order that balances position effects: ``abba`` for two arms (A B, then
B A, ...; ``baab`` starts with B, for a shadow already in B's state), ``rotate`` (each round starts one arm later), or ``shuffle`` (a seeded random order per round).

**Noise rounds.** A round in which *every* arm's pass total is at least ``rule.noise_factor`` times that arm's
median total over the rounds kept so far was slowed by something outside the change (another process took the
cores, a checkpoint, a cache flush): no change makes the baseline slower. Such a round is recorded and dropped, and
run again, at most ``rule.max_reruns`` times in a measurement (TUNA's outlier rounds). The check needs two kept
rounds first.

**Sequential stop.** After each kept round from ``rule.min_rounds`` on, ``decide(rounds_by_arm)`` turns the rounds
so far into Evidence (or into several, one per question a design with more arms asks: the bundle's whole gain and
each part's contribution), and the gain's interval (``settled_interval``: the bootstrap's, widened to the t interval
of the per-round gains where that is wider) decides; the measurement stops when every question is settled:

- *clears*: the lower end of the gain's interval is at least the minimum gain;
- *cannot clear*: the upper end is below it (more rounds narrow the interval around a gain that is too small);
- *budget*: ``rule.max_rounds`` were kept, and the interval still straddles the minimum: not settled.

A clear case therefore costs ``min_rounds`` rounds, an unclear one ``max_rounds``.

**Load.** Each round records the 1-minute load average and the share of the machine's CPU time that was busy
during the round (from /proc/stat), so a verdict can be read beside how busy the machine was, and the priority
the measurement ran at (``advisor.core.priority``: raised where permitted, so that a busy machine slows it less).
"""

from __future__ import annotations

import os
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from advisor.core import priority
from advisor.core.domain import Evidence
from advisor.core.progress import Say, silent
from advisor.tuning.evidence import ArmRound

ORDERS = ("abba", "baab", "rotate", "shuffle")


@dataclass(frozen=True)
class StopRule:
    min_rounds: int = 3  # kept rounds before the first decision
    max_rounds: int = 8  # kept rounds at most
    min_gain: float = 0.02  # the gain the interval must clear (a fraction)
    noise_factor: float = 1.5  # every arm at least this many times its median total: a noise round
    max_reruns: int = 2  # noise rounds run again at most, per measurement
    # the answers that end a measurement before its budget (a design whose later questions depend on the
    # answers, as the bundle's elimination does, stops early only when every question clears)
    stop_on: tuple[str, ...] = ("clears", "cannot clear", "settled")

    def __post_init__(self) -> None:
        if not 1 <= self.min_rounds <= self.max_rounds:
            raise ValueError(f"need 1 <= min_rounds <= max_rounds, got {self.min_rounds} and {self.max_rounds}")


def decision(evidence: Evidence, rounds: int, rule: StopRule) -> str | None:
    """Why the rounds so far settle the question (``clears``, ``cannot clear``, ``budget``), or None to go on.

    >>> from advisor.core.domain import Evidence
    >>> ev = lambda lo, hi: Evidence(3, (), (), (lo + hi) / 2, (lo, hi), (), 0.02, 0.1)
    >>> rule = StopRule(min_rounds=3, max_rounds=6)
    >>> decision(ev(0.3, 0.5), 3, rule), decision(ev(-0.1, 0.01), 3, rule), decision(ev(0.0, 0.1), 3, rule)
    ('clears', 'cannot clear', None)
    >>> decision(ev(0.0, 0.1), 6, rule)
    'budget'
    """
    if rounds < rule.min_rounds:
        return None
    lo, hi = settled_interval(evidence)
    if lo >= rule.min_gain:
        return "clears"
    if hi < rule.min_gain:
        return "cannot clear"
    return "budget" if rounds >= rule.max_rounds else None


def decision_all(evidences: Sequence[Evidence], rounds: int, rule: StopRule) -> str | None:
    """The decision over several questions: None while any is open, ``budget`` at the round budget, else the
    answer they share (``clears``, ``cannot clear``), or ``settled`` where they differ.

    >>> from advisor.core.domain import Evidence
    >>> ev = lambda lo, hi: Evidence(3, (), (), (lo + hi) / 2, (lo, hi), (), 0.02, 0.1)
    >>> rule = StopRule(min_rounds=3, max_rounds=6)
    >>> [decision_all(e, 3, rule) for e in ([ev(.3, .5), ev(.1, .2)], [ev(.3, .5), ev(-.1, 0)], [ev(.3, .5), ev(0, .1)])]
    ['clears', 'settled', None]
    """
    answers = [decision(e, rounds, rule) for e in evidences]
    if None in answers:
        return "budget" if rounds >= rule.max_rounds else None
    if "budget" in answers:
        return "budget"
    return answers[0] if len(set(answers)) == 1 else "settled"


def settled_interval(evidence: Evidence) -> tuple[float, float]:
    """The interval a stop is decided on: the evidence's bootstrap interval of the gain, widened to the Student t
    interval of the per-round gains (1 - candidate total / baseline total of each round) where that is wider. A
    bootstrap over a handful of rounds is too narrow (three rounds have 27 resamples); the t interval is honest
    about so few, so an early stop needs a case that is clear even then.

    >>> from advisor.core.domain import Evidence
    >>> ev = Evidence(3, (10.0, 10.0, 10.0), (5.0, 9.0, 12.0), 0.1, (0.05, 0.15), (), 0.02, 0.1)
    >>> lo, hi = settled_interval(ev)
    >>> lo < -0.5 and hi > 0.6
    True
    """
    lo, hi = evidence.gain_ci
    pairs = [(a, b) for a, b in zip(evidence.baseline_totals_ms, evidence.candidate_totals_ms) if a > 0]
    if len(pairs) >= 2:
        from scipy.stats import t as student

        gains = [1 - b / a for a, b in pairs]
        mean, sd = statistics.fmean(gains), statistics.stdev(gains)
        half = float(student.ppf(0.975, len(gains) - 1)) * sd / len(gains) ** 0.5
        lo, hi = min(lo, mean - half), max(hi, mean + half)
    return lo, hi


def schedule(arms: Sequence[str], round_index: int, order: str, rng: random.Random) -> list[str]:
    """The order the arms run in round ``round_index``.

    >>> [schedule(["A", "B"], i, "abba", random.Random(0)) for i in range(3)]
    [['A', 'B'], ['B', 'A'], ['A', 'B']]
    >>> [schedule(["A", "B"], i, "baab", random.Random(0)) for i in range(3)]
    [['B', 'A'], ['A', 'B'], ['B', 'A']]
    >>> [schedule(["A", "B", "C"], i, "rotate", random.Random(0)) for i in range(3)]
    [['A', 'B', 'C'], ['B', 'C', 'A'], ['C', 'A', 'B']]
    """
    arms = list(arms)
    if order in ("abba", "baab"):
        return arms if (round_index % 2 == 0) == (order == "abba") else arms[::-1]
    if order == "rotate":
        k = round_index % len(arms)
        return arms[k:] + arms[:k]
    if order == "shuffle":
        rng.shuffle(arms)
        return arms
    raise ValueError(f"unknown order {order!r}: one of {', '.join(ORDERS)}")


def is_noise(totals: dict[str, list[float]], new: dict[str, float], factor: float) -> bool:
    """Every arm's new pass total at least ``factor`` times its median over the kept rounds (two or more).

    >>> is_noise({"A": [10, 11], "B": [5, 6]}, {"A": 30, "B": 16}, 1.5), is_noise({"A": [10, 11], "B": [5, 6]},
    ...                                                                          {"A": 30, "B": 6}, 1.5)
    (True, False)
    """
    if any(len(v) < 2 for v in totals.values()):
        return False
    return all(new[arm] >= factor * statistics.median(totals[arm]) > 0 for arm in new)


def _cpu_ticks() -> tuple[int, int] | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            values = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values), idle


@dataclass(frozen=True)
class RoundLoad:
    """How busy the machine was during one round: its 1-minute load average at the end, and the busy share of all
    cores' time during the round (None where /proc/stat cannot be read)."""

    load1: float
    busy: float | None


class _LoadMeter:
    def __init__(self) -> None:
        self.start = _cpu_ticks()

    def read(self) -> RoundLoad:
        end = _cpu_ticks()
        busy = None
        if self.start and end and end[0] > self.start[0]:
            total, idle = end[0] - self.start[0], end[1] - self.start[1]
            busy = max(0.0, min(1.0, 1 - idle / total))
        return RoundLoad(os.getloadavg()[0], busy)


@dataclass
class Measured:
    """What ``interleave`` measured: each arm's kept rounds, the Evidence of the last decision, why it stopped, the
    noise rounds dropped, and each kept round's load."""

    rounds: dict[str, list[ArmRound]]
    evidence: Evidence | None = None
    stopped: str = ""
    noise_rounds: int = 0
    loads: list[RoundLoad] = field(default_factory=list)

    def line(self) -> str:
        """``"4 rounds (the gain's interval clears 2%), 1 noisy round run again; load 1.7, cores 62% busy, nice -10"``
        (the priority it was measured at: ``advisor.core.priority``)."""
        kept = len(next(iter(self.rounds.values()), []))
        why = {"clears": "the gain's interval clears the minimum", "cannot clear": "the gain cannot clear the minimum",
               "budget": "not settled within the round budget",
               "settled": "every question settled"}.get(self.stopped, self.stopped)
        parts = [f"{kept} round{'s' if kept != 1 else ''}" + (f" ({why})" if why else "")]
        if self.noise_rounds:
            parts.append(f"{self.noise_rounds} noisy round{'s' if self.noise_rounds != 1 else ''} run again")
        text = ", ".join(parts)
        if self.loads:
            load = statistics.median(x.load1 for x in self.loads)
            busy = [x.busy for x in self.loads if x.busy is not None]
            text += f"; load {load:.1f}" + (f", cores {100 * statistics.median(busy):.0f}% busy" if busy else "")
            text += f", {priority.status()}"
        return text


def interleave(run: Callable[[str, int], ArmRound], arms: Sequence[str], rule: StopRule,
               decide: Callable[[dict[str, list[ArmRound]]], Evidence | Sequence[Evidence]], *, order: str = "abba",
               seed: int = 0, say: Say = silent,
               between: Callable[[dict[str, list[ArmRound]]], None] | None = None) -> Measured:
    """Measure ``arms`` (the first is the baseline) in interleaved rounds until ``rule`` says the question is
    settled (see the module's text). ``run(arm, i)`` makes one measured pass of ``arm`` in round ``i`` (the caller
    puts the shadow in that arm's state and warms it as it needs); ``decide(rounds_by_arm)`` is the Evidence of the
    rounds so far, or a sequence of Evidence (one per question; ``Measured.evidence`` is the first), all of
    which must settle. ``between(rounds_by_arm)``, when given, hears every kept round before the round budget ends,
    from the first on (what the next rounds need not time: a statement already settled), before any decision."""
    rng = random.Random(seed)
    out = Measured({arm: [] for arm in arms})
    totals: dict[str, list[float]] = {arm: [] for arm in arms}
    i = 0
    while True:
        meter = _LoadMeter()
        passes = {arm: run(arm, i) for arm in schedule(arms, i, order, rng)}
        load = meter.read()
        i += 1
        new = {arm: _total(p) for arm, p in passes.items()}
        if out.noise_rounds < rule.max_reruns and is_noise(totals, new, rule.noise_factor):
            out.noise_rounds += 1
            say(f"round {i}: every arm ran slower at once (the machine was busy: load {load.load1:.1f}); "
                f"a noise round, run again")
            continue
        for arm, p in passes.items():
            out.rounds[arm].append(p)
            totals[arm].append(new[arm])
        out.loads.append(load)
        kept = len(totals[arms[0]])
        if between is not None and kept < rule.max_rounds:
            between(out.rounds)
        if kept >= rule.min_rounds:
            answer = decide(out.rounds)
            evidences = [answer] if isinstance(answer, Evidence) else list(answer)
            out.evidence = evidences[0]
            answer_now = decision_all(evidences, kept, rule)
            if kept >= rule.max_rounds:  # the budget ends it, whatever the answer
                out.stopped = answer_now or "budget"
            else:
                out.stopped = answer_now if answer_now in rule.stop_on else ""
            if out.stopped:
                say(f"measured: {out.line()}")
                return out


def _total(p: ArmRound) -> float:
    """A pass's total: the sum over statements of their median sample (the same for every arm)."""
    return sum(statistics.median(v) for v in p.samples.values() if v)
