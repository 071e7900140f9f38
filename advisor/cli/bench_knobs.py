"""``advisor bench knobs``: every knob optimizer at the same budget on real servers of one or both engines, over
the built-in suites and generated workloads (several schemas, seeds); registered on ``advisor bench`` by
``advisor.cli.bench_commands``."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.cli.common import JsonFlag, emit
from advisor.cli.common import names as _names
from advisor.core.errors import AdvisorError
from advisor.core.progress import reporter


def bench_knobs(workloads: Annotated[str, typer.Option(help="comma-separated: joins, lookups, planner, tpch, "
                                                           "memory, pgbench, gen (generated over --schemas and "
                                                           "--seeds: gen-<schema>.s<seed> and multi-<schema>.s<seed>, "
                                                           "also named one by one)")] =
                "joins,lookups,planner,tpch,memory,pgbench",
                trials: Annotated[int | None, typer.Option(help="trials per optimizer run (default: per workload, "
                                                               "30 for joins/lookups/planner, 10 generated)",
                                                          min=3)] = None,
                repeats: Annotated[int, typer.Option(help="executions of each statement per trial", min=1)] = 2,
                surrogate_seeds: Annotated[int, typer.Option(help="seeds per optimizer on the surrogate; 0 = skip",
                                                             min=0)] = 3,
                mode: Annotated[str, typer.Option(help="real: every optimizer on the server, then the surrogate; "
                                                       "surrogate: a measured design and the surrogate only")] = "real",
                design: Annotated[int, typer.Option(help="surrogate mode: Sobol points measured per workload",
                                                    min=8)] = 48,
                design_from: Annotated[str | None, typer.Option(help="surrogate mode: reuse the designs of this "
                                                                     "knobs.json (no data loaded)")] = None,
                schemas: Annotated[str, typer.Option(help="gen: comma-separated of tpch, tpcds, job")] =
                "tpch,tpcds,job",
                seeds: Annotated[str, typer.Option(help="gen: comma-separated workload seeds")] = "1",
                kinds: Annotated[str, typer.Option(help="gen: gen (an application's statements), multi (needing "
                                                        "several knobs at once), or both")] = "gen,multi",
                opt_seeds: Annotated[int, typer.Option(help="runs of each optimizer per workload (seeds --seed, "
                                                            "--seed + 1, ...); the summary is their mean",
                                                       min=1)] = 1,
                statements: Annotated[int, typer.Option(help="statements drawn per generated workload",
                                                        min=1)] = 8,
                scale: Annotated[float | None, typer.Option(help="generated workloads' data scale (default per "
                                                                "schema)")] = None,
                validate: Annotated[str, typer.Option(help="recommendations reduced and validated: hibo (HiBO "
                                                           "seeded's), every (every run's), none")] = "hibo",
                cpu_hogs: Annotated[int, typer.Option(help="busy processes beside the whole run", min=0)] = 0,
                time_limit: Annotated[float | None, typer.Option(help="seconds; past them no optimizer run, "
                                                                      "re-measure or validation starts, and the "
                                                                      "table lists what was cut")] = None,
                seed: Annotated[int, typer.Option(help="random seed")] = 0,
                out: Annotated[str, typer.Option(help="directory for knobs.json and the plot")] = "bench-results/knobs",
                engine: Annotated[str, typer.Option(help="postgres, mariadb, or both comma-separated (each in "
                                                         "turn)")] = "postgres",
                json_out: JsonFlag = False) -> None:
    """Every knob optimizer with the same budget on a real server of each --engine (G* workloads, safety workloads and
    generated ones over several schemas), then many seeds on a surrogate fitted to the real trials (or, with --mode
    surrogate, to a measured design)."""
    from advisor.bench.knobs.bench import BenchOptions, KnobBench
    from advisor.bench.knobs.table import table
    from advisor.bench.knobs.workloads import check_engines, expand

    if mode not in ("real", "surrogate"):
        raise typer.BadParameter("--mode is real or surrogate")
    if validate not in ("hibo", "every", "none"):
        raise typer.BadParameter("--validate is hibo, every or none")
    try:
        expanded = expand(_names([workloads]), _names([schemas]), _names([seeds]), _names([kinds]))
    except (AdvisorError, ValueError) as e:
        raise typer.BadParameter(str(e)) from None
    try:  # an engine the advisor does not run is refused in one line, as by every bench (AdvisorError)
        engines = check_engines(_names([engine]))
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    options = BenchOptions(workloads=expanded, trials=trials, repeats=repeats,
                           surrogate_seeds=surrogate_seeds, seed=seed, out_dir=out, mode=mode, design=design,
                           design_from=design_from, engine=",".join(engines), opt_seeds=opt_seeds,
                           statements=statements, scale=scale, validate=validate, cpu_hogs=cpu_hogs,
                           time_limit_s=time_limit)
    doc = KnobBench(options, say=reporter(watch=True)).run()
    if json_out:
        emit(doc)
    else:
        print(table(doc))
        print(f"saved {out}/knobs.json and {out}/knobs-convergence.png")
