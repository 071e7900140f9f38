"""CLI groups over the service's records: targets, runs, recommendations (and ``register``, which adds every
service group to the app, these and ``server_commands``').

Thin adapters like the rest of the CLI: parse flags, call one ``AdvisorService`` method, render (rich) or print
one JSON document (``--json``). The CLI acts as the local admin; while another process (``advisor serve``, another
command) holds a DuckDB store, every command uses it through that process (``advisor.storage.remote``).
"""

from __future__ import annotations

import shutil
import textwrap
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from advisor.cli import render, server_commands
from advisor.cli.pasting import id_table
from advisor.cli.common import (DSN_FORMS, TARGET_ENV, JsonFlag, Kind, StoreOpt, emit, observation_doc, open_service,
                                parse_plan, plan_options, rec_doc, resolve_dsn, when)
from advisor.core.domain import state_word
from advisor.core.errors import AdvisorError
from advisor.service.runs import RUN_STATES
from advisor.service.summary import run_outcome


# --- targets -----------------------------------------------------------------------------------------------------

targets_app = typer.Typer(no_args_is_help=True, help="Databases db-advisor tunes (credentials stored encrypted).")


@targets_app.command("add")
def targets_add(name: Annotated[str, typer.Option(help="a name for the target")],
                dsn: Annotated[str | None, typer.Option(help=f"the database: {DSN_FORMS} (default: {TARGET_ENV}, "
                                                             "else asked for without echo, or read from a pipe)")]
                = None,
                memory_gb: Annotated[float | None, typer.Option(
                    help="the server's RAM, for knob sizes (default: read from the server when it lets the "
                         "advisor read /proc/meminfo)", min=0.1, max=1_000_000)] = None,
                cpus: Annotated[int | None, typer.Option(help="the server's cores (default: as for --memory-gb)",
                                                         min=1, max=100_000)] = None,
                replica: Annotated[bool, typer.Option(
                    "--replica", help="also build a warm replica, kept in sync, from which every run takes thin "
                                      "clones in seconds (what it needs: advisor targets check NAME)")] = False,
                json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Register a database: checks it can be observed, stores its DSN encrypted, takes a first snapshot."""
    from advisor.core.hardware import given

    dsn = resolve_dsn(dsn, "--dsn", ask=True)
    target = open_service(store).add_target(name, dsn, hardware=given(memory_gb, cpus) or None,
                                            replica=replica)  # progress: stderr
    if json_out:
        emit(target)
    else:
        print(f"registered {target['name']} ({target['id']}): {target['dsn']}")
        if target.get("replica"):
            print(f"replica: {_replica_cell(target['replica'])}")


@targets_app.command("replica")
def targets_replica(ref: Annotated[str, typer.Argument(help="target id or name")], json_out: JsonFlag = False,
                    store: StoreOpt = None) -> None:
    """Build the target's warm replica (or start it, when it has one): every run then takes its shadows as thin
    clones of it, in seconds whatever the database's size."""
    status = open_service(store).build_replica(ref)  # progress on stderr
    emit({"replica": status}) if json_out else print(f"replica of {ref}: {_replica_cell(status)}" + (
        f"\nseeded by {status['seed']}: {status['seed_reason']}" if status.get("seed") else ""))


@targets_app.command("check")
def targets_check(ref: Annotated[str, typer.Argument(help="target id or name")], json_out: JsonFlag = False,
                  store: StoreOpt = None) -> None:
    """What a replica needs from the target and it lacks, one line each with the line that fixes it ("ready" when
    nothing is missing; exit code 1 otherwise), then notes: what the replica would be built without (a faster
    seed), no blocker. Only reads the target: the advisor never changes its configuration."""
    checked = open_service(store, quiet=True).replica_readiness(ref)
    if json_out:
        emit(checked)
    else:
        for gap in checked["missing"]:
            print(f"missing: {gap['what']}; fix: {gap['fix']}")
        for note in checked["notes"]:
            print(f"note: {note}")
        if checked["ready"]:
            print("ready: a replica can be built (advisor targets replica NAME)")
    if not checked["ready"]:
        raise typer.Exit(1)


def _replica_cell(replica: dict | None) -> str:
    """A target's replica in one cell: its lag when ready, else its state (and a build's last line)."""
    if replica is None:
        return "-"
    if replica["state"] == "ready":
        return (replica["lag"] or "ready") + (f"; seeded by {replica['seed']}" if replica.get("seed") else "")
    return replica["state"] + (f" ({replica['progress']})" if replica["state"] == "building" and
                               replica.get("progress") else "")


@targets_app.command("update")
def targets_update(ref: Annotated[str, typer.Argument(help="target id or name")],
                   dsn: Annotated[str | None, typer.Option(help=f"the new DSN: {DSN_FORMS} (default: {TARGET_ENV}, "
                                                                "else asked for without echo, or read from a pipe)")]
                   = None,
                   other_database: Annotated[bool, typer.Option(
                       "--other-database", help="allow the new DSN to reach another database than the one the "
                                                "target was registered for")] = False,
                   json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Change a registered target's DSN (a new password, host or port), audited. It must reach the same database
    unless --other-database; recommendations keep the database they were validated for."""
    dsn = resolve_dsn(dsn, "--dsn", ask=True)
    target = open_service(store, quiet=True).update_target(ref, dsn, other_database=other_database)
    emit(target) if json_out else print(f"updated {target['name']} ({target['id']}): {target['dsn']}")


@targets_app.command("list")
def targets_list(json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Known targets (registered ones have stored credentials); DSNs are shown without passwords."""
    rows = open_service(store, quiet=True).targets()
    if json_out:
        emit({"targets": rows})
        return
    table = id_table("id", "name", "engine", "dsn (no password)", "registered", "last observed", "replica (lag)")
    for t in rows:
        table.add_row(t["id"], t["name"], t["engine"], t["dsn"] or "(no database)", "yes" if t["registered"] else "no",
                      when(t["last_observed_at"]), _replica_cell(t.get("replica")))
    Console().print(table)


@targets_app.command("remove")
def targets_remove(ref: Annotated[str, typer.Argument(help="target id or name")], json_out: JsonFlag = False,
                   store: StoreOpt = None) -> None:
    """Forget a target, its credentials and schedules (its snapshots, runs and recommendations stay)."""
    open_service(store, quiet=True).remove_target(ref)
    emit({"removed": ref}) if json_out else print(f"removed {ref}")


@targets_app.command("observe")
def targets_observe(ref: Annotated[str, typer.Argument(help="target id or name")], json_out: JsonFlag = False,
                    store: StoreOpt = None) -> None:
    """Take a snapshot of a registered target now."""
    obs = open_service(store).observe_target(ref)  # progress on stderr, also with --json
    if json_out:
        emit(observation_doc(obs))
    else:
        render.observation(Console(), obs)


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


# --- recommendations ---------------------------------------------------------------------------------------------

recs_app = typer.Typer(no_args_is_help=True, help="Recommendations: list, inspect, approve, apply, roll back.")


class State(str, Enum):
    proposed = "proposed"
    validated = "validated"
    rejected = "rejected"
    approved = "approved"
    applied = "applied"
    rolled_back = "rolled_back"


@recs_app.command("list")
def recs_list(state: Annotated[State | None, typer.Option(help="only this state")] = None,
              kind: Annotated[Kind | None, typer.Option(help="only this kind")] = None,
              target: Annotated[str | None, typer.Option(help="target id or name")] = None,
              limit: Annotated[int, typer.Option(min=1)] = 50, offset: Annotated[int, typer.Option(min=0)] = 0,
              json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Stored recommendations, newest first."""
    service = open_service(store, quiet=True)
    recs = service.recommendations(state.value if state else None, kind=kind.value if kind else None, target=target,
                                   limit=limit, offset=offset)
    if json_out:
        emit({"recommendations": [rec_doc(service, r) for r in recs]})
    else:
        render.recommendations(Console(), recs)


@recs_app.command("show")
def recs_show(rec_id: str, json_out: JsonFlag = False, store: StoreOpt = None,
              explain: Annotated[bool, typer.Option("--explain", help="an index recommendation's table of why, per "
                                                    "statement (the JSON output always has it in its details)")]
              = False,
              full: Annotated[bool, typer.Option("--full", help="each statement's whole SQL, not shortened to a "
                                                 "line")] = False) -> None:
    """A recommendation with its evidence, the SQL to apply and to revert, and its history."""
    service = open_service(store, quiet=True)
    rec = service.recommendation(rec_id)  # its id or a unique prefix
    history = service.audit_log(rec.id)
    head = service.headline(rec)
    if json_out:
        from advisor.service.watch import watch_of

        emit({"recommendation": rec_doc(service, rec, head), "watch": watch_of(rec), "history": history})
        return
    render.recommendation_page(Console(), rec, history, explain=explain, predicted=head.predicted_gain, full=full)


def _transition(verb: str):
    def command(rec_id: Annotated[str, typer.Argument(help="recommendation id")],
                note: Annotated[str, typer.Option(help="a note for the audit log")] = "",
                json_out: JsonFlag = False, store: StoreOpt = None) -> None:
        service = open_service(store, quiet=True)
        method = getattr(service, verb)
        rec = method(rec_id, note=note) if verb in ("approve", "reject") else \
            method(rec_id, why=note) if verb == "rollback" else method(rec_id)
        if json_out:
            emit({"recommendation": rec_doc(service, rec)})
        else:
            print(f"recommendation {rec.id} is now {state_word(rec.state)}")
            if verb == "apply" and rec.applied and rec.applied.get("needs_restart"):
                print("restart the server for the changes to take full effect")
            if verb == "apply":
                render.watch_line(Console(), rec)
    command.__doc__ = {"approve": "validated -> approved (or rolled back -> approved, to apply it again while its "
                                  "evidence is fresh).",
                       "reject": "Reject a recommendation.",
                       "apply": "approved -> applied: run the SQL on the production target; the revert is recorded. "
                                "A rolled-back one is applied again in this one step (approved again, audited, "
                                "watched) while its evidence is fresh: validated at most ADVISOR_REAPPLY_MAX_AGE_DAYS "
                                "(7) days ago and not rolled back by its watch; else tune again.",
                       "rollback": "applied -> rolled back: run the revert recorded at apply time."}[verb]
    return command


for _verb in ("approve", "reject", "apply", "rollback"):
    recs_app.command(_verb)(_transition(_verb))


@recs_app.command("watch")
def recs_watch(target: Annotated[str | None, typer.Option(help="only this target (id or name)")] = None,
               once: Annotated[bool, typer.Option("--once", help="check once and exit (for a cron)")] = False,
               json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Check every applied recommendation under watch: roll back those whose watched statements got slower than
    the limit (ADVISOR_WATCH_MAX_REGRESSION), end the watches whose window passed. `advisor serve` does this by
    itself; without --once, this checks every ADVISOR_WATCH_INTERVAL_S until interrupted."""
    import time

    from advisor.core.settings import get_settings

    service = open_service(store, quiet=True)
    while True:
        rows = service.check_watches(target)
        if json_out:
            emit({"watches": rows})
        else:
            render.watches(Console(), rows)
        if once:
            return
        time.sleep(get_settings().watch_interval_s)


def register(app: typer.Typer) -> None:
    app.command()(server_commands.serve)
    app.command()(server_commands.playground)
    app.add_typer(targets_app, name="targets")
    app.add_typer(runs_app, name="runs")
    app.add_typer(recs_app, name="recommendations")
    app.add_typer(server_commands.schedule_app, name="schedule")
    app.add_typer(server_commands.tokens_app, name="tokens")
