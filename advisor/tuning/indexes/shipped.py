"""IA2's shipped agent, trained ahead of time (``advisor train --kinds indexes``) on index problems over generated
workloads (``workloads.datasets.synthetic``, the index families) drawn from small TPC-H and synthetic IMDB databases in a
throwaway sandbox server with what-if indexes; and the same problems on seeds never trained on, for
``advisor bench models``.

Every table is analyzed whole (``whole_table_target``), and the data are generated from seeds, so the
statistics, the drawn statements and the what-if costs (the rewards) are the same on every load: on the CPU the
same seed gives the same weights (``optimizers.indexes.ia2_shipped.fingerprint``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from advisor.core.progress import Say, silent
from advisor.tuning.indexes.problem import build_problem
from connectors import factory
from workloads.datasets import synthetic as generated, job, tpch

SCALES = {"tpch": 0.01, "job": 0.004}  # lineitem 60,000 rows, cast_info 20,000
TRAIN_SEEDS = (1, 2, 3)  # the generated workloads' seeds the shipped agent trains on, per schema
HELD_OUT_SEEDS = (1001, 1002)  # never trained on: what ``advisor bench models`` compares on
STATEMENTS = 12  # generated statements per workload
BUDGET_SHARE = 0.25  # the storage budget, a share of the database's size
MIN_ROWS = 500  # tables with fewer rows get no candidate (as ``build_problem``'s 1,000 on real targets)
EPISODES = 300


def workloads(seeds: Sequence[int]) -> list[tuple[str, int]]:
    """(schema, workload seed) of every schema with every seed."""
    return [(schema, s) for schema in SCALES for s in seeds]


@contextmanager
def generated_problems(chosen: Sequence[tuple[str, int]], data_seed: int = 0, say: Say = silent,
                       statements: int = STATEMENTS) -> Iterator[list[tuple[str, object]]]:
    """(name ``gen-<schema>.s<seed>``, its index problem) per workload of ``chosen``, in one throwaway sandbox whose
    what-if sessions stay open while the caller uses them."""
    with factory.sandbox(factory.DEFAULT_ENGINE, "train-ia2") as sandbox, ExitStack() as stack:
        loaded: dict[str, tuple] = {}
        out = []
        for schema, seed in chosen:
            if schema not in loaded:
                dsn = sandbox.create_database(schema)
                rows = _load(schema, factory.connector(dsn), data_seed, say)
                connector = sandbox.connector(schema)
                connector.loader().analyze(statistics_target=job.whole_table_target(rows))
                loaded[schema] = (connector, connector.observe())
            connector, snapshot = loaded[schema]
            drawn = generated.statements(connector, statements, seed, generated.INDEX_FAMILIES, timeout_ms=5_000)
            data_bytes = sum(t.total_bytes for t in snapshot.tables)
            problem, session = build_problem(connector, snapshot, drawn, int(BUDGET_SHARE * data_bytes),
                                             min_rows=MIN_ROWS, by_time=False)
            stack.enter_context(session)
            name = f"gen-{schema}.s{seed}"
            say(f"{name}: {len(problem.queries)} statements, {len(problem.candidates)} candidate indexes")
            out.append((name, problem))
        yield out


# how each schema's data are loaded, at its scale (the IMDB's rows are drawn from the seed)
LOADERS = {"tpch": lambda connector, scale, _seed: tpch.load(connector, scale),
           "job": lambda connector, scale, seed: job.load(connector, scale, seed=seed)}


def _load(schema: str, connector, seed: int, say: Say) -> dict[str, int]:
    say(f"loading {schema} at scale {SCALES[schema]:g}")
    return LOADERS[schema](connector, SCALES[schema], seed)


def train(seed: int, episodes: int | None, out: Path | None, device: str, say: Say) -> dict:
    """Train IA2's shared agent from ``seed`` on the training workloads and write it (``ia2.pt`` and its manifest)
    into the package, or ``out``; what was trained, with a one-line ``summary``."""
    from optimizers.indexes import ia2_shipped

    started = time.monotonic()
    episodes = episodes or EPISODES
    with generated_problems(workloads(TRAIN_SEEDS), seed, say) as problems:
        say(f"IA2: training one agent on {len(problems)} generated workloads, {episodes} episodes on {device}")
        agent, stats = ia2_shipped.train_shared([p for _, p in problems], episodes, seed, device, say)
        manifest = {"seed": seed, "episodes": stats["episodes"], "problems": [n for n, _ in problems],
                    "scales": SCALES, "statements": STATEMENTS, "budget_share": BUDGET_SHARE,
                    "candidates": [len(p.candidates) for _, p in problems], "whatif_calls": stats["whatif_calls"],
                    "per_problem_rc": stats["per_problem_rc"], "device": stats["device"],
                    "seconds": round(time.monotonic() - started, 1)}
    path = ia2_shipped.save(agent, (out or ia2_shipped.DIR) / ia2_shipped.FILE, manifest)
    return {"model": str(path), **manifest, "fingerprint": ia2_shipped.fingerprint(agent.weights()),
            "summary": f"IA2's agent: {path} ({manifest['episodes']} episodes on {len(manifest['problems'])} "
                       f"generated workloads, {manifest['whatif_calls']} what-if calls, seed {seed}, "
                       f"{manifest['seconds']:.0f} s)"}
