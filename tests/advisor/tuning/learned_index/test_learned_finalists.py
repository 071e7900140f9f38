"""The learned-index search's pick re-measured (``advisor.tuning.learned_index.finalists``): the best few safe
configurations beside the defaults in rotating rounds through the measurement engine, the pick on their medians.

Known answers that do not depend on timing: the choosing rule on synthetic medians; which trials are finalists;
on the real harness and the real index, ALEX on a balanced mix with its data nodes kept nearly full (DENSE) spends
about twice the CPU time per operation of the defaults or of sparse nodes, on every machine we ran it on, so a
DENSE ranked first by a lucky search round is not picked, and finalists all of that kind lose to the defaults."""

from __future__ import annotations

import pytest

from advisor.core.domain import LearnedIndexParam, TrialResult
from advisor.tuning.learned_index.finalists import Finalist, candidates, choose, remeasure
from advisor.tuning.learned_index.pipeline import problem, search
from advisor.tuning.learned_index.target import HarnessTarget
from advisor.tuning.trials import TrialRecord
from optimizers.learned_index.problem import LearnedIndexOptimizer
from tests.advisor.items import alex_balanced

N = 20_000
DENSE = {"max_density": "0.99", "init_density": "0.95", "min_density": "0.9"}
DENSER = {"max_density": "0.98", "init_density": "0.93", "min_density": "0.88"}
SPARSE = {"max_density": "0.3", "init_density": "0.2", "min_density": "0.1"}
MID = {"max_density": "0.6", "init_density": "0.5", "min_density": "0.3"}


class Scripted(LearnedIndexOptimizer):
    """A learned-index optimizer (the real contract) that proposes the given configurations in turn."""

    name = "scripted"

    def _setup(self, configs=()) -> None:
        self.configs, self.asked = list(configs), 0

    def _ask(self, n, current, pending=()):
        config = self.configs[min(self.asked, len(self.configs) - 1)]
        self.asked += 1
        return [tuple(LearnedIndexParam(k, v) for k, v in config.items())]


@pytest.fixture(scope="module")
def target() -> HarnessTarget:
    return alex_balanced(N)


def record(number: int, config: dict, objective: float | None, status: str = "measured") -> TrialRecord:
    source = "default" if number == 0 else "scripted"
    return TrialRecord(number, dict(config), source, TrialResult(objective, status), 0.0)


def full(target: HarnessTarget, config: dict) -> dict:
    return target.space.full(config)


def test_the_pick_is_the_lowest_median_and_a_tie_goes_to_fewer_changes_then_the_search_ranking():
    assert choose([500.0, 900.0, 450.0], [0, 3, 3])[0] == 2  # clearly lowest
    assert choose([500.0, 900.0, 950.0], [0, 3, 3])[0] == 0  # the defaults, every finalist far worse
    assert choose([500.0, 450.0, 455.0], [0, 3, 1])[0] == 2  # within 2%: fewer changes
    assert choose([500.0, 451.0, 450.0], [0, 2, 2])[0] == 1  # within 2%, as many changes: the search's first
    assert choose([500.0, 495.0, 700.0], [0, 1, 1]) == (0, "within 2% of the lowest median (arm 1's) with fewer "
                                                           "changes")  # a gain the validation could not accept
    assert choose([500.0, 450.0, 470.0], [0, 3, 1])[0] == 1  # 4% apart is not a tie


def test_the_finalists_are_the_best_distinct_safe_changes_best_first(target):
    space = target.space
    trials = [record(0, full(target, {}), 500.0), record(1, full(target, DENSE), 300.0),
              record(2, full(target, SPARSE), 400.0), record(3, full(target, DENSE), 200.0),
              record(4, full(target, MID), None, "failed"), record(5, full(target, {}), 100.0),
              record(6, full(target, MID), 450.0), record(7, full(target, DENSER), 460.0)]
    assert [t.number for t in candidates(trials, space, 3)] == [3, 2, 6]  # trial 1: DENSE again; 5: the defaults
    assert [t.number for t in candidates(trials, space, 10)] == [3, 2, 6, 7]
    assert [t.number for t in candidates(trials[:3], space, 1)] == [1]


def test_a_far_worse_configuration_ranked_first_by_a_lucky_round_is_not_picked(target):
    """The search's one round ranked DENSE first (a lucky round: it is about twice the CPU time); the re-measure
    rotates it with the defaults and the others and picks on medians."""
    space, said = target.space, []
    base = record(0, full(target, {}), 480.0)
    ranked = [record(3, full(target, DENSE), 300.0), record(1, full(target, SPARSE), 450.0),
              record(2, full(target, MID), 470.0)]
    again = remeasure(target, base, ranked, space, rounds=4, say=said.append)
    by = {f.trial: f for f in again.finalists}
    assert [f.trial for f in again.finalists] == [0, 3, 1, 2] and all(f.rounds == 4 for f in again.finalists)
    assert [f.changes for f in again.finalists] == [0, 3, 3, 3]
    assert [f.search_cpu_ns_per_op for f in again.finalists] == [480.0, 300.0, 450.0, 470.0]
    assert sum(f.chosen for f in again.finalists) == 1 and not by[3].chosen
    chosen = next(f for f in again.finalists if f.chosen)
    assert again.chosen.number == chosen.trial and again.tuned["cpu_ns_per_op"] == chosen.cpu_ns_per_op
    assert by[3].cpu_ns_per_op > 1.4 * chosen.cpu_ns_per_op  # DENSE, far worse
    assert again.default["cpu_ns_per_op"] == by[0].cpu_ns_per_op
    assert again.measured.startswith("4 rounds") and "load" in again.measured
    assert any(line.startswith("finalists round 1 of 4, defaults:") for line in said)
    assert any(line.startswith("finalists over 4 rounds (median CPU ns per operation): defaults ")
               and "; picked " in line for line in said)
    assert isinstance(chosen, Finalist) and set(chosen.doc()) >= {"trial", "config", "cpu_ns_per_op", "rounds"}


def test_a_search_keeps_the_defaults_when_every_finalist_is_far_worse_and_counts_only_its_trials(target):
    """Scripted proposals DENSE and DENSER (both about twice the defaults' CPU time, safe under a loose cut): the
    re-measure keeps the defaults, so nothing changes and nothing is validated; its rounds are not evaluations."""
    prob = problem(target.space, "alex", safety=0.05)
    said: list[str] = []
    found = search(target, Scripted(prob, configs=[DENSE, DENSER]), 3, rounds=3, finalist_rounds=3,
                   say=said.append)
    assert found.evaluations == 3 == len(found.trials) and found.unsafe_evaluations == 0
    assert [f.trial for f in found.finalists][0] == 0 and len(found.finalists) == 3
    assert all(f.rounds == 3 for f in found.finalists) and found.finalists[0].chosen
    assert found.changes == () and found.evidence is None and not found.improved
    assert found.best == full(target, {}) and found.picked.startswith("defaults: ")
    assert found.default["cpu_ns_per_op"] == found.tuned["cpu_ns_per_op"] == found.finalists[0].cpu_ns_per_op
    assert not any(line.startswith("validation round") for line in said)


def test_the_re_measure_is_skipped_with_one_safe_changed_configuration_or_when_turned_off(target):
    prob = problem(target.space, "alex", safety=0.05)
    one = search(target, Scripted(prob, configs=[SPARSE]), 2, rounds=0)
    assert one.finalists == [] and one.picked == ""
    assert one.best == min(one.trials, key=lambda t: (t.result.objective, t.number)).config  # the search's best
    off = search(target, Scripted(prob, configs=[DENSE, SPARSE]), 3, rounds=0, finalist_rounds=0)
    assert off.finalists == [] and off.evaluations == 3
    single = search(target, Scripted(prob, configs=[DENSE, SPARSE]), 3, rounds=0, finalists=1)
    assert single.finalists == []
