"""Aurora's rule policy ships trained (optimizers/pretrained/aurora.pt, made by `advisor train`): it loads and
applies to schemas it never saw, a run starts from it instead of training from scratch, and the training is
reproducible from its seed."""

import json

import torch

from advisor.tuning.pretrained import dialects
from optimizers import registry
from optimizers.rewrites.pretrain import HELD_OUT, SHIPPED, generated_problem, makers, shipped, train_policy
from optimizers.rewrites.rules import RULES


def _weights(agent) -> list[torch.Tensor]:
    return list(agent.state_dict()["policy"].values())


def test_the_shipped_policy_is_for_the_current_rules_and_says_how_it_was_trained():
    manifest = json.loads(SHIPPED.with_suffix(".json").read_text())
    assert manifest["rules"] == [r.name for r in RULES], "the rules changed: run `advisor train` and commit its files"
    assert manifest["seed"] == 0 and manifest["episodes"] > 0 and not set(manifest["schemas"]) & set(HELD_OUT)
    assert manifest["dialects"] == list(dialects())  # trained in every engine's dialect
    assert SHIPPED.stat().st_size < 500_000


def test_the_shipped_policy_rewrites_statements_of_a_schema_it_never_saw():
    agent, trained = shipped(device="cpu")
    problem = generated_problem(HELD_OUT[0], dialects()[0], statements=6)
    assert problem.lowered and HELD_OUT[0] not in trained["schemas"]
    results = [agent.run(make()) for make in makers(problem, list(problem.lowered.values()), 0)]
    assert all(r.cost <= r.initial_cost for r in results)
    assert any(r.cost < 0.9 * r.initial_cost for r in results)  # it does rewrite, not only stop


def test_a_run_starts_from_the_shipped_policy_instead_of_training_from_scratch():
    problem = generated_problem(HELD_OUT[1], dialects()[-1], statements=4)
    said = []
    opt = registry.create("rewrites", "aurora", problem, seed=0, adapt=0, device="cpu")
    training = opt.prepare(None, said.append)
    assert training["shipped"] and training["episodes"] == 0
    assert all(torch.equal(a, b) for a, b in zip(_weights(opt.agent), _weights(shipped(device="cpu")[0])))
    adapted = registry.create("rewrites", "aurora", problem, seed=0, device="cpu").prepare(None, said.append)
    assert adapted["shipped"] and 0 < adapted["episodes"] <= 8  # adapted briefly, never 300 episodes from scratch
    assert any("shipped policy" in line for line in said)


def test_training_is_reproducible_from_its_seed():
    one, stats = train_policy(dialects(), schemas=(1, 2), episodes=8, seed=3, device="cpu")
    two, _ = train_policy(dialects(), schemas=(1, 2), episodes=8, seed=3, device="cpu")
    other, _ = train_policy(dialects(), schemas=(1, 2), episodes=8, seed=4, device="cpu")
    assert stats["episodes"] == 8 and stats["schemas"] == [1, 2]
    assert all(torch.equal(a, b) for a, b in zip(_weights(one), _weights(two)))
    assert not all(torch.equal(a, b) for a, b in zip(_weights(one), _weights(other)))


def test_advisor_train_writes_the_policy_and_its_manifest_from_a_seed(tmp_path):
    from tests.test_cli import advisor

    res = advisor("train", "--episodes", "4", "--seed", "5", "--out", str(tmp_path), "--json",
                  store=tmp_path / "s.duckdb")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)["rewrites"]
    assert doc["episodes"] == 4 and doc["seed"] == 5 and (tmp_path / "aurora.pt").exists()
    again, _ = shipped(device="cpu", path=tmp_path / "aurora.pt")
    direct, _ = train_policy(dialects(), episodes=4, seed=5, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(_weights(again), _weights(direct)))
    bad = advisor("train", "--kinds", "knobs", store=tmp_path / "s.duckdb")
    assert bad.returncode != 0 and "no shipped model for knobs" in bad.stderr and "Traceback" not in bad.stderr
