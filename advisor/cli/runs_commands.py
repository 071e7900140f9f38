"""``advisor runs``: tuning runs of registered targets (start, show, list). Adapters like ``targets_commands``."""

from __future__ import annotations

import shutil
import textwrap
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from advisor.cli import render
from advisor.cli.common import JsonFlag, Kind, StoreOpt, emit, open_service, parse_plan, plan_options, rec_doc, when
from advisor.core.errors import AdvisorError
from advisor.service.runs import RUN_STATES
from advisor.service.summary import run_outcome


RunState = Enum("RunState", {s: s for s in RUN_STATES}, type=str)  # the states a run row has


# --- runs --------------------------------------------------------------------------------------------------------

runs_app = typer.Typer(no_args_is_help=True, help="Tuning runs of registered targets.")


@runs_app.command("start")
@plan_options
def runs_start(target: Annotated[str, typer.Option("--target", "-t", help="target id or name")],
               kind: Annotated[Kind, typer.Option(help="what to tune")],
               plan_fields: dict, json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Run a tuning run now, in the foreground (progress on stderr), and print it with its recommendation.
    Exits 1 when the run failed (after printing it). The run's options are the plan's (each says which kinds
    take it; a kind's default fills every one left out)."""
    plan = parse_plan({"kind": kind.value, **plan_fields})
    service = open_service(store)
    run = service.start_run(target, plan, wait=True)
    rec_id = (run.get("result") or {}).get("recommendation")
    rec = service.recommendation(rec_id) if rec_id else None
    if json_out:
        emit({"run": run, "recommendation": rec_doc(service, rec)})
    else:
        _print_run(run, service.trials(run["id"]))
        if rec is not None:
            render.recommendation(Console(), rec)
        else:  # nothing recommended: what the run tried, and why each was left out
            render.dropped(Console(), (run.get("result") or {}).get("dropped") or [])
    if run["state"] == "failed":  # the run's row (and document) says why; the exit status says it failed
        raise AdvisorError(f"run {run['id']} failed: {run['error']}")


def _print_run(run: dict, trials: list[dict]) -> None:
    console = Console()
    outcome = run_outcome(run)  # a finished run reads as what it came to (rejected, validated), not "done"
    console.print(f"[bold]run {run['id']}[/]: {run['kind']} / {run['optimizer']}, "
                  + (f"finished: [bold]{outcome}[/], " if outcome != run["state"] else f"state [bold]{outcome}[/], ")
                  + f"started {when(run['created_at'])} by {run['started_by'] or '-'}")
    if run.get("error"):
        console.print(f"error: {run['error']}", markup=False)
    if (run.get("result") or {}).get("message"):
        console.print(f"outcome: {run['result']['message']}", markup=False)
    if trials:
        unit = (run.get("result") or {}).get("objective_unit")  # latency: workload ms (calls x median)
        table = Table("#", "source", "status", f"objective, {unit}" if unit else "objective", "s")
        for t in trials:
            table.add_row(str(t["number"]) if t["number"] is not None else "-", t["source"] or "", t["status"],
                          f"{t['objective']:.4g}" if t["objective"] is not None else "-",
                          f"{t['duration_s']:.1f}" if t["duration_s"] is not None else "-")
        console.print(table)


@runs_app.command("show")
def runs_show(run_id: Annotated[str, typer.Argument(help="run id")], json_out: JsonFlag = False,
              store: StoreOpt = None) -> None:
    """A run: its state, progress (recent lines) and trials."""
    service = open_service(store, quiet=True)
    run, trials = service.run(run_id), service.trials(run_id)
    if json_out:
        emit({"run": run, "trials": trials})
    else:
        _print_run(run, trials)
        render.dropped(Console(), (run.get("result") or {}).get("dropped") or [])
        for line in (run.get("progress") or {}).get("log", [])[-10:]:
            print(f"  {line}")


@runs_app.command("list")
def runs_list(target: Annotated[str | None, typer.Option(help="target id or name")] = None,
              state: Annotated[RunState | None, typer.Option(help="only the runs in this state")] = None,
              limit: Annotated[int, typer.Option(min=1)] = 50, offset: Annotated[int, typer.Option(min=0)] = 0,
              json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Tuning runs, newest first."""
    rows = open_service(store, quiet=True).runs(target, state.value if state else None, limit, offset)
    if json_out:
        emit({"runs": rows})
        return
    if not rows:
        print("no tuning runs" + (" match these filters" if target or state else ""))
    width = shutil.get_terminal_size().columns
    for r in rows:  # a block per run: its id, who started it and its outcome whole at any width, never cut
        message = (r.get("result") or {}).get("message") or r.get("error")
        print(f"run {r['id']}: {r['target_name'] or r['target_id']}, {r['kind']} / {r['optimizer']}, "
              f"{run_outcome(r)}\n  started {when(r['created_at'])} by {r['started_by'] or '-'}")
        if message:
            print(textwrap.fill(message, width, initial_indent="  ", subsequent_indent="  ",
                                break_long_words=False, break_on_hyphens=False))


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")
