"""Aurora's rule policy trained ahead of time, on generated schemas, and shipped with the package
(``optimizers/pretrained/aurora.pt``), so that a first rewrite question never waits for a training from scratch.

The policy's state is schema-free (the e-graph's size, steps, costs, per rule its matches and runs, the statement's
shape: ``optimizers.rewrites.search.aurora.features``), so a policy trained on other schemas applies to any; it only has
to be trained for the same rule list (a shipped file for another list is refused and training starts over).

``generated_problem(seed, dialect)``: a random schema of 3 to 6 linked tables (keys, foreign keys, NOT NULL
columns, rows from 10^3 to 10^7), a rewrite problem over it in the SQL dialect of one engine; ``train_policy(schemas,
dialects, episodes, seed)``: PPO over statements generated from those schemas in each dialect in turn (the engines'
dialects arrive from the caller, as everywhere above ``connectors``) (``RewriteProblem.training_statements``), each
episode under row estimates scaled at random per table, deterministic from ``seed`` on the CPU; ``advisor train``
writes its result with ``save``, ``shipped()`` reads it back.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from advisor.core.progress import Say, silent
from optimizers.rewrites.search.problem import RewriteProblem

SHIPPED = Path(__file__).resolve().parents[2] / "pretrained" / "aurora.pt"
TRAINING_SCHEMAS = tuple(range(1, 9))  # the generated schemas the shipped policy was trained on
HELD_OUT = tuple(range(1001, 1005))  # never trained on: what the shipped policy is compared on
TYPES = ("int", "int", "numeric", "text", "date", "bigint")


def generated_problem(seed: int, dialect: str, statements: int = 0) -> RewriteProblem:
    """A rewrite problem in ``dialect`` over a random schema (``seed``) with ``statements`` of its generated
    statements as the workload."""
    rng = random.Random(seed)
    n = rng.randint(3, 6)
    schema: dict[str, dict[str, str]] = {}
    keys: dict[str, tuple[tuple[str, ...], ...]] = {}
    fks = []
    not_null = set()
    rows = {}
    for i in range(n):
        table = f"g{seed}_t{i}"
        cols = {"id": "int"}
        not_null.add((table, "id"))
        if i:
            parent = f"g{seed}_t{rng.randrange(i)}"
            cols["ref_id"] = "int"
            fks.append((table, ("ref_id",), parent, ("id",)))
            if rng.random() < 0.7:
                not_null.add((table, "ref_id"))
        for j in range(rng.randint(2, 4)):
            cols[f"c{j}"] = rng.choice(TYPES)
            if rng.random() < 0.3:
                not_null.add((table, f"c{j}"))
        schema[table] = cols
        keys[table] = (("id",),)
        rows[table] = float(10 ** rng.uniform(3, 7))
    problem = RewriteProblem((), schema, rows, frozenset(not_null), keys=keys, foreign_keys=tuple(fks),
                             dialect=dialect)
    if statements:
        from optimizers.rewrites.search.corpus import generate

        sqls = generate(schema, keys, tuple(fks), frozenset(not_null), n=statements, seed=seed)
        problem = RewriteProblem(tuple((f"q{k}", s) for k, s in enumerate(sqls)), schema, rows,
                                 frozenset(not_null), keys=keys, foreign_keys=tuple(fks), dialect=dialect)
    return problem


def makers(problem: RewriteProblem, lowered: Sequence, seed: int) -> list:
    """One search maker per lowered statement, each search under row estimates scaled at random per table (the
    policy learns shapes, not one set of statistics)."""
    rng = np.random.default_rng(seed)

    def maker(low):
        def make():
            rows = {t: n * float(10 ** rng.uniform(-1, 1)) for t, n in problem.rows.items()}
            return problem.search_of(low, rows)
        return make

    return [maker(low) for low in lowered]


def train_policy(dialects: Sequence[str], schemas: Sequence[int] = TRAINING_SCHEMAS, episodes: int = 240,
                 seed: int = 0, device: str = "cpu", corpus: int = 12, say: Say = silent):
    """(an Aurora agent, its training statistics): PPO over statements generated from ``schemas``, each schema in
    one of ``dialects`` in turn."""
    import torch

    from optimizers.rewrites.search.aurora import Aurora

    torch.manual_seed(seed)
    work = []
    for k, s in enumerate(schemas):
        problem = generated_problem(s, dialects[k % len(dialects)])
        work += makers(problem, problem.training_statements(corpus, seed=s), seed + s)
    random.Random(seed).shuffle(work)
    say(f"Aurora: training on {len(work)} statements generated from {len(schemas)} schemas, {episodes} episodes")
    agent = Aurora(seed=seed, device=device)
    stats = agent.train(work, episodes, say)
    return agent, {**stats, "seed": seed, "schemas": list(schemas), "dialects": list(dialects),
                   "statements": len(work)}


def save(agent, stats: dict, path: Path = SHIPPED) -> Path:
    """The policy (``aurora.pt``) and a manifest beside it (``aurora.json``: seed, schemas, episodes, rules)."""
    from optimizers.rl import persistence

    state = agent.state_dict()
    return persistence.save({"state": state, "training": stats}, path, {**stats, "rules": state["rules"]})


def shipped(seed: int = 0, device: str = "auto", path: Path = SHIPPED):
    """(the shipped policy as an Aurora agent, its training statistics), or None when there is none or it was
    trained for another rule list."""
    from optimizers.rewrites.search.aurora import Aurora
    from optimizers.rl import persistence

    blob = persistence.stored(path)
    if blob is None:
        return None
    try:
        agent = Aurora(seed=seed, device=device)
        agent.load_state_dict(blob["state"])
    except persistence.UNREADABLE:
        return None
    return agent, dict(blob.get("training", {}))
