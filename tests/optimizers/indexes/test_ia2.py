"""IA2 on a real server's what-if costs: masking rules, the budget, reproducible training, stored models."""

import numpy as np
import psycopg
import pytest

from advisor.core.domain import IndexChange
from connectors.postgres.whatif import HypoPG
from optimizers import registry
from optimizers.indexes.base import BudgetExceeded, IndexOptimizer
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.env import IndexEnv
from optimizers.indexes.mixes import mix_sampler
from optimizers.indexes.td3 import IA2Options, TD3Agent
from optimizers.indexes.problem import Candidate, ColumnUse, IndexProblem, Query

O, L = ("public", "orders"), ("public", "lineitem")
I_CUST = IndexChange("public", "orders", ("o_custkey",))
I_CUST_DATE = IndexChange("public", "orders", ("o_custkey", "o_orderdate"))
I_DATE = IndexChange("public", "orders", ("o_orderdate",))
I_PART = IndexChange("public", "lineitem", ("l_partkey",))
I_SHIP = IndexChange("public", "lineitem", ("l_shipdate",))
QUERIES = (
    Query("cust", "SELECT * FROM orders WHERE o_custkey = 42 AND o_orderdate > date '1996-01-01'", 1.0, frozenset({O})),
    Query("part", "SELECT sum(l_quantity) FROM lineitem WHERE l_partkey = 77", 1.0, frozenset({L})),
    Query("ship", "SELECT count(*) FROM lineitem WHERE l_shipdate = date '1995-03-01'", 1.0, frozenset({L})),
)
CANDIDATES = (Candidate(I_CUST, frozenset({"cust"})), Candidate(I_CUST_DATE, frozenset({"cust"})),
              Candidate(I_DATE, frozenset({"cust"})), Candidate(I_PART, frozenset({"part"})),
              Candidate(I_SHIP, frozenset({"ship"})))
USES = (("cust", ColumnUse(O, "o_custkey", "equality")), ("cust", ColumnUse(O, "o_orderdate", "range")),
        ("part", ColumnUse(L, "l_partkey", "equality")), ("ship", ColumnUse(L, "l_shipdate", "equality")))


@pytest.fixture
def problem(tpch_dsn):
    with psycopg.connect(tpch_dsn, autocommit=True) as conn, HypoPG(conn) as session:
        yield IndexProblem(QUERIES, CANDIDATES, 10 << 20, CachedWhatIf(session), USES)


def valid(env):
    return {env.candidates[i].index for i in np.flatnonzero(env.mask())}


def test_masking_prefix_extension_and_relevance(problem):
    env = IndexEnv(CANDIDATES)
    env.reset(problem.with_weights({"cust": 5.0, "part": 1.0}))
    assert valid(env) == {I_CUST, I_DATE, I_PART}  # no extension before its prefix; l_shipdate serves no query
    env.step(CANDIDATES.index(next(c for c in CANDIDATES if c.index == I_CUST)))
    assert valid(env) == {I_CUST_DATE, I_DATE, I_PART}
    size_before = env.used
    env.step([c.index for c in CANDIDATES].index(I_CUST_DATE))
    assert env.config() == [I_CUST_DATE]  # the extension replaced its prefix
    assert env.used == pytest.approx(problem.whatif.size(I_CUST_DATE))
    assert env.used > size_before
    assert I_CUST not in valid(env)  # the chosen index already serves its prefix
    with pytest.raises(ValueError, match="masked"):
        env.step([c.index for c in CANDIDATES].index(I_SHIP))


def test_masking_respects_the_remaining_budget(problem):
    sizes = {c.index: problem.whatif.size(c.index) for c in CANDIDATES}
    env = IndexEnv(CANDIDATES)
    env.reset(problem.with_weights({q.queryid: 1.0 for q in QUERIES}, budget_bytes=sizes[I_PART]))
    assert all(sizes[i] <= sizes[I_PART] for i in valid(env))
    env.step([c.index for c in CANDIDATES].index(I_PART))
    assert all(env.added_bytes()[env.mask()] <= env.budget - env.used)


def test_reward_is_relative_cost_reduction_per_storage(problem):
    env = IndexEnv(CANDIDATES)
    env.reset(problem.with_weights({"part": 1.0}))
    c0 = env.cost0
    step = env.step([c.index for c in CANDIDATES].index(I_PART))
    share = max(problem.whatif.size(I_PART) / env.budget, 0.01)
    assert step.reward == pytest.approx(((c0 - env.cost) / c0) / share)
    assert step.relative == pytest.approx((c0 - env.cost) / c0)
    assert step.reward > 0 and step.done is True  # nothing else serves the mix


def test_ia2_never_exceeds_the_budget_and_is_reproducible(problem):
    sampler = mix_sampler(problem, [q.queryid for q in QUERIES], (1 << 20, 16 << 20))
    a = TD3Agent(CANDIDATES, IA2Options(episodes=25, warmup_steps=16), "cpu", seed=3)
    a.train(sampler)
    b = TD3Agent(CANDIDATES, IA2Options(episodes=25, warmup_steps=16), "cpu", seed=3)
    b.train(sampler)
    for budget in (1, 300_000, 2 << 20, 64 << 20):
        p = problem.with_weights({q.queryid: 1.0 for q in QUERIES}, budget)
        config = registry.create("indexes", "ia2", p, agent=a).ask(1)[0]
        assert p.size(config) <= budget
        assert a.rollout(p) == b.rollout(p)
    assert registry.create("indexes", "ia2", problem.with_weights({"part": 1.0}, 1), agent=a).ask(1)[0] == ()
    assert a.stats.episodes == 25 and a.stats.updates > 0


def test_a_large_budget_finds_the_big_wins(problem):
    agent = TD3Agent(CANDIDATES, IA2Options(episodes=40, warmup_steps=16), "cpu", seed=0)
    agent.train(mix_sampler(problem, [q.queryid for q in QUERIES], (4 << 20, 64 << 20)))
    p = problem.with_weights({q.queryid: 1.0 for q in QUERIES}, 64 << 20)
    assert p.cost(agent.rollout(p)) < 0.1 * p.cost()


def test_saved_model_gives_the_same_answers(problem, tmp_path):
    agent = TD3Agent(CANDIDATES, IA2Options(episodes=10, warmup_steps=8), "cpu", seed=1)
    agent.train(mix_sampler(problem, ["cust", "part"], (1 << 20, 8 << 20)))
    agent.save(tmp_path / "m.pt")
    again = TD3Agent.load(tmp_path / "m.pt", CANDIDATES, "cpu")
    p = problem.with_weights({"cust": 3.0, "part": 1.0, "ship": 2.0}, 4 << 20)
    assert again.rollout(p) == agent.rollout(p)
    with pytest.raises(ValueError, match="another candidate set"):
        TD3Agent.load(tmp_path / "m.pt", CANDIDATES[:3], "cpu")


def test_ask_refuses_a_plugin_that_breaks_the_budget(problem):
    class Greedy(IndexOptimizer):  # a plugin that ignores the budget
        name = "greedy-test"

        def _select(self):
            return [c.index for c in self.problem.candidates]

    with pytest.raises(BudgetExceeded):
        Greedy(problem.with_weights({q.queryid: 1.0 for q in QUERIES}, 1000)).ask(1)


def test_prepare_trains_once_then_reuses_the_saved_model(problem, tmp_path):
    said: list[str] = []
    first = registry.create("indexes", "ia2", problem, episodes=10, samples=2, shipped=False)
    trained = first.prepare(tmp_path, said.append)
    assert trained["reused"] is False and trained["episodes"] == 10 and list(tmp_path.glob("ia2-*.pt"))
    again = registry.create("indexes", "ia2", problem, episodes=10, samples=2, shipped=False)
    reused = again.prepare(tmp_path, said.append)
    assert reused["reused"] is True and any("using the model" in m for m in said)
    assert again.ask(1) == first.ask(1)
    fresh = registry.create("indexes", "ia2", problem, episodes=10, samples=2, retrain=True).prepare(tmp_path,
                                                                                                     said.append)
    assert fresh["reused"] is False
    # another mix of the same templates has fewer candidates: the model trained for all of them serves it as it
    # is (no training), and answers as the trained agent does
    mix = problem.with_weights({"cust": 2.0, "part": 1.0}, 4 << 20)
    assert set(mix.candidates) < set(problem.candidates)
    sub = registry.create("indexes", "ia2", mix, episodes=10, samples=2, shipped=False)
    assert sub.prepare(tmp_path, said.append)["reused"] is True
    assert list(sub.ask(1)[0]) == fresh_agent_rollout(tmp_path, problem, mix)


def fresh_agent_rollout(model_dir, problem, mix):
    newest = max(model_dir.glob("ia2-*.pt"), key=lambda p: p.stat().st_mtime)
    return TD3Agent.load(newest, problem.candidates, "cpu").rollout(mix, 2)


def test_cuda_asked_for_without_cuda_is_an_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="no CUDA"):
        TD3Agent(CANDIDATES, device="cuda")


def test_training_stops_when_its_planner_call_budget_is_spent(problem, tmp_path):
    said: list[str] = []
    before = problem.whatif.calls
    bounded = registry.create("indexes", "ia2", problem, episodes=200, samples=0, whatif_budget=4,
                                shipped=False)
    stats = bounded.prepare(None, said.append)
    assert stats["stopped_by"] == "what-if budget" and stats["episodes"] < 200
    assert 4 <= stats["whatif_calls"] <= problem.whatif.calls - before
    assert any("what-if budget of 4 planner calls spent" in m for m in said)
    assert stats["held_out"] == {"share": 0.3, "checks": 0, "skipped": "training spent the what-if budget"}
    # with calls to spare, the episodes bound it, and the policy is checked on mixes unlike the workload
    free = registry.create("indexes", "ia2", problem, episodes=5, samples=0, whatif_budget=0, retrain=True)
    stats = free.prepare(None, said.append)
    assert stats["stopped_by"] == "episode limit" and stats["held_out"]["checks"] > 0


def test_beam_decoding_never_makes_ias_set_worse_and_stays_in_budget(problem):
    from optimizers.indexes import beam

    budget = problem.whatif.size(I_CUST) + problem.whatif.size(I_PART)
    p = problem.with_weights({"cust": 5.0, "part": 1.0, "ship": 2.0}, budget)
    agent = TD3Agent(CANDIDATES, IA2Options(episodes=2), "cpu", seed=3)  # untrained: the beam must still be sound
    cost, config = beam.decode(agent, p, width=2, branch=3)
    assert p.size(config) <= budget and cost == pytest.approx(p.cost(config))
    plain = registry.create("indexes", "ia2", p, seed=3, agent=agent, samples=0, beam=0).ask(1)[0]
    decoded = registry.create("indexes", "ia2", p, seed=3, agent=agent, samples=0, beam=2).ask(1)[0]
    assert p.cost(decoded) <= p.cost(plain) + 1e-9  # the cheapest of the rollout and the beam
    assert p.cost(decoded) <= cost + 1e-9
