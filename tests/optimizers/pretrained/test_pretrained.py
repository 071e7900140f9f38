"""Aurora's rule policy and LITune's models ship trained (optimizers/pretrained/aurora.pt, litune-<index>-<space>.pt,
made by `advisor train`): they load and apply to schemas and key sets they never saw, a run starts from them
instead of training from scratch, and the training is reproducible from its seed."""

import json

import torch

from advisor.tuning.rewrites.shipped import dialects
from optimizers import registry
from optimizers.rewrites.search.pretrain import HELD_OUT, SHIPPED, generated_problem, makers, shipped, train_policy
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
    from tests.advisor.cli.test_cli import advisor

    res = advisor("train", "--kinds", "rewrites", "--episodes", "4", "--seed", "5", "--out", str(tmp_path), "--json",
                  store=tmp_path / "s.duckdb")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)["rewrites"]
    assert doc["episodes"] == 4 and doc["seed"] == 5 and (tmp_path / "aurora.pt").exists()
    again, _ = shipped(device="cpu", path=tmp_path / "aurora.pt")
    direct, _ = train_policy(dialects(), episodes=4, seed=5, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(_weights(again), _weights(direct)))
    bad = advisor("train", "--kinds", "knobs", store=tmp_path / "s.duckdb")
    assert bad.returncode != 0 and "no shipped model for knobs" in bad.stderr and "Traceback" not in bad.stderr


# --- LITune's shipped models -----------------------------------------------------------------------------------

def _litune_problem(name, tasks=None, calls=None):
    from advisor.core.params import ParamSpace
    from advisor.tuning.learned_index.pipeline import problem
    from advisor.tuning.learned_index.training import features
    from connectors import factory
    from workloads.datasets.learned import keysets, mixes

    engine = factory.learned_index(name)
    keys = keysets.synthetic("normal", 5_000, 1001)  # a distribution and seed the shipped models never saw

    def training():
        calls.append(1)
        return tasks or []
    return engine, keys, problem(ParamSpace(engine.parameters()), engine.name,
                                 features(keys, mixes.parse_mix("read-only")), training=training)


def test_litune_ships_a_small_model_per_learned_index_that_says_how_it_was_trained():
    from advisor.core.params import ParamSpace
    from advisor.tuning.learned_index.shipped import LITUNE_SETS
    from connectors import factory
    from optimizers.learned_index import litune_shipped
    from optimizers.learned_index.problem import OBJECTIVE

    for name in factory.learned_indexes():
        space = ParamSpace(factory.learned_index(name).parameters())
        path = litune_shipped.DIR / litune_shipped.file_name(name, space)
        manifest = json.loads(path.with_suffix(".json").read_text())
        assert path.stat().st_size < 500_000, "a shipped model must stay small"
        assert manifest["index"] == name and manifest["seed"] == 0 and manifest["episodes"] > 0
        assert manifest["tasks"] and manifest["key_sets"] == list(LITUNE_SETS) and "normal" not in LITUNE_SETS
        assert manifest["reward"] == OBJECTIVE, "shipped models are rewarded on what the harness decides on"
        assert litune_shipped.shipped(name, space, "cpu") is not None


def test_a_first_litune_run_starts_from_the_shipped_model_and_adapts_it_without_training_from_scratch(tmp_path):
    from advisor.tuning.learned_index.target import HarnessTarget
    from advisor.tuning.learned_index.pipeline import evaluate
    from optimizers.learned_index import litune_shipped
    from workloads.datasets.learned import mixes

    calls, said = [], []
    engine, keys, prob = _litune_problem("pgm", calls=calls)
    opt = registry.create("learned-index", "litune", prob, seed=0, device="cpu")
    training = opt.prepare(tmp_path, said.append)  # an empty model directory: a new target
    assert training["shipped"] and training["loaded"] and not training["trained"] and not calls
    assert any("shipped model" in line for line in said)
    agent, _ = litune_shipped.shipped("pgm", prob.space, "cpu")
    before = [t.clone() for t in opt.agent.nets.state_dict().values()]
    assert all(torch.equal(a, b) for a, b in zip(before, agent.nets.state_dict().values()))
    initial, stream = mixes.workload(keys, mixes.parse_mix("read-only"), 5_000, 1001)
    target = HarnessTarget(engine, initial, [stream])
    for _ in range(4):  # it adapts as it is told this target's trials
        config = opt.ask(1)[0]
        opt.tell(config, evaluate(target, prob.config(config)))
    assert not all(torch.equal(a, b) for a, b in zip(before, opt.agent.nets.state_dict().values()))
    assert not calls  # never meta-trained


def test_litune_retrain_meta_trains_from_scratch_instead_of_the_shipped_model(tmp_path):
    from advisor.tuning.learned_index.shipped import litune_tasks
    from connectors import factory

    calls = []
    tasks = litune_tasks(factory.learned_index("pgm"), 0, sets=("uniform",), n_keys=5_000)
    _, _, prob = _litune_problem("pgm", tasks=tasks, calls=calls)
    trained = registry.create("learned-index", "litune", prob, seed=0, device="cpu", episodes=2, steps=2,
                              retrain=True).prepare(tmp_path, lambda _m: None)
    assert trained["trained"] and not trained["shipped"] and trained["meta"]["episodes"] == 2 and calls
    again = registry.create("learned-index", "litune", prob, seed=0, device="cpu").prepare(tmp_path, lambda _m: None)
    assert again["loaded"] and not again["shipped"] and len(calls) == 1  # this target's own model, now stored


def test_litune_refuses_a_model_rewarded_on_another_unit_and_says_so(tmp_path):
    from optimizers.learned_index import litune_shipped
    from optimizers.learned_index.problem import EARLIER

    calls, said = [], []
    _, _, prob = _litune_problem("pgm", calls=calls)
    agent, stats, prior = litune_shipped.meta_trained(prob.space, [], 0, 1, 7, "cpu")
    stored = litune_shipped.file_name("pgm", prob.space)  # this target's model, its manifest without a reward:
    litune_shipped.save(agent, stats, prior, tmp_path / stored, {"index": "pgm", "seed": 7}, compact=True)  # wall
    training = registry.create("learned-index", "litune", prob, seed=0, device="cpu").prepare(tmp_path, said.append)
    assert training["refused"] == [str(tmp_path / stored)] and training["shipped"] and not calls
    assert any("not using the model" in line and EARLIER in line for line in said)
    assert training["reward"] != EARLIER


def test_litune_meta_training_is_reproducible_from_its_seed_and_a_compact_file_reloads_it(tmp_path):
    from tests.optimizers.learned_index.test_litune import SPACE, training_tasks
    from optimizers.learned_index import litune_shipped

    def weights(seed):
        agent, stats, prior = litune_shipped.meta_trained(SPACE, training_tasks(), 4, 3, seed, "cpu")
        return agent, stats, prior

    one, stats, prior = weights(3)
    two, _, _ = weights(3)
    other, _, _ = weights(4)
    values = lambda a: list(a.nets.state_dict().values())  # noqa: E731
    assert all(torch.equal(a, b) for a, b in zip(values(one), values(two)))
    assert not all(torch.equal(a, b) for a, b in zip(values(one), values(other)))
    path = litune_shipped.save(one, stats, prior, tmp_path / "m.pt", {"seed": 3}, compact=True)
    back, blob = litune_shipped.load(path, "cpu")
    assert all(torch.equal(a, b) for a, b in zip(values(one), values(back)))
    assert all(torch.equal(a, b) for a, b in zip(values(back), back.targets.state_dict().values()))
    assert blob["manifest"] == {"seed": 3} and json.loads(path.with_suffix(".json").read_text())["seed"] == 3


def test_advisor_train_writes_litune_models_and_manifests(tmp_path):
    from tests.advisor.cli.test_cli import advisor

    res = advisor("train", "--kinds", "learned-index", "--episodes", "2", "--seed", "5", "--out", str(tmp_path),
                  "--json", store=tmp_path / "s.duckdb")
    assert res.returncode == 0, res.stderr
    models = json.loads(res.stdout)["learned-index"]["models"]
    for name, doc in models.items():
        manifest = json.loads((tmp_path / doc["model"].rsplit("/", 1)[1]).with_suffix(".json").read_text())
        assert manifest["index"] == name and manifest["seed"] == 5 and manifest["episodes"] == 2


def test_the_models_bench_compares_litune_shipped_adapted_and_from_scratch_on_held_out_key_sets():
    from advisor.bench.models import litune
    from connectors import factory

    rows = litune.run(budget=4, episodes=2, seed=0)
    assert [(r["index"], r["keys"]) for r in rows] == [(i, f"{k}/{s}") for i in factory.learned_indexes()
                                                       for k, s in litune.HELD_OUT]
    assert all(r["shipped_ratio"] is not None and r["adapted_ratio"] is not None for r in rows)
    assert "scratch" in litune.table(rows) and len(litune.table(rows).splitlines()) == len(rows) + 4
