"""The search knows the guard: per-statement ratios to the baseline are outcomes the model searches learn.

A synthetic problem over a real server's knob space (4 knobs): the objective is a bowl whose optimum (0.8 on every
axis) lies where one statement runs 1.5x slower than at baseline (the second knob above 0.6). A constraint-aware
search must propose far fewer configurations deep in that region than the same search without the constraint,
over several seeds, and still find a good configuration that regresses nothing.
"""

import json

import numpy as np
import pytest

from advisor.core.domain import Hardware, TrialResult
from connectors.postgres import PostgresConnector
from optimizers import registry
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.search import FAILED_RATIO
from optimizers.knobs.space import KnobSpace, SpaceOptions

HW = Hardware(8 * 1024**3, 4, "ssd")
FAST = {"hibo": {"sweep": 256, "local": 128, "sparse": 128}}
SEEDS = (0, 1, 2)
TRIALS = 12  # 5 Sobol points, then 7 model asks


@pytest.fixture(scope="module")
def problem(pg):
    connector = PostgresConnector(pg.dsn())
    return KnobProblem(KnobSpace.build(connector.knob_catalog(), HW, connector.knob_profile(), SpaceOptions(max_knobs=4)))


def outcome(x: np.ndarray) -> TrialResult:
    """The bowl, and statement "slow" 1.5x slower wherever the second knob is above 0.6 ("fast" is untouched)."""
    return TrialResult(0.05 + float(np.sum((x - 0.8) ** 2)), ratios={"slow": 1.5 if x[1] > 0.6 else 1.0, "fast": 0.9})


def search(name: str, problem: KnobProblem, seed: int, constrained: bool) -> list[tuple[np.ndarray, TrialResult]]:
    opt = registry.create("knobs", name, problem, seed=seed, constrained=constrained, **FAST.get(name, {}))
    out = []
    for _ in range(TRIALS):
        config = opt.ask(1)[0]
        x = problem.space.encode(problem.config(config))
        result = outcome(x)
        opt.tell(config, result)
        out.append((x, result))
    return out


def deep_inside(trials) -> int:
    """Model-driven asks well inside the regressing region (past its boundary's blur)."""
    return sum(x[1] > 0.7 for x, _ in trials[5:])


def best_feasible(trials) -> float:
    return min(r.objective for x, r in trials if r.worst_ratio < 1.1)


def check_constraint_learned(name: str, problem: KnobProblem) -> None:
    constrained = [search(name, problem, s, True) for s in SEEDS]
    plain = [search(name, problem, s, False) for s in SEEDS]
    inside_c = sum(deep_inside(t) for t in constrained)
    inside_p = sum(deep_inside(t) for t in plain)
    # measured at these seeds (of 21 model asks): hibo 2 vs 17, gp 1 vs 12
    assert inside_p >= 10 and inside_c * 3 <= inside_p, (inside_c, inside_p)
    # and what it finds is good: the best configuration that regresses nothing, no worse than the plain search's
    assert np.mean([best_feasible(t) for t in constrained]) <= np.mean([best_feasible(t) for t in plain])


def test_hibo_proposes_far_fewer_regressing_configurations_than_without_the_constraint(problem):
    check_constraint_learned("hibo", problem)


@pytest.mark.slow
def test_gp_bo_learns_the_same_constraint(problem):
    check_constraint_learned("gp", problem)


def test_worst_ratio_failures_and_state_are_kept_for_the_model(problem):
    opt = registry.create("knobs", "hibo", problem, seed=0, **FAST["hibo"])
    for result in (TrialResult(1.0, ratios={"a": 1.0}), TrialResult(0.5, ratios={"a": 1.3, "b": 0.7}),
                   TrialResult(None, "failed", "crash"), TrialResult(0.9)):
        opt.tell(opt.ask(1)[0], result)
    assert [o.worst for o in opt.history] == [1.0, 1.3, None, None]
    assert list(opt.feasible_mask()) == [True, False, False, True]  # unknown ratios (pgbench) count as fine
    assert opt.best().objective == 0.9  # the faster trial regressed a statement
    X, c = opt.constraint_data()  # the failure is learned as regressing at least as much as FAILED_RATIO
    assert len(c) == 3 and c[2] >= np.log(FAILED_RATIO) and np.isclose(c[1], np.log(1.3))
    assert opt.models_constraint()
    restored = registry.create("knobs", "hibo", problem, seed=5, **FAST["hibo"])
    restored.restore(json.loads(json.dumps(opt.state())))
    assert [o.worst for o in restored.history] == [1.0, 1.3, None, None]
    unconstrained = registry.create("knobs", "hibo", problem, constrained=False)
    unconstrained.restore(opt.state())
    assert not unconstrained.models_constraint()
