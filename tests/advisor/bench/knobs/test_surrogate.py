"""The knob bench's surrogate: per-statement models of known synthetic timings over a real server's knob space,
the guard's ratios on top, and the comparison's numbers (shares of the pooled best feasible gain)."""

import pytest

from advisor.bench.knobs.surrogate import Observed, Surrogate, compare, feasible
from advisor.core.domain import Hardware
from connectors.postgres import PostgresConnector
from optimizers.knobs.search import sobol
from optimizers.knobs.space import KnobSpace, SpaceOptions


@pytest.fixture(scope="module")
def space(pg):
    connector = PostgresConnector(pg.dsn())
    space = KnobSpace.build(connector.knob_catalog(), Hardware(8 * 1024**3, 4, "ssd"), connector.knob_profile(),
                            SpaceOptions(max_knobs=4))
    assert space.names == ["shared_buffers", "work_mem", "effective_cache_size", "random_page_cost"]
    return space


def timings(x) -> dict[str, float]:
    """Statement "scan" gets faster as random_page_cost falls; "sort" runs 1.5x slower when work_mem is high."""
    return {"scan": 10.0 + 90.0 * x[3], "sort": 50.0 * (1.5 if x[1] > 0.6 else 1.0)}


@pytest.fixture(scope="module")
def surrogate(space):
    design = [space.default_config()] + [space.decode(x) for x in sobol(space.dim, 40, 0)]
    points = [Observed(space.decode(space.encode(c)), timings(space.encode(c))) for c in design]
    return Surrogate(space, {"scan": 1.0, "sort": 1.0}, points)


def test_the_surrogate_learns_each_statement_and_the_guards_ratios(space, surrogate):
    base = surrogate.outcome({})
    assert base.ratios == {"scan": 1.0, "sort": 1.0} and feasible(base)
    low_cost = surrogate.outcome({"random_page_cost": "1.2"})
    assert low_cost.objective < base.objective and feasible(low_cost)
    big_sorts = surrogate.outcome({"random_page_cost": "1.2", "work_mem": space.dimensions[1].from_unit(0.95)})
    assert big_sorts.ratios["sort"] >= 1.3 and not feasible(big_sorts)  # faster in total, yet it regresses "sort"


def test_the_comparison_scores_runs_against_the_pooled_best_feasible_configuration(surrogate):
    runs = (("random", "random", False), ("tpe", "tpe", False))
    out = compare(surrogate, runs, [], n_seeds=2, trials=8)
    assert 0 < out["reference_gain"] < 1 and set(out["optimizers"]) == {"random", "tpe"}
    for s in out["optimizers"].values():
        assert 0 <= s["min_share_of_reference"] <= s["mean_share_of_reference"] <= 1
        assert s["mean_feasible_gain"] <= out["reference_gain"] + 1e-9
        assert all(b >= a for a, b in zip(s["mean_curve"], s["mean_curve"][1:]))  # best so far never falls
        assert len(s["mean_curve"]) == 8 and 0 <= s["best_total_regresses"] <= 2
