"""``advisor bench scale``: a knob search with 1, 2, ... trials side by side on thin clones, measured (wall time,
trials per hour, best gain against wall-clock time), and projected to 16 and 64 workers (``advisor.bench.scale``)."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.cli.common import EngineOpt, JsonFlag, emit
from advisor.core.progress import reporter


def _names(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def bench_scale(workloads: Annotated[str, typer.Option(help="comma-separated: knob suites (planner, joins, memory, "
                                                             "...) or generated gen-/multi-<schema>.s<seed>")]
                = "planner,multi-tpch.s1",
                seeds: Annotated[str, typer.Option(help="comma-separated optimizer seeds")] = "1,2,3",
                trials: Annotated[int, typer.Option(help="trials of each search (equal for every parallelism)",
                                                    min=3, max=1000)] = 12,
                parallel: Annotated[str, typer.Option(help="comma-separated: trials side by side (1 first)")] = "1,2",
                optimizer: Annotated[str, typer.Option(help="the knob search")] = "hibo",
                engine: EngineOpt = "postgres",
                out: Annotated[str, typer.Option(help="directory for scale.json and scale.png")] =
                "bench-results/scale",
                json_out: JsonFlag = False) -> None:
    """Parallel trials on thin clones: wall time, trials per hour and the best gain against wall-clock time for
    each parallelism at equal total trials, and a projection to 16 and 64 workers from the measured costs."""
    from advisor.bench.scale.bench import ScaleOptions, run
    from advisor.bench.scale.report import table

    try:
        seed_list = tuple(int(s) for s in _names(seeds))
        slots = tuple(sorted({int(s) for s in _names(parallel)}))
    except ValueError:
        raise typer.BadParameter("seeds and parallel are comma-separated integers") from None
    if not slots or slots[0] != 1 or slots[-1] > 64:
        raise typer.BadParameter("parallel must include 1 (the serial reference) and stay at most 64",
                                 param_hint="--parallel")
    options = ScaleOptions(engine=engine, workloads=_names(workloads), seeds=seed_list or (1,), trials=trials,
                           parallel=slots, optimizer=optimizer, out_dir=out)
    doc = run(options, say=reporter(watch=True))
    if json_out:
        emit(doc)
    else:
        print(table(doc))
        print(f"saved {out}/scale.json and {out}/scale.png")
