"""LITune's mechanics (``optimizers.learned_index.litune``): meta-training then tuning a held-out task, the
safety mechanism (unsafe-region veto, memory bound), the O2 online phase, the stored model, exact state.

These tests run the agent against ``analytic_env``: a deterministic function of the parameters (a bowl whose
optimum moves with the task's two descriptor numbers, with a cliff of failed trials) — a unit test of the
agent's mechanics, NOT the learned index. The real index's tests are ``test_litune_index.py``. CPU only.
"""

import json

import numpy as np
import pytest

from advisor.core.domain import LearnedIndexParam, TrialResult
from advisor.core.errors import InvalidKnobValue
from advisor.core.params import ParamSpace, ParamSpec
from optimizers.learned_index.litune import LITune
from optimizers.learned_index.litune_safety import TrustRegion, UnsafeRegion, is_unsafe
from optimizers.learned_index.problem import LearnedIndexProblem, TrainingTask

SPACE = ParamSpace((ParamSpec("a", 0.0, 1.0, default="0.5"),
                    ParamSpec("b", 1, 1000, scale="log", integer=True, default="32"),
                    ParamSpec("c", 0.0, 1.0, default="0.5"),
                    ParamSpec("d", 0.0, 1.0, default="0.5"),
                    ParamSpec("e", choices=("x", "y", "z"), default="y"),
                    ParamSpec("f", 0.0, 1.0, default="0.5")))
CLIFF = 0.8  # a >= CLIFF (unit cube) fails: the analytic stand-in for the safety cut
HELD_OUT = (0.3, 0.7)
BUDGET = 15


def analytic_env(features, memory=1e6):
    """ns/op of a configuration on the analytic task ``features`` (two numbers in [0, 1]): 100 at the task's
    optimum, 2-3x that at the defaults; failed and unsafe where ``a`` passes ``CLIFF``."""
    f0, f1 = features
    center = np.array([0.1 + 0.5 * f0, 0.9 - 0.6 * f1, 0.2 + 0.3 * f0, 0.75, 0.5, 0.3 + 0.4 * f1])

    def evaluate(config):
        x = SPACE.encode(config)
        if x[0] >= CLIFF:
            return TrialResult(None, "failed", "unsafe: below 50% of the default's throughput",
                               metrics={"unsafe": 1.0})
        ns = 100.0 * float(np.exp(6.0 * np.sum((x - center) ** 2)))
        return TrialResult(ns, metrics={"throughput_ops": 1e9 / ns, "p99_ns": 3 * ns, "memory_bytes": memory,
                                        "unsafe": 0.0, "depth": 2.0 + x[1], "nodes": 10.0})
    return evaluate


def training_tasks():
    rng = np.random.default_rng(5)
    return [TrainingTask(f"analytic-{i}", tuple(f), analytic_env(tuple(f))) for i, f in enumerate(rng.random((8, 2)))]


def problem(features=HELD_OUT, training=training_tasks, memory_limit=None):
    return LearnedIndexProblem(SPACE, "analytic", tuple(features), memory_limit_bytes=memory_limit,
                               training=training)


def tune(opt, evaluate, budget=BUDGET):
    """ask/tell ``budget`` times; the objectives (None for failed trials)."""
    seen = []
    for _ in range(budget):
        config = opt.ask(1)[0]
        outcome = evaluate(opt.problem.config(config))
        opt.tell(config, outcome)
        seen.append(outcome.objective)
    return seen


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A model meta-trained once on the analytic tasks, stored as ``prepare`` stores it."""
    path = tmp_path_factory.mktemp("litune-models")
    opt = LITune(problem(), seed=0, device="cpu", episodes=80)
    info = opt.prepare(path, lambda _m: None)
    assert info["trained"] and not info["loaded"] and info["device"] == "cpu"
    # the defaults once per task, 80 episodes of 8 trials, then each task's 3 best measured twice more
    assert info["meta"]["episodes"] == 80 and info["meta"]["evaluations"] == 8 + 80 * 8 + 8 * 3 * 2
    assert len(info["meta"]["best_ratio"]) == 8 and info["meta"]["clone_loss"] is not None
    return path


@pytest.mark.slow  # meta-training (about a minute on a quiet machine) is shared by these five
def test_meta_trained_litune_beats_the_defaults_on_a_held_out_task(model_dir):
    evaluate = analytic_env(HELD_OUT)
    default = evaluate(SPACE.default_config()).objective
    opt = LITune(problem(), seed=1, device="cpu")
    info = opt.prepare(model_dir, lambda _m: None)
    assert info["loaded"] and not info["trained"]
    seen = tune(opt, evaluate)
    assert seen[0] == pytest.approx(default)  # its first proposal is the reference, the defaults
    best = min(s for s in seen if s is not None)
    assert best < 0.55 * default  # the optimum is 0.40x the defaults' ns/op
    assert opt.report()["unsafe_evaluations"] <= 1


@pytest.mark.slow  # meta-training (about a minute on a quiet machine) is shared by these five
def test_meta_training_helps_against_an_untrained_agent_at_the_same_budget(model_dir):
    evaluate = analytic_env(HELD_OUT)
    trained, untrained = [], []
    for seed in range(3):
        opt = LITune(problem(), seed=seed, device="cpu")
        opt.prepare(model_dir, lambda _m: None)
        trained.append(min(s for s in tune(opt, evaluate, 10) if s is not None))
        cold = LITune(problem(training=None), seed=seed, device="cpu")
        assert cold.prepare(None, lambda _m: None)["trained"] is False
        untrained.append(min(s for s in tune(cold, evaluate, 10) if s is not None))
    assert np.mean(trained) < np.mean(untrained)


@pytest.mark.slow  # meta-training (about a minute on a quiet machine) is shared by these five
def test_state_and_restore_continue_exactly_after_meta_training(model_dir):
    evaluate = analytic_env(HELD_OUT)
    opt = LITune(problem(), seed=2, device="cpu")
    opt.prepare(model_dir, lambda _m: None)
    tune(opt, evaluate, 5)
    copy = LITune(problem(), seed=7, device="cpu")
    copy.restore(json.loads(json.dumps(opt.state())))
    for _ in range(3):  # the same asks, and the same fine-tuning from the same tells
        a, b = opt.ask(1), copy.ask(1)
        assert a == b
        outcome = evaluate(opt.problem.config(a[0]))
        opt.tell(a[0], outcome)
        copy.tell(b[0], outcome)


@pytest.mark.slow  # meta-training (about a minute on a quiet machine) is shared by these
def test_a_meta_trained_agent_proposes_the_critics_best_of_its_draws(model_dir):
    evaluate = analytic_env(HELD_OUT)
    opt = LITune(problem(), seed=3, device="cpu", candidates=6)
    opt.prepare(model_dir, lambda _m: None)
    tune(opt, evaluate, 1 + 1 + opt.portfolio)  # the reference, the policy's point, the portfolio
    assert opt.ask(1) and "the critic's pick of 6 draws" in opt.explain()["*"]
    points = [np.full(SPACE.dim, v) for v in (0.1, 0.5, 0.9)]
    from optimizers.learned_index import litune_agent

    ctx = litune_agent.context(opt._phase_steps(), opt.reference, SPACE.dim, opt.agent.options.context)
    values = opt.agent.value(ctx, litune_agent.feature_vector(opt.features), np.asarray(points))
    assert values.shape == (3,)
    assert opt._ranked(points) is points[int(np.argmax(values))]
    untrained = LITune(problem(training=None), seed=3, device="cpu", candidates=6)
    untrained.prepare(None, lambda _m: None)
    tune(untrained, evaluate, 4)
    assert "critic" not in untrained.explain()["*"]  # an untrained critic ranks nothing: one draw, as before


def test_unsafe_region_vetoes_proposals_near_known_unsafe_points():
    region = UnsafeRegion(radius=0.15)
    for x in ([0.9, 0.9], [0.95, 0.85], [0.1, 0.1]):
        region.add(x, unsafe=x[0] > 0.5)
    assert region.unsafe([0.92, 0.88]) and not region.unsafe([0.12, 0.1]) and not region.unsafe([0.5, 0.5])
    box = TrustRegion(start=0.1, full_after=10)
    assert box.half_width(0) == pytest.approx(0.1) and box.half_width(10) == pytest.approx(0.5)
    # an optimizer told that one corner is unsafe proposes nothing predicted unsafe there
    opt = LITune(problem(training=None), seed=3, device="cpu", trust=0.5, radius=0.3)
    evaluate = analytic_env(HELD_OUT)
    opt.tell((), evaluate(SPACE.default_config()))
    rng = np.random.default_rng(0)
    unsafe_points = [np.concatenate([[0.85 + 0.1 * rng.random()], rng.random(5)]) for _ in range(6)]
    for x in unsafe_points:
        opt.tell(tuple(SPACE.changes(SPACE.decode(x))), TrialResult(None, "failed", "unsafe", metrics={"unsafe": 1.0}))
    check = UnsafeRegion(radius=0.3)
    for x in unsafe_points:
        check.add(SPACE.encode(SPACE.decode(x)), True)
    for _ in range(20):
        config = opt.ask(1)[0]
        assert not check.unsafe(SPACE.encode(opt.problem.config(config)))
        opt.tell(config, evaluate(opt.problem.config(config)))


def test_safe_exploration_has_fewer_unsafe_trials_than_random_search():
    from optimizers.learned_index.searches import RandomSearch

    evaluate = analytic_env(HELD_OUT)
    litune = LITune(problem(training=None), seed=4, device="cpu")
    random = RandomSearch(problem(training=None), seed=4)
    unsafe = {name: sum(s is None for s in tune(opt, evaluate, 25)) for name, opt in
              (("litune", litune), ("random", random))}
    assert unsafe["random"] >= 2  # the cliff is a fifth of the space
    assert unsafe["litune"] < unsafe["random"]


def test_memory_above_the_bound_counts_as_unsafe():
    measured = TrialResult(120.0, metrics={"memory_bytes": 5e6, "unsafe": 0.0})
    assert is_unsafe(measured, 4_000_000) and not is_unsafe(measured, 6_000_000) and not is_unsafe(measured, None)
    assert is_unsafe(TrialResult(None, "failed", "crashed"), None)
    opt = LITune(problem(training=None, memory_limit=4_000_000), seed=0, device="cpu")
    tune(opt, analytic_env(HELD_OUT, memory=5e6), 3)
    assert opt.report()["unsafe_evaluations"] == 3


@pytest.mark.slow  # meta-training (about a minute on a quiet machine) is shared by these five
def test_online_phase_keeps_the_agent_and_remeasures_the_incumbent(model_dir):
    opt = LITune(problem(features=(0.2, 0.2)), seed=5, device="cpu")
    opt.prepare(model_dir, lambda _m: None)
    first = analytic_env((0.2, 0.2))
    seen = tune(opt, first, 8)
    best = min((s for s in opt.steps if s["objective"] is not None), key=lambda s: s["objective"])
    buffered, updates = opt.agent.buffer.size, opt.agent.updates
    weights = {k: v.clone() for k, v in opt.agent.nets.state_dict().items()}
    opt.online((0.8, 0.9))  # the data drifted
    assert opt.phase == 1 and opt.agent.buffer.size == buffered and opt.agent.updates == updates
    assert all((v == opt.agent.nets.state_dict()[k]).all() for k, v in weights.items())
    again = opt.ask(1)[0]
    assert opt.problem.config(again) == SPACE.full(best["config"])  # the incumbent, re-measured as the reference
    drifted = analytic_env((0.8, 0.9))
    opt.tell(again, drifted(opt.problem.config(again)))
    later = tune(opt, drifted, 10)
    assert min(s for s in later if s is not None) < drifted(best["config"]).objective
    buffer = opt.agent.buffer  # the newest transition is the last tell, and the agent kept learning
    assert np.allclose(buffer.a[(buffer.pos - 1) % buffer.capacity], opt.steps[-1]["x"])
    assert opt.agent.updates > updates and len(seen) == 8


@pytest.mark.slow  # meta-training (about a minute on a quiet machine) is shared by these five
def test_a_stored_model_is_reused_and_asks_like_the_trained_one(model_dir, tmp_path):
    trained = LITune(problem(), seed=0, device="cpu", episodes=3, steps=2)
    assert trained.prepare(tmp_path, lambda _m: None)["trained"]
    loaded = LITune(problem(), seed=0, device="cpu", episodes=3, steps=2)
    info = loaded.prepare(tmp_path, lambda _m: None)
    assert info["loaded"] and info["model"] == str(trained.model_path(tmp_path))
    evaluate = analytic_env(HELD_OUT)
    assert tune(trained, evaluate, 4) == tune(loaded, evaluate, 4)
    other = LearnedIndexProblem(ParamSpace(SPACE.params[:3]), "analytic", HELD_OUT, training=training_tasks)
    assert LITune(other).model_path(tmp_path) != trained.model_path(tmp_path)  # another space, another model


def test_a_bad_configuration_from_outside_is_refused_by_the_space():
    opt = LITune(problem(training=None), seed=0, device="cpu")
    with pytest.raises(InvalidKnobValue, match="outside"):
        opt.tell((LearnedIndexParam("a", "7"),), TrialResult(100.0))
