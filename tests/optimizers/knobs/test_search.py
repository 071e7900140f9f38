"""Search optimizers over a small knob space of a real server's catalog: ask/tell, resumable state, the failure
penalty, HiBO's partitioning, and skipping restarts."""

import json
import math

import numpy as np
import pytest

from advisor.core.domain import Hardware, TrialResult
from connectors.postgres import PostgresConnector
from optimizers import registry
from optimizers.knobs.bo import RESTART_TOLERANCE, prefer_no_restart
from optimizers.knobs.hibo import build_tree, leaf_weights, leaves, route
from optimizers.knobs.problem import KnobProblem
from optimizers.knobs.search import PENALTY_FACTOR
from optimizers.knobs.space import KnobSpace, SpaceOptions

HW = Hardware(8 * 1024**3, 4, "ssd")
SEARCHERS = ["random", "tpe", "gp", "hibo"]
FAST = {"hibo": {"sweep": 256, "local": 128, "sparse": 128}}  # fewer candidates to score: the same algorithm, quicker


@pytest.fixture(scope="module")
def space(pg):
    connector = PostgresConnector(pg.dsn())
    space = KnobSpace.build(connector.knob_catalog(), HW, connector.knob_profile(), SpaceOptions(max_knobs=4))
    assert space.names == ["shared_buffers", "work_mem", "effective_cache_size", "random_page_cost"]
    return space


def bowl(x) -> float:
    """A synthetic objective (lower is better) with its optimum at 0.8 in every coordinate."""
    return 0.05 + float(np.sum((np.asarray(x) - 0.8) ** 2))


def searcher(name, space, seed=0, **options):
    return registry.create("knobs", name, KnobProblem(space), seed=seed, **options)


def points(opt, n=1):
    """The asked configurations as points of the unit cube."""
    return [opt.space.encode(opt.problem.config(c)) for c in opt.ask(n)]


def tell(opt, x, objective):
    """Tell the configuration at point ``x`` (as the trial runner would run it) what it measured."""
    config = tuple(opt.space.changes(opt.space.decode(x)))
    opt.tell(config, TrialResult(objective) if objective is not None else TrialResult(None, "failed", "test"))


def in_cube(x, d) -> bool:
    x = np.asarray(x)
    return x.shape == (d,) and bool(((0 <= x) & (x <= 1)).all())


@pytest.mark.parametrize("name", SEARCHERS)
def test_first_asks_are_distinct_points_of_the_unit_cube(space, name):
    opt = searcher(name, space)
    asked = points(opt, 3)
    assert len(asked) == 3 and all(in_cube(p, space.dim) for p in asked)
    assert len({tuple(np.round(p, 6)) for p in asked}) == 3
    assert opt.history == []  # asking is not telling
    assert all(set(space.decode(p)) == set(space.names) for p in asked)


@pytest.mark.parametrize("name", SEARCHERS)
def test_state_and_restore_reproduce_the_next_ask(space, name):
    rng = np.random.default_rng(7)
    opt = searcher(name, space, **FAST.get(name, {}))
    for i in range(10):
        x = rng.random(space.dim)
        tell(opt, x, None if i == 4 else bowl(x))
    for _ in range(2):  # and two of its own (past the space-filling start for the model-based ones)
        x = points(opt)[0]
        tell(opt, x, bowl(x))
    nxt = points(opt)[0]
    assert in_cube(nxt, space.dim)

    state = json.loads(json.dumps(opt.state()))  # as the store keeps it
    assert state["optimizer"] == name and len(state["history"]) == 12 and state["history"][4]["objective"] is None
    resumed = searcher(name, space, seed=99, **FAST.get(name, {}))  # the seed comes back with the state
    resumed.restore(state)
    assert resumed.seed == 0 and len(resumed.history) == 12 and resumed.history[4].failed
    again = points(resumed)[0]
    # exactly the same configuration is tried next (the GP's warm start is part of the state)
    assert space.decode(again) == space.decode(nxt)
    np.testing.assert_array_equal(again, nxt)
    # the history matters: the same seed without it asks something else
    assert not np.allclose(points(searcher(name, space, **FAST.get(name, {})))[0], nxt, atol=1e-2)


def test_restore_refuses_another_optimizers_state(space):
    state = searcher("tpe", space).state()
    with pytest.raises(ValueError, match="tpe"):
        searcher("random", space).restore(state)


def test_a_failed_trial_scores_above_the_worst(space):
    opt = searcher("random", space)
    xs = np.random.default_rng(1).random((5, space.dim))
    for x, objective in zip(xs, [2.0, 8.0, None, 3.0, math.inf], strict=True):
        tell(opt, x, objective)
    X, y = opt.data()
    assert X.shape == (5, space.dim)
    np.testing.assert_allclose(X, [space.encode(space.decode(x)) for x in xs])  # the configurations told
    penalty = math.log(8.0 * PENALTY_FACTOR)
    assert y[2] == pytest.approx(penalty) and y[4] == pytest.approx(penalty)  # a non-finite objective fails too
    assert y[2] > max(y[0], y[1], y[3])
    np.testing.assert_allclose(y[[0, 1, 3]], np.log([2.0, 8.0, 3.0]))
    assert opt.best().objective == 2.0


# --- HiBO -----------------------------------------------------------------------------------------------------


def corner_data(n=60, seed=0):
    """2-D samples whose good (low) values cluster in the corner near (1, 1)."""
    X = np.random.default_rng(seed).random((n, 2))
    y = np.log(0.01 + np.sum((X - 1.0) ** 2, axis=1))
    return X, y


def test_hibo_tree_splits_and_routes_the_good_corner_to_the_best_leaf():
    X, y = corner_data()
    root = build_tree(X, y, max_depth=2, min_leaf=4, seed=0)
    parts = leaves(root)
    assert len(parts) > 1
    assert sorted(np.concatenate([leaf.idx for leaf in parts]).tolist()) == list(range(len(y)))  # a partition
    # routing the samples puts each one in the leaf that holds it
    routed = route(root, X)
    for i, leaf in enumerate(parts):
        assert (routed[leaf.idx] == i).all()
    means = np.array([y[leaf.idx].mean() for leaf in parts])
    best = int(np.argmin(means))
    assert route(root, np.array([[0.97, 0.97]]))[0] == best
    assert route(root, np.array([[0.03, 0.03]]))[0] != best

    weights = leaf_weights(root, y, cp=0.0)
    assert weights.shape == (len(parts),)
    assert weights[best] == 1.0
    assert (np.delete(weights, best) < 1.0).all() and (weights > 0).all()
    # the leaves' order by weight is their order by mean performance
    assert list(np.argsort(-weights)) == list(np.argsort(means))


def test_hibo_tree_stops_at_few_samples_and_at_its_depth():
    small = build_tree(*corner_data(n=7), max_depth=3, min_leaf=4)  # fewer than 2 x min_leaf: no split
    assert small.leaf and leaves(small) == [small]
    flat = build_tree(*corner_data(), max_depth=0, min_leaf=4)
    assert flat.leaf
    deep = build_tree(*corner_data(), max_depth=1, min_leaf=4)
    assert len(leaves(deep)) == 2 and all(leaf.depth == 1 for leaf in leaves(deep))


def test_hibo_improves_on_its_start_within_20_trials(space):
    opt = searcher("hibo", space, sweep=256, local=128)
    for _ in range(20):
        x = points(opt)[0]
        assert in_cube(x, space.dim)
        tell(opt, x, bowl(x))
        found = [o.objective for o in opt.history]
        if len(found) > 5 and min(found) < 0.5 * min(found[:5]):
            break
    # the model's points beat the space-filling start clearly (the optimum is 0.05; the start's best about 0.33)
    assert len(found) > 5 and min(found) < 0.5 * min(found[:5])
    assert opt.last_tree is not None  # and they came from the tree-weighted search


# --- restarts -------------------------------------------------------------------------------------------------


def test_prefer_no_restart_pins_restart_knobs_when_it_costs_little():
    x = np.array([0.2, 0.9, 0.4])
    restart = np.array([False, True, True])
    current = np.array([0.5, 0.1, 0.3])
    pinned = np.array([0.2, 0.1, 0.3])  # restart knobs where the shadow has them, the others as asked
    value = -1.0
    seen = []

    def small_loss(p):
        seen.append(p.copy())
        return value - 0.1

    np.testing.assert_array_equal(prefer_no_restart(x, value, current, restart, small_loss), pinned)
    np.testing.assert_array_equal(seen[0], pinned)  # the pinned point is what gets valued
    np.testing.assert_array_equal(prefer_no_restart(x, value, current, restart, lambda p: value - 1.0), x)
    # the tolerance is the edge: a loss of exactly log(0.8) still skips the restart
    np.testing.assert_array_equal(prefer_no_restart(x, value, current, restart, lambda p: value + RESTART_TOLERANCE),
                                  pinned)
    # a gain is always taken
    np.testing.assert_array_equal(prefer_no_restart(x, value, current, restart, lambda p: value + 1.0), pinned)


def test_prefer_no_restart_leaves_the_point_alone_when_there_is_nothing_to_pin():
    x = np.array([0.2, 0.9])

    def never(_p):
        raise AssertionError("no acquisition needed")

    np.testing.assert_array_equal(prefer_no_restart(x, -1.0, None, np.array([False, True]), never), x)
    np.testing.assert_array_equal(prefer_no_restart(x, -1.0, [0.5, 0.1], np.array([False, False]), never), x)
    np.testing.assert_array_equal(prefer_no_restart(x, -1.0, [0.7, 0.9], np.array([False, True]), never), x)
