"""``advisor targets``: the databases db-advisor tunes (add, replica, check, update, list, remove, observe).
Thin adapters like the rest of the CLI: parse flags, call one ``AdvisorService`` method, render or print one JSON
document (``--json``). The CLI acts as the local admin."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from advisor.cli import render
from advisor.cli.pasting import id_table
from advisor.cli.common import (DSN_FORMS, TARGET_ENV, JsonFlag, StoreOpt, emit, observation_doc, open_service,
                                names, resolve_dsn, when)


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
    table = id_table("id", "name", "engine", "dsn (no password)", "registered", "tags", "last observed",
                     "replica (lag)")
    for t in rows:
        table.add_row(t["id"], t["name"], t["engine"], t["dsn"] or "(no database)", "yes" if t["registered"] else "no",
                      ", ".join(t.get("tags") or ()) or "-", when(t["last_observed_at"]), _replica_cell(t.get("replica")))
    Console().print(table)


@targets_app.command("tag")
def targets_tag(ref: Annotated[str, typer.Argument(help="target id or name")],
                tags: Annotated[list[str] | None, typer.Argument(help="its tags (replacing the ones it had; none: "
                                                                      "untag); a fleet schedule's --fleet tag:NAME "
                                                                      "selects by them")] = None,
                json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Tag a target: `advisor schedule add --fleet tag:NAME` tunes every target tagged NAME."""
    t = open_service(store, quiet=True).tag_target(ref, names(tags or []))
    emit(t) if json_out else print(f"{t['name']}: tags {', '.join(t['tags']) or '(none)'}")


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




def register(app: typer.Typer) -> None:
    app.add_typer(targets_app, name="targets")
