import random

from advisor.tuning.evidence import ArmRound, compare


def _rounds(rng, means, n=5, noise=0.03):
    return [ArmRound({k: [m * (1 + rng.uniform(-noise, noise))] for k, m in means.items()}, {}) for _ in range(n)]


def test_a_real_improvement_is_significant():
    rng = random.Random(1)
    ev = compare(_rounds(rng, {"a": 100, "b": 20}), _rounds(rng, {"a": 60, "b": 20}), {"a": 1, "b": 1})
    assert 0.25 < ev.gain < 0.40 and ev.gain_ci[0] > 0.2 and ev.accepted


def test_noise_alone_is_not_a_gain():
    rng = random.Random(2)
    ev = compare(_rounds(rng, {"a": 100}, noise=0.2), _rounds(rng, {"a": 100}, noise=0.2), {"a": 1})
    assert ev.gain_ci[0] < ev.min_gain and not ev.accepted


def test_a_statement_regression_rejects_even_with_a_total_gain():
    rng = random.Random(3)
    ev = compare(_rounds(rng, {"big": 1000, "small": 50}), _rounds(rng, {"big": 500, "small": 80}),
                 {"big": 1, "small": 1})
    assert ev.gain > 0.3
    assert [s.queryid for s in ev.regressions] == ["small"] and not ev.accepted


def test_errors_only_under_the_candidate_count_as_regression():
    base = [ArmRound({"a": [10.0]}, {}) for _ in range(3)]
    cand = [ArmRound({}, {"a": 1}) for _ in range(3)]
    ev = compare(base, cand, {"a": 1})
    assert ev.regressions and ev.regressions[0].errors == 3


def _busy_rounds(rng, means, n=8):
    """Rounds as beside a busy CPU: each execution up to 40% slower at random, the same for every arm."""
    return [ArmRound({k: [m * (1 + rng.uniform(0, 0.4))] for k, m in means.items()}, {}) for _ in range(n)]


def test_thirty_unchanged_statements_on_a_busy_machine_are_not_found_slower_by_chance():
    # the same statements in both arms: any regression found is a false alarm. Judged one by one at 95%, one
    # statement in forty is "slower" by chance, so most comparisons of thirty statements would block; judged as
    # one family (Bonferroni), none of these 20 does, while a statement planted 1.5x slower is found in every one.
    means = {f"q{i}": 10.0 + i for i in range(30)}
    weights = dict.fromkeys(means, 1.0)
    false_alarms = caught = 0
    for seed in range(20):
        rng = random.Random(seed)
        ev = compare(_busy_rounds(rng, means), _busy_rounds(rng, means), weights)
        false_alarms += bool(ev.regressions)
        planted = compare(_busy_rounds(rng, means), _busy_rounds(rng, {**means, "q29": 39.0 * 1.5}), weights)
        caught += [s.queryid for s in planted.regressions] == ["q29"]
    assert false_alarms == 0 and caught == 20
