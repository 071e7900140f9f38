"""IA2's shipped agent (``optimizers.indexes.ia2_shipped``): the file in the package binds to a schema it never saw
and answers there, a first IA2 run starts from it and only adapts (no training from scratch), and ``advisor train
--kinds indexes`` writes the same weights from the same seed."""

import json

import psycopg
import pytest
from advisor.core.domain import IndexChange
from connectors.postgres.whatif import HypoPG
from optimizers import registry
from optimizers.indexes import ia2, ia2_shipped
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import Candidate, ColumnUse, IndexProblem, Query

E = ("public", "events")
BY_USER = IndexChange("public", "events", ("user_id",))
BY_USER_DAY = IndexChange("public", "events", ("user_id", "day"))
BY_KIND = IndexChange("public", "events", ("kind",))
BY_DAY = IndexChange("public", "events", ("day",))
QUERIES = (Query("user", "SELECT * FROM events WHERE user_id = 42", 5.0, frozenset({E})),
           Query("user_day", "SELECT count(*) FROM events WHERE user_id = 7 AND day > 300", 2.0, frozenset({E})),
           Query("day", "SELECT max(amount) FROM events WHERE day = 17", 1.0, frozenset({E})))
CANDIDATES = (Candidate(BY_USER, frozenset({"user", "user_day"})), Candidate(BY_USER_DAY, frozenset({"user_day"})),
              Candidate(BY_KIND, frozenset({"user"})), Candidate(BY_DAY, frozenset({"user_day", "day"})))
USES = (("user", ColumnUse(E, "user_id", "equality")), ("user_day", ColumnUse(E, "user_id", "equality")),
        ("user_day", ColumnUse(E, "day", "range")), ("day", ColumnUse(E, "day", "equality")))


@pytest.fixture(scope="module")
def events_dsn(pg):
    """A schema no shipped model was trained on (the generated TPC-H and IMDB workloads): 50,000 events."""
    dsn = pg.create_database("events_shipped")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (id int PRIMARY KEY, user_id int, kind text, day int, amount numeric)")
        conn.execute("INSERT INTO events SELECT g, g % 5000, 'k' || (g % 7), g % 365, g % 1000 "
                     "FROM generate_series(1, 50000) g")
        conn.execute("ANALYZE events")
    return dsn


@pytest.fixture
def problem(events_dsn):
    with psycopg.connect(events_dsn, autocommit=True) as conn, HypoPG(conn) as session:
        yield IndexProblem(QUERIES, CANDIDATES, 8 << 20, CachedWhatIf(session), USES)


def test_the_shipped_agent_says_how_it_was_trained_and_binds_to_a_schema_it_never_saw(problem):
    blob = ia2_shipped.load()
    assert blob is not None, "no shipped IA2 model: run `advisor train --kinds indexes`"
    manifest = json.loads((ia2_shipped.DIR / "ia2.json").read_text())
    assert manifest["fingerprint"] == ia2_shipped.fingerprint(blob) == blob["manifest"]["fingerprint"]
    assert manifest["problems"] and all(p.startswith("gen-") for p in manifest["problems"])
    assert manifest["episodes"] >= 100 and manifest["whatif_calls"] > 0
    assert (ia2_shipped.DIR / "ia2.pt").stat().st_size < 200_000
    agent, _ = ia2_shipped.shipped(problem.candidates, "cpu")
    assert agent.candidates == problem.candidates and agent.stats.episodes == 0  # bound, not trained here
    config = agent.rollout(problem)
    assert config and problem.size(config) <= problem.budget_bytes
    assert problem.cost(config) < 0.5 * problem.cost()  # the lookups by user_id are a certain, large win


def test_a_first_ia2_run_starts_from_the_shipped_agent_and_only_adapts(problem, tmp_path):
    said: list[str] = []
    first = registry.create("indexes", "ia2", problem, samples=2, adapt_episodes=6)
    stats = first.prepare(tmp_path, said.append)
    assert stats["started_from"] == "shipped" and stats["shipped"]["fingerprint"] == ia2_shipped.load()["manifest"][
        "fingerprint"]
    assert stats["episodes"] == 6 and stats["reused"] is False
    assert any("starting from the shipped model" in m and "adapting for 6 episodes" in m for m in said)
    assert not any(m.startswith("IA2: training on") for m in said)
    # adapting never leaves a policy whose greedy set for the target costs more than the shipped one's
    assert stats["kept"] in ("adapted", "shipped")
    greedy = problem.cost(first.agent.rollout(problem)) / problem.cost()
    assert greedy == pytest.approx(min(stats["greedy_rc"].values()), abs=1e-4)
    config = first.ask(1)[0]
    assert problem.size(config) <= problem.budget_bytes and problem.cost(config) < problem.cost()
    # the adapted agent is the target's model from now on: the next run reuses it as it is
    assert registry.create("indexes", "ia2", problem, samples=2).prepare(tmp_path, said.append)["reused"] is True
    # retrain trains from scratch, for its episodes
    scratch = registry.create("indexes", "ia2", problem, samples=2, episodes=60, retrain=True)
    fresh = scratch.prepare(None, said.append)
    assert "started_from" not in fresh and fresh["episodes"] == 60
    # a question asked without prepare() also starts from the shipped agent
    asked = registry.create("indexes", "ia2", problem, samples=0, adapt_episodes=3)
    asked.ask(1)
    assert asked.agent.stats.episodes == 3
    assert ia2.ADAPT_EPISODES * 4 <= registry.create("indexes", "ia2", problem).episodes  # a small share


@pytest.mark.slow  # two whole `advisor train` runs (about 70 s on 2 loaded cores): in `make test-slow`; IA2's
# determinism under a seed is in the default run (test_conformance: the same seed and tells give the same asks)
def test_advisor_train_writes_the_same_ia2_weights_from_the_same_seed(tmp_path):
    from tests.advisor.cli.test_cli import advisor

    prints = []
    for name in ("a", "b"):
        res = advisor("train", "--kinds", "indexes", "--out", str(tmp_path / name), "--episodes", "8", "--seed", "3",
                      "--json", store=tmp_path / "s.duckdb")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["indexes"]["fingerprint"]
        prints.append(json.loads((tmp_path / name / "ia2.json").read_text()))
    assert prints[0]["fingerprint"] == prints[1]["fingerprint"] and prints[0]["seed"] == 3
    assert prints[0]["episodes"] == 8 and len(prints[0]["problems"]) == 6
    assert (tmp_path / "a" / "ia2.pt").read_bytes() == (tmp_path / "b" / "ia2.pt").read_bytes()


@pytest.mark.slow  # a bench run (about 20 s on 2 loaded cores: IA2 trained from scratch per held-out workload): in
# `make test-slow`, as the other benches; the shipped agent's loading and adapting have their tests above
def test_the_models_bench_compares_ia2_shipped_adapted_and_from_scratch_on_held_out_workloads():
    from advisor.bench.models import ia2
    from advisor.tuning.indexes import shipped

    rows = ia2.run(adapt_episodes=3, scratch_episodes=5, seeds=(1001,))
    assert [r["workload"] for r in rows] == [f"gen-{s}.s1001" for s in shipped.SCALES]
    assert not {r["workload"] for r in rows} & set(json.loads((ia2_shipped.DIR / "ia2.json").read_text())["problems"])
    for r in rows:
        assert all(r[f"{v}_vs_extend"] is not None and r[f"{v}_vs_extend"] > 0 for v in ia2.VARIANTS)
        assert (r["shipped_episodes"], r["adapted_episodes"], r["scratch_episodes"]) == (0, 3, 5)
    table = ia2.table(rows)
    assert "scratch" in table and len(table.splitlines()) == len(rows) + 4
