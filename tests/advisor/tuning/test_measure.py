"""The measurement engine (advisor.tuning.measure) on synthetic samples with known answers: a clear gain stops at
the minimum rounds, no gain stops as soon as it cannot clear the minimum, a small gain in large noise runs to the
budget unsettled, a round where every arm is slow at once is run again and not counted, orders are balanced."""

import random
from collections import Counter

import pytest

from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.measure import StopRule, interleave, schedule

STATEMENTS = [f"q{i}" for i in range(6)]
WEIGHTS = {q: 1.0 for q in STATEMENTS}


def _runner(speedup: float, noise: float, seed: int, slow_rounds: frozenset[int] = frozenset()):
    """A pass: every statement's time ~ 10 ms x (1 +- noise) (one draw per pass, as a busy machine slows a whole
    pass) x (1 +- 2%), divided by ``speedup`` for arm B; the passes counted (calls); in rounds ``slow_rounds`` every
    arm runs 5x slower."""
    rng = random.Random(seed)
    calls = []

    def run(arm: str, i: int) -> ArmRound:
        calls.append((arm, i))
        slow = 5.0 if (len(calls) - 1) // 2 in slow_rounds else 1.0
        base = 10.0 / (speedup if arm == "B" else 1.0) * slow * (1 + rng.uniform(-noise, noise))  # the pass's luck
        return ArmRound({q: [base * (1 + rng.uniform(-0.02, 0.02))] for q in STATEMENTS}, {})

    return run, calls


def _decide(rounds):
    return compare(rounds["A"], rounds["B"], WEIGHTS, min_gain=0.02, n_boot=500)


def _outcomes(speedup: float, noise: float, rule: StopRule, seeds: int = 40) -> Counter:
    out = Counter()
    for seed in range(seeds):
        run, calls = _runner(speedup, noise, seed)
        m = interleave(run, ("A", "B"), rule, _decide)
        assert len(calls) == 2 * (len(m.rounds["A"]) + m.noise_rounds)
        assert noise >= 0.3 or m.noise_rounds == 0  # 5% noise never looks like a busy machine
        out[(m.stopped, len(m.rounds["A"]))] += 1
    return out


def test_a_clear_gain_stops_after_the_minimum_rounds():
    assert _outcomes(2.0, 0.05, StopRule(min_rounds=3, max_rounds=10)) == {("clears", 3): 40}
    run, _ = _runner(speedup=2.0, noise=0.05, seed=1)
    m = interleave(run, ("A", "B"), StopRule(min_rounds=3, max_rounds=10), _decide)
    assert m.evidence.gain_ci[0] > 0.4 and "3 rounds (the gain's interval clears the minimum)" in m.line()


def test_a_slower_candidate_stops_when_the_gain_cannot_clear_the_minimum():
    assert _outcomes(0.8, 0.05, StopRule(min_rounds=3, max_rounds=10)) == {("cannot clear", 3): 40}


def test_with_several_questions_the_measurement_stops_only_once_every_one_is_settled():
    """A clear gain (B twice as fast as A) asked beside one that cannot settle in 5 rounds (C 3% faster than A,
    under its own +-30% noise): the clear question alone stops at 3 rounds; together they run to the budget."""
    rng = random.Random(0)

    def run(arm: str, i: int) -> ArmRound:
        scale = {"A": 10.0, "B": 5.0, "C": 9.7}[arm] * (1 + i / 10) * (1 + rng.uniform(-0.3, 0.3) * (arm == "C"))
        return ArmRound({q: [scale] for q in STATEMENTS}, {})

    def both(rounds):
        return [compare(rounds["A"], rounds["B"], WEIGHTS, min_gain=0.02, n_boot=200),
                compare(rounds["A"], rounds["C"], WEIGHTS, min_gain=0.02, n_boot=200)]

    rule = StopRule(min_rounds=3, max_rounds=5, noise_factor=100)
    m = interleave(run, ("A", "B", "C"), rule, both, order="rotate")
    assert (m.stopped, len(m.rounds["A"])) == ("budget", 5)
    m = interleave(run, ("A", "B", "C"), rule, lambda r: both(r)[:1] * 2, order="rotate")
    assert (m.stopped, len(m.rounds["A"])) == ("clears", 3)


def test_a_small_gain_in_large_noise_mostly_runs_to_the_budget_unsettled():
    """A 3% gain under +-50% pass-to-pass noise cannot be told from the 2% minimum in 6 rounds: most measurements
    run to the budget and say so; an early stop needs rounds that happen to agree (the t interval over so few
    rounds keeps that rare)."""
    out = _outcomes(1.03, 0.5, StopRule(min_rounds=3, max_rounds=6))
    assert out[("budget", 6)] >= 30
    run, _ = _runner(speedup=1.03, noise=0.5, seed=0)
    m = interleave(run, ("A", "B"), StopRule(min_rounds=3, max_rounds=6), _decide)
    assert m.stopped == "budget" and "not settled" in m.line()


def test_a_round_slow_for_every_arm_is_noise_run_again_and_not_counted():
    run, calls = _runner(speedup=2.0, noise=0.02, seed=4, slow_rounds=frozenset({2}))
    said = []
    m = interleave(run, ("A", "B"), StopRule(min_rounds=4, max_rounds=10), _decide, say=said.append)
    assert m.noise_rounds == 1 and len(m.rounds["A"]) == 4 and len(calls) == 10
    assert all(max(r.samples["q0"]) < 20 for r in m.rounds["A"])  # the 5x round is not among the kept
    assert any("noise round" in s for s in said) and "1 noisy round run again" in m.line()
    assert len(m.loads) == 4 and all(x.load1 >= 0 for x in m.loads)


def test_noise_reruns_are_bounded():
    run, calls = _runner(speedup=2.0, noise=0.02, seed=5, slow_rounds=frozenset(range(2, 50)))
    m = interleave(run, ("A", "B"), StopRule(min_rounds=3, max_rounds=5, max_reruns=2), _decide)
    assert m.noise_rounds == 2 and m.stopped  # a machine busy for good still ends the measurement


@pytest.mark.parametrize("order", ["abba", "rotate", "shuffle"])
def test_each_arm_runs_first_about_as_often_as_the_others(order):
    rng = random.Random(0)
    arms = ["A", "B"] if order == "abba" else ["A", "B", "C"]
    firsts = [schedule(arms, i, order, rng)[0] for i in range(60)]
    counts = [firsts.count(a) for a in arms]
    assert sorted(schedule(arms, 7, order, rng)) == sorted(arms)
    assert max(counts) - min(counts) <= (0 if order != "shuffle" else 20)


def test_a_rule_must_allow_a_round():
    with pytest.raises(ValueError):
        StopRule(min_rounds=4, max_rounds=3)


def test_a_rule_that_stops_early_only_on_clears_still_ends_at_its_budget():
    """``stop_on=("clears",)`` (the bundle's): a candidate that cannot clear is measured to the budget, and the
    measurement ends there with that answer, never runs on."""
    run, calls = _runner(speedup=0.5, noise=0.02, seed=3)
    m = interleave(run, ("A", "B"), StopRule(min_rounds=3, max_rounds=5, stop_on=("clears",)), _decide)
    assert (m.stopped, len(m.rounds["A"])) == ("cannot clear", 5) and len(calls) == 10
    run, _ = _runner(speedup=2.0, noise=0.02, seed=3)
    m = interleave(run, ("A", "B"), StopRule(min_rounds=3, max_rounds=5, stop_on=("clears",)), _decide)
    assert (m.stopped, len(m.rounds["A"])) == ("clears", 3)
