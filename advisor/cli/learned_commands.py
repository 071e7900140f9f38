"""``advisor tune learned-index``: a learned index's parameters tuned on a benchmark harness (keys from a
source, an operation mix), validated against the defaults and handed over (``AdvisorService.tune`` with the
``learned-index`` kind). A thin adapter: parse flags, call the service, print a table or one JSON document
(``--json``: index, parameters, default and tuned {throughput_ops, cpu_ns_per_op, p99_ns, memory_bytes},
evaluations, unsafe_evaluations, the recommendation's id and state, ``measured``: how the validation went, and
``finalists`` / ``picked``: the search's best few re-measured beside the defaults, and why the pick).
The validation decides on thread CPU time per operation; wall-time throughput is shown beside it."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from advisor.core.errors import AdvisorError
from advisor.cli.common import TARGET_ENV, DSN_FORMS, JsonFlag, RegisterOpt, StoreOpt, emit, names, open_service, \
    optimizer_choice, parse_plan, resolve_dsn

KIND = "learned-index"
LearnedIndexOptimizer = optimizer_choice(KIND)  # the registry's
Target = Annotated[str | None, typer.Option("--target", "-t", help=f"the database, for keys from its column: a "
                                                                  f"registered target's name, or {DSN_FORMS} "
                                                                  f"(default: {TARGET_ENV}); keys from a synthetic "
                                                                  "set or a file need none: the run is stored under "
                                                                  "a target of its own, 'keys SOURCE'")]
OPTIMIZER_HELP = ("the search. hibo is the default: in the benches that ran all six searches "
                  "(docs/bench/learned-index-2026-11-27*.txt) LITune was not ahead: geometric-mean gain over the "
                  "defaults 1.29x HiBO vs 1.30x LITune on a quiet machine (30 cells; picks below the defaults 2 vs "
                  "5) and 1.30x vs 1.11x on a shared one (15 cells), and HiBO needs no model trained or shipped")


def tune_learned_index(
        keys: Annotated[str | None, typer.Option("--keys", help="the keys: synthetic:NAME[:N] (books, fb, osm, "
                                                                "uniform, normal), [schema.]table.column of the "
                                                                "target, or a file (one uint64 per line, or SOSD "
                                                                "binary); needed unless --resume")] = None,
        workload: Annotated[str | None, typer.Option("--workload", help="the operation mix: read-only, read-heavy, "
                                                                        "balanced, write-heavy or "
                                                                        "lookup=0.7,insert=0.2,range=0.1; needed "
                                                                        "unless --resume")] = None,
        target: Target = None,
        budget: Annotated[int, typer.Option(help="evaluations of the search (the defaults' included)", min=2)] = 20,
        index: Annotated[str, typer.Option(help="the learned index: alex (updatable) or pgm (read-only)")] = "alex",
        optimizer: Annotated[LearnedIndexOptimizer, typer.Option(help=OPTIMIZER_HELP)] = "hibo",
        range_: Annotated[list[str], typer.Option("--range", help="narrow a parameter's range: NAME=LOW:HIGH "
                                                                   "(repeat or comma-separate)")] = [],  # noqa: B006
        rounds: Annotated[int, typer.Option(help="interleaved rounds of the validation against the defaults",
                                            min=1)] = 5,
        validate: Annotated[bool, typer.Option(help="validate the best against the defaults")] = True,
        seed: Annotated[int, typer.Option(help="random seed (keys, workload and search)")] = 0,
        retrain: Annotated[bool, typer.Option(help="LITune: meta-train its model from scratch instead of starting "
                                                   "from the stored or shipped one")] = False,
        resume: Annotated[str | None, typer.Option(help="continue an interrupted run by its id, with the options "
                                                        "it was started with")] = None,
        json_out: JsonFlag = False, register: RegisterOpt = None, store: StoreOpt = None) -> None:
    """Tune a learned index's parameters for keys and an operation mix: a search over a benchmark harness with a
    safety cut (a configuration using over twice the defaults' CPU time per operation is stopped), the best
    validated against the defaults in interleaved rounds; every trial is judged on thread CPU time per operation,
    wall-time throughput shown beside it. The parameters are handed over; nothing is applied to the database.
    Keys from a synthetic set or a file need no --target."""
    service = open_service(store)
    if resume:
        plan = service.resumed_plan(resume, KIND)
    elif keys is None or workload is None:
        raise AdvisorError("--keys and --workload are needed (unless --resume continues a stored run)")
    else:
        plan = parse_plan({"kind": KIND, "optimizer": optimizer.value, "keys": keys, "workload": workload,
                           "budget": budget, "index": index, "range": names(range_), "rounds": rounds,
                           "validate": validate, "seed": seed, "retrain": retrain})
    # keys from a synthetic set or a file need no database: without a target the service stores the run under a
    # target of its own (the kind says so); keys from a column are refused there without one
    target = resolve_dsn(target) if (target or os.environ.get(TARGET_ENV, "").strip()) else None
    result = service.tune(KIND, target, plan, register=register, by_hand=False, resume=resume)
    if json_out:
        emit(result.document())
        return
    show(Console(), result.document())


def show(console: Console, doc: dict) -> None:
    if doc.get("trials"):
        trials = Table("#", "source", "status", "CPU ns/op (decides)", "ops/s (wall time)")
        for t in doc["trials"]:
            cpu, ops = t["cpu_ns_per_op"], t["throughput_ops"]
            trials.add_row(str(t["number"] + 1), escape(t["source"]), escape(t["status"]),
                           f"{cpu:,.0f}" if cpu is not None else "-", f"{ops:,.0f}" if ops else "-")
        console.print(trials)
    table = Table("", "defaults", "tuned")
    for key, label in (("cpu_ns_per_op", "CPU time per operation, ns (decides)"),
                       ("throughput_ops", "throughput, ops/s (wall time)"), ("p99_ns", "p99 latency, ns"),
                       ("memory_bytes", "memory, bytes")):
        table.add_row(label, *(f"{doc[arm][key]:,.0f}" if key in doc[arm] else "-" for arm in ("default", "tuned")))
    console.print(table)
    console.print(f"{doc['index']}: " + ", ".join(f"{escape(k)}={escape(v)}" for k, v in doc["parameters"].items()))
    console.print(f"{doc['evaluations']} evaluations, {doc['unsafe_evaluations']} unsafe")
    console.print(doc["message"], markup=False)
    if doc.get("finalists"):
        arms = ", ".join(f"{'defaults' if f['trial'] == 0 else 'evaluation ' + str(f['trial'] + 1)} "
                         f"{f['cpu_ns_per_op']:,.0f}" for f in doc["finalists"])
        console.print(f"finalists over {doc['finalists'][0]['rounds']} rounds (median CPU ns/op): {arms}; picked "
                      f"{doc['picked']}", markup=False)
    if doc.get("measured"):
        console.print(f"measured: {doc['measured']}", markup=False)
    if doc["recommendation"]:
        console.print(f"recommendation {doc['recommendation']} ({doc['state']})", markup=False)


def register(app: typer.Typer) -> None:
    app.command("learned-index")(tune_learned_index)
