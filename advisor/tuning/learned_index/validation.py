"""Validating a learned index's configuration: the candidate against the baseline (the defaults) on the harness,
through the one measurement engine (``advisor.tuning.measure.interleave``), decided on CPU time.

- Two arms, A (baseline) and B (candidate), in ABBA rounds, each configuration warmed up once first (an unmeasured
  round); a round slower for both arms at once is machine noise and runs again; the machine's load is recorded
  with each round; the rounds stop once the gain's interval clears the minimum gain or cannot (a ``StopRule``
  from ``min(3, rounds)`` to ``rounds`` kept rounds).
- The decision is on thread CPU time per operation (``HarnessTarget``: each phase's CPU ns per operation, one
  sample per round), lower is better: ``evidence.compare`` with the phases as statements and their shares of the
  operations as weights, so the gain is 1 - candidate / baseline CPU ns per operation of the whole workload, and a
  phase that got slower is a regression. Wall time on a busy machine swings with the other processes (the same
  defaults measured 351,171 and 687,643 ops/s in two rounds beside other work); the CPU time the index itself
  spends much less.
- The verdict's interval is the one the engine stops on (``settled_interval``: the bootstrap's, widened to the t
  interval of the per-round gains): a measurement the round budget ended unsettled is not accepted on a bootstrap
  interval narrower than the stop rule's (``settled``). Before, five rounds "not settled within the round budget"
  were accepted at +2.8% .. +24.2% beside other work: such verdicts flip between a quiet and a busy run.
- The arms run through ``Arms`` (a harness and a configuration each, warmed up, every pass's figures kept for the
  medians) and are decided by ``deciding`` (the phases as statements): the finalists' re-measure before the
  validation (``advisor.tuning.learned_index.finalists``) measures through both too.
- Wall-time throughput, p99 and memory stay reported beside it: each arm's medians over the kept rounds
  (``median_figures``), and in the Evidence's ``measured`` line, which says how the measurement went (rounds, why
  it stopped, noise rounds, load).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from advisor.core.domain import Evidence
from advisor.core.progress import Say, silent
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.learned_index.target import HarnessTarget, RoundFigures
from advisor.tuning.measure import Measured, StopRule, interleave, settled_interval

MIN_ABS_NS = 5.0  # a per-operation slowdown smaller than this (ns) is timer noise, not a regression
MIN_GAIN = 0.02  # the CPU time per operation the candidate must save (a fraction), its interval's lower end
UNIT = "CPU ns per operation"
# what the evidence's figures are in (``Evidence.unit``/``symbol``), which every face prints beside them
EVIDENCE_UNIT = "thread CPU time per operation (ns, each phase weighted by its operations)"


def validate(target: HarnessTarget, baseline: Mapping[str, str], candidate: Mapping[str, str], rounds: int,
             seed: int = 0, say: Say = silent, min_gain: float = MIN_GAIN
             ) -> tuple[Evidence, dict[str, float], dict[str, float]]:
    """``candidate`` against ``baseline`` in at most ``rounds`` interleaved rounds, without the safety cut (see the
    module's text): the evidence per phase with its ``measured`` line, and each arm's median figures over the kept
    rounds. ``min_gain``: the share of CPU time per operation the candidate must save. TrialFailed when an arm
    fails."""
    arms = Arms({"A": (target, baseline), "B": (target, candidate)}, {"A": "defaults", "B": "tuned"},
                lambda i: f"validation round {i + 1} (at most {rounds})", say)
    decide = deciding(target, "A", min_gain, seed)
    rule = StopRule(min_rounds=min(3, rounds), max_rounds=rounds, min_gain=min_gain)
    measured = interleave(arms.run, ("A", "B"), rule, lambda kept: decide(kept, "B"), order="abba", seed=seed,
                          say=say)
    figures = arms.medians(measured)
    assert measured.evidence is not None
    evidence = replace(settled(measured.evidence), measured=measured_line(measured.line(), figures["A"], figures["B"]))
    return evidence, figures["A"], figures["B"]


class Arms:
    """Arms on harnesses for the engine (``interleave``'s ``run``): each arm a harness and a configuration, warmed
    up once (a round not measured) and run without the safety cut, one measured round per pass (said with
    ``heading(round)`` and the arm's name); every pass's figures kept, so that each arm's medians over the rounds
    the engine kept can be had (``medians``). The validation and the finalists' re-measure measure through it."""

    def __init__(self, arms: Mapping[str, tuple[HarnessTarget, Mapping[str, str]]], names: Mapping[str, str],
                 heading: Callable[[int], str], say: Say = silent) -> None:
        self.arms, self.names, self.heading, self.say = dict(arms), dict(names), heading, say
        self.passes: list[tuple[ArmRound, RoundFigures]] = []  # every pass's figures, noise rounds' too
        for target, config in self.arms.values():  # warm-up, excluded
            target.max_cpu_ns_per_op = None
            target.warm_up(config)

    def run(self, arm: str, i: int) -> ArmRound:
        target, config = self.arms[arm]
        target.apply(config)
        p = target.measure(1)[0]
        figures = target.last
        assert figures is not None
        self.passes.append((p, figures))
        self.say(f"{self.heading(i)}, {self.names[arm]}: {figures.cpu_ns_per_op:,.0f} {UNIT}, "
                 f"{figures.throughput_ops:,.0f} ops/s")
        return p

    def medians(self, measured: Measured) -> dict[str, dict[str, float]]:
        """Each arm's median figures over the rounds the engine kept (``median_figures``)."""
        return {arm: median_figures([f for r in kept for p, f in self.passes if p is r])
                for arm, kept in measured.rounds.items()}


def deciding(target: HarnessTarget, baseline: str, min_gain: float = MIN_GAIN, seed: int = 0
             ) -> Callable[[Mapping[str, list[ArmRound]], str], Evidence]:
    """The decision on the harness's phases: ``decide(kept, arm)`` is the evidence of ``arm`` against the
    ``baseline`` arm over the kept rounds, each phase weighted by its share of the operations."""
    phases = target.phases()
    weights = {phase: share for phase, (share, _text) in phases.items()}
    texts = {phase: f"{text} ({UNIT})" for phase, (_share, text) in phases.items()}

    def decide(kept: Mapping[str, list[ArmRound]], arm: str) -> Evidence:
        return replace(compare(kept[baseline], kept[arm], weights, texts, min_gain=min_gain, min_abs=MIN_ABS_NS,
                               seed=seed), unit=EVIDENCE_UNIT, symbol="ns")

    return decide


def settled(evidence: Evidence) -> Evidence:
    """``evidence`` with the interval the engine stops on as its gain's interval, so that it is accepted only
    where the measurement settled it.

    >>> ev = Evidence(3, (10.0, 10.0, 10.0), (8.0, 9.5, 7.0), 0.183, (0.05, 0.3), (), 0.02, 0.1)
    >>> ev.accepted, settled(ev).accepted, settled(ev).gain_ci[0] < 0.02
    (True, False, True)
    >>> clear = Evidence(3, (10.0, 10.0, 10.0), (5.0, 5.1, 4.9), 0.5, (0.49, 0.51), (), 0.02, 0.1)
    >>> settled(clear).accepted
    True
    """
    return replace(evidence, gain_ci=settled_interval(evidence))


def measured_line(how: str, default: Mapping[str, float], tuned: Mapping[str, float]) -> str:
    """The engine's line, then what was decided on and the wall-time throughput beside it.

    >>> measured_line("3 rounds", {"cpu_ns_per_op": 200.0, "throughput_ops": 4e6},
    ...               {"cpu_ns_per_op": 100.0, "throughput_ops": 7.5e6})
    '3 rounds; decided on thread CPU time: 200 ns per operation with the defaults, 100 tuned; wall-time throughput 4,000,000 ops/s with the defaults, 7,500,000 tuned (medians)'
    """
    return (f"{how}; decided on thread CPU time: {default['cpu_ns_per_op']:,.0f} ns per operation with the "
            f"defaults, {tuned['cpu_ns_per_op']:,.0f} tuned; wall-time throughput {default['throughput_ops']:,.0f} "
            f"ops/s with the defaults, {tuned['throughput_ops']:,.0f} tuned (medians)")


def median_figures(rounds: Sequence[RoundFigures]) -> dict[str, float]:
    """The medians over ``rounds`` of the wall-time throughput (ops/s), the thread CPU time per operation (ns),
    the p99 (ns) and the memory (bytes)."""
    return {"throughput_ops": statistics.median(r.throughput_ops for r in rounds),
            "cpu_ns_per_op": statistics.median(r.cpu_ns_per_op for r in rounds),
            "p99_ns": statistics.median(r.p99_ns for r in rounds),
            "memory_bytes": float(statistics.median(r.memory_bytes for r in rounds))}
