"""The e-graph search: the node budget holds (a step past it is undone), costs stay finite on a 6-way join, and
each baseline strategy lowers the extraction cost; greedy gets there with fewer nodes than saturation."""

from optimizers.rewrites.sql.lower import lower
from optimizers.rewrites.search.egraph import Search
from optimizers.rewrites.search.strategies import STRATEGIES, saturate

SCHEMA = {f"t{i}": {f"a{i}": "int", f"b{i}": "int"} for i in range(6)}
SQL = "SELECT 1 FROM " + ", ".join(f"t{i}" for i in range(6)) + " WHERE " + " AND ".join(
    [f"a{i} = b{i + 1}" for i in range(5)] + [f"b{i} > 5" for i in range(0, 6, 2)])
ROWS = {f"t{i}": 10 ** (3 + i % 3) for i in range(6)}


def search(budget: int = 3000) -> Search:
    return Search(lower(SQL, SCHEMA, dialect="postgres"), ROWS, lambda a: 1e-4 if len(a.refs) > 1 else 0.1,
                  node_budget=budget)


def test_a_step_past_the_node_budget_is_undone():
    s = search(budget=60)
    result = saturate(s)
    assert result.nodes <= 60 and any(step.undone for step in s.steps)
    assert result.cost <= result.initial_cost < 2 ** 63


def test_every_strategy_lowers_the_cost_and_greedy_needs_fewer_nodes_than_saturation():
    results = {name: f(search()) for name, f in STRATEGIES.items()}
    assert all(r.cost < r.initial_cost for r in results.values())
    assert results["greedy"].nodes < results["saturate"].nodes
    assert results["greedy"].cost <= results["saturate"].cost * 1.01
    assert results["saturate"].rules and set(results["saturate"].rules) <= {r.name for r in search().rules}


def test_a_rewrite_optimizer_proposes_the_improved_statement_and_explains_the_others():
    from optimizers import registry
    from optimizers.rewrites.search.problem import RewriteProblem

    problem = RewriteProblem((("join", SQL), ("plain", "SELECT a0 FROM t0"), ("cte", "WITH x AS (SELECT 1) "
                                                                                      "SELECT * FROM x")),
                             SCHEMA, ROWS, node_budget=3000, dialect="postgres")
    opt = registry.create("rewrites", "greedy", problem)
    (config,) = opt.ask(1)
    assert [c.queryid for c in config] == ["join"]
    change = config[0]
    assert change.original == SQL and change.rewritten != SQL and 0 < change.estimated < 1 and change.rules
    why = opt.explain()
    assert why["plain"] == "no rule found a cheaper form (estimated)" and "WITH" in why["cte"]
    assert problem.cost(config) == 2 + change.estimated


def test_aurora_stores_its_policy_and_reuses_it(tmp_path):
    from optimizers import registry
    from optimizers.rewrites.search.problem import RewriteProblem

    problem = RewriteProblem((("join", SQL),), SCHEMA, ROWS, node_budget=3000, dialect="postgres")
    first = registry.create("rewrites", "aurora", problem, episodes=16)
    trained = first.prepare(tmp_path, lambda _m: None)
    assert trained["reused"] is False and (tmp_path / "aurora.pt").exists()
    again = registry.create("rewrites", "aurora", problem, episodes=16)
    said: list[str] = []
    assert again.prepare(tmp_path, said.append)["reused"] is True and "stored policy" in said[0]
    assert again.ask(1) == first.ask(1)  # the same policy answers the same
    (tmp_path / "aurora.pt").write_bytes(b"not a model")
    said.clear()
    broken = registry.create("rewrites", "aurora", problem, episodes=16)
    assert broken.prepare(tmp_path, said.append)["reused"] is False and "cannot be used" in said[0]


def test_aurora_asks_every_rule_it_could_and_stops_at_a_fixed_point():
    """Adaptive action masking: a rule that changed nothing is not chosen again until the graph changes, and the
    first step never stops."""
    from optimizers.rewrites.search.aurora import Aurora

    agent = Aurora(seed=0)
    s = search()
    agent._episode(s, greedy=True)
    ran = [step.rule for step in s.steps]
    idle = [i for i, step in enumerate(s.steps) if not step.matches]
    for i in idle:  # an idle rule is not run again before some other rule changed the graph
        later = ran[i + 1:]
        if s.steps[i].rule in later:
            j = i + 1 + later.index(s.steps[i].rule)
            assert any(st.matches and not st.undone for st in s.steps[i + 1:j])
    assert ran  # the first step runs a rule


def test_aurora_can_train_on_statements_generated_from_the_schema_alone():
    """Held out: the policy never sees the problem's statements, only the generated corpus, and still answers."""
    from optimizers import registry
    from optimizers.rewrites.search.problem import RewriteProblem

    schema = {"c": {"c_id": "integer", "c_v": "integer"}, "o": {"o_id": "integer", "o_cid": "integer",
                                                               "o_v": "integer"}}
    problem = RewriteProblem((("q", "SELECT o.o_id FROM o, c WHERE o.o_cid = c.c_id AND c.c_v > 3"),), schema,
                             {"c": 1e4, "o": 1e6}, keys={"c": (("c_id",),), "o": (("o_id",),)}, dialect="postgres")
    assert len(problem.training_statements(12)) == 12
    said: list[str] = []
    opt = registry.create("rewrites", "aurora", problem, episodes=12, corpus=12, own=False, retrain=True)
    opt.prepare(None, said.append)
    assert "0 statement(s) of the workload and 12 generated" in said[0]
    (config,) = opt.ask(1)
    assert all(c.queryid == "q" for c in config)
