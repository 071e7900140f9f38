"""CLI groups for the service: serve, targets, runs, recommendations, schedule, tokens, playground.

Thin adapters like the rest of the CLI: parse flags, call one ``AdvisorService`` method, render (rich) or print
one JSON document (``--json``). The CLI acts as the local admin (it holds the store file); while ``advisor serve``
holds the store, use the REST API instead (the store says so when it is locked).
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import time
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from advisor.storage import codec

from advisor.cli import render
from advisor.core.errors import AdvisorError
from advisor.core.progress import reporter
from advisor.service.runs import RunPlan

JsonFlag = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
StoreOpt = Annotated[str | None, typer.Option("--store", help="path of the DuckDB store (default: ADVISOR_STORE)")]


class Kind(str, Enum):
    knobs = "knobs"
    indexes = "indexes"


class Role(str, Enum):
    viewer = "viewer"
    operator = "operator"


class AutoApply(str, Enum):
    none = "none"
    reload_knobs = "reload_knobs"


def _service(store: str | None, quiet: bool = False):
    from advisor.service.service import AdvisorService
    from advisor.storage.store import open_store

    return AdvisorService(open_store(store), say=reporter(quiet=quiet))


def _emit(doc: object) -> None:
    sys.stdout.write(json.dumps(codec.plain(doc), indent=2, default=str) + "\n")


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if ts else "-"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _names(items: list[str]) -> list[str]:
    """Values of a repeatable option that also takes comma lists: ``--kind knobs --kind indexes`` or
    ``--kind knobs,indexes``."""
    return [n.strip() for item in items for n in item.split(",") if n.strip()]


def _kinds(items: list[str]) -> list[Kind]:
    kinds = []
    for name in _names(items):
        if name not in Kind.__members__:
            raise typer.BadParameter(f"{name!r} is not a run kind; expected knobs or indexes", param_hint="--kind")
        if Kind(name) not in kinds:
            kinds.append(Kind(name))
    if not kinds:
        raise typer.BadParameter("give at least one run kind: knobs, indexes", param_hint="--kind")
    return kinds


def _plan(kind: Kind, optimizer, trials, budget_mb, rounds, episodes, samples, seeds, repeats, validate,
          sample_percent) -> RunPlan:
    return RunPlan(kind=kind.value, optimizer=optimizer, trials=trials, budget_mb=budget_mb, rounds=rounds,
                   episodes=episodes, samples=samples, seeds=seeds, repeats=repeats, validate=validate,
                   sample_percent=sample_percent)


# --- serve -------------------------------------------------------------------------------------------------------


def serve(host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="port", min=1, max=65535)] = 8000,
          no_scheduler: Annotated[bool, typer.Option("--no-scheduler", help="do not run the nightly schedules")] = False,
          allow_remote: Annotated[bool, typer.Option(help="listen on a non-loopback address (there is no TLS: put "
                                                          "a TLS proxy in front)")] = False,
          json_out: Annotated[bool, typer.Option("--json", help="print the URLs as one JSON document on stdout "
                                                               "before serving")] = False,
          store: StoreOpt = None) -> None:
    """Run the web UI, the REST API (/api, docs at /api/docs) and the nightly schedules, until Ctrl-C."""
    if not _loopback(host) and not allow_remote:
        raise typer.BadParameter(f"{host} is not a loopback address; the server speaks plain HTTP (no TLS here), so "
                                 "API tokens would cross the network in clear. Use --allow-remote behind a TLS proxy.",
                                 param_hint="--host")
    import uvicorn

    from advisor.service.service import AdvisorService
    from advisor.storage.store import open_store
    from web.main import create_app

    say = reporter()
    say("loading the web app")
    with open_store(store) as s:  # fails here, clearly, when another process holds the store
        has_tokens = any(t["revoked_at"] is None for t in AdvisorService(s).tokens())
    _check_bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    app = create_app(store, scheduler=not no_scheduler, say=say)
    if json_out:
        _emit({"url": url, "docs": f"{url}api/docs", "scheduler": not no_scheduler, "has_tokens": has_tokens})
        sys.stdout.flush()
    else:
        print(f"web UI:   {url}\nAPI docs: {url}api/docs", flush=True)
    if not has_tokens:
        say("no API token yet: create one with `advisor tokens create --name NAME --role operator` (stop the "
            "server first: it holds the store)")
    if allow_remote and not _loopback(host):
        say(f"listening on {host} without TLS: put a TLS proxy in front of it")
    say(f"serving on {url} (scheduler {'off' if no_scheduler else 'on'}); Ctrl-C stops")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _check_bind(host: str, port: int) -> None:
    """Fail with one clear line, before printing any URL, when the address cannot be listened on."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(infos[0][4])
    except OSError as e:
        raise AdvisorError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


# --- targets -----------------------------------------------------------------------------------------------------

targets_app = typer.Typer(no_args_is_help=True, help="Databases db-advisor tunes (credentials stored encrypted).")


def _ask_dsn() -> str:
    if sys.stdin.isatty():
        return typer.prompt("DSN (not echoed)", hide_input=True, err=True)
    dsn = sys.stdin.readline().strip()  # piped: `secret-tool lookup ... | advisor targets add --name N`
    if not dsn:
        raise AdvisorError("no DSN: give --dsn, set ADVISOR_TARGET_DSN, or pipe it on stdin")
    return dsn


@targets_app.command("add")
def targets_add(name: Annotated[str, typer.Option(help="a name for the target")],
                dsn: Annotated[str | None, typer.Option(help="libpq DSN or URL (default: ADVISOR_TARGET_DSN, else "
                                                             "asked for without echo, or read from a pipe) - "
                                                             "keeps the password off the command line")] = None,
                json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Register a database: checks it can be observed, stores its DSN encrypted, takes a first snapshot."""
    dsn = dsn or os.environ.get("ADVISOR_TARGET_DSN") or _ask_dsn()
    target = _service(store).add_target(name, dsn)  # progress on stderr; stdout stays one document
    if json_out:
        _emit(target)
    else:
        print(f"registered {target['name']} ({target['id']}): {target['dsn']}")


@targets_app.command("list")
def targets_list(json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Known targets (registered ones have stored credentials); DSNs are shown without passwords."""
    rows = _service(store, quiet=True).targets()
    if json_out:
        _emit({"targets": rows})
        return
    table = Table("id", "name", "engine", "dsn (no password)", "registered", "last observed")
    for t in rows:
        table.add_row(t["id"], t["name"], t["engine"], t["dsn"], "yes" if t["registered"] else "no",
                      _when(t["last_observed_at"]))
    Console().print(table)


@targets_app.command("remove")
def targets_remove(ref: Annotated[str, typer.Argument(help="target id or name")], json_out: JsonFlag = False,
                   store: StoreOpt = None) -> None:
    """Forget a target, its credentials and schedules (its snapshots, runs and recommendations stay)."""
    _service(store, quiet=True).remove_target(ref)
    _emit({"removed": ref}) if json_out else print(f"removed {ref}")


@targets_app.command("observe")
def targets_observe(ref: Annotated[str, typer.Argument(help="target id or name")], json_out: JsonFlag = False,
                    store: StoreOpt = None) -> None:
    """Take a snapshot of a registered target now."""
    obs = _service(store, quiet=json_out).observe_target(ref)
    if json_out:
        _emit({"target_id": obs.target_id, "snapshot_id": obs.snapshot_id, "workload_kind": obs.workload_kind,
               "workload": obs.workload})
    else:
        render.observation(Console(), obs)


# --- runs --------------------------------------------------------------------------------------------------------

runs_app = typer.Typer(no_args_is_help=True, help="Tuning runs of registered targets.")


@runs_app.command("start")
def runs_start(target: Annotated[str, typer.Option("--target", "-t", help="target id or name")],
               kind: Annotated[Kind, typer.Option(help="what to tune")],
               optimizer: Annotated[str | None, typer.Option(help="default: hibo (knobs), ia2 (indexes)")] = None,
               trials: Annotated[int, typer.Option(help="knobs: trials of the search", min=2)] = 30,
               budget_mb: Annotated[float | None, typer.Option("--budget-mb", help="indexes: MiB of new indexes")] = None,
               rounds: Annotated[int, typer.Option(help="interleaved A/B rounds of the validation", min=1)] = 5,
               episodes: Annotated[int, typer.Option(help="indexes: IA2 training episodes", min=1)] = 300,
               samples: Annotated[int, typer.Option(help="indexes: IA2 sampled rollouts", min=0)] = 48,
               seeds: Annotated[int, typer.Option(help="knobs: seed configurations", min=0)] = 3,
               repeats: Annotated[int, typer.Option(help="knobs: executions per statement per trial", min=1)] = 3,
               validate: Annotated[bool, typer.Option(help="validate on a shadow")] = True,
               sample_percent: Annotated[float | None, typer.Option(help="shadow: percent of large tables",
                                                                    min=0.001, max=100)] = None,
               json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Run a tuning run now, in the foreground (progress on stderr), and print it with its recommendation.
    Exits 1 when the run failed (after printing it)."""
    service = _service(store)
    run = service.start_run(target, _plan(kind, optimizer, trials, budget_mb, rounds, episodes, samples, seeds,
                                          repeats, validate, sample_percent), wait=True)
    rec_id = (run.get("result") or {}).get("recommendation")
    rec = service.recommendation(rec_id) if rec_id else None
    if json_out:
        _emit({"run": run, "recommendation": codec.recommendation_dict(rec) if rec else None})
    else:
        _print_run(run, service.trials(run["id"]))
        if rec is not None:
            render.recommendation(Console(), rec)
    if run["state"] == "failed":  # the run's row (and document) says why; the exit status says it failed
        raise AdvisorError(f"run {run['id']} failed: {run['error']}")


def _print_run(run: dict, trials: list[dict]) -> None:
    console = Console()
    console.print(f"[bold]run {run['id']}[/]: {run['kind']} / {run['optimizer']}, state [bold]{run['state']}[/], "
                  f"started {_when(run['created_at'])} by {run['started_by'] or '-'}")
    if run.get("error"):
        console.print(f"error: {run['error']}", markup=False)
    if (run.get("result") or {}).get("message"):
        console.print(f"outcome: {run['result']['message']}", markup=False)
    if trials:
        table = Table("#", "source", "status", "objective", "s")
        for t in trials:
            table.add_row(str(t["number"]) if t["number"] is not None else "-", t["source"] or "", t["status"],
                          f"{t['objective']:.4g}" if t["objective"] is not None else "-",
                          f"{t['duration_s']:.1f}" if t["duration_s"] is not None else "-")
        console.print(table)


@runs_app.command("show")
def runs_show(run_id: Annotated[str, typer.Argument(help="run id")], json_out: JsonFlag = False,
              store: StoreOpt = None) -> None:
    """A run: its state, progress (recent lines) and trials."""
    service = _service(store, quiet=True)
    run, trials = service.run(run_id), service.trials(run_id)
    if json_out:
        _emit({"run": run, "trials": trials})
    else:
        _print_run(run, trials)
        for line in (run.get("progress") or {}).get("log", [])[-10:]:
            print(f"  {line}")


@runs_app.command("list")
def runs_list(target: Annotated[str | None, typer.Option(help="target id or name")] = None,
              state: Annotated[str | None, typer.Option(help="queued, running, done, failed, cancelled, ...")] = None,
              limit: Annotated[int, typer.Option(min=1)] = 50, offset: Annotated[int, typer.Option(min=0)] = 0,
              json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Tuning runs, newest first."""
    rows = _service(store, quiet=True).runs(target, state, limit, offset)
    if json_out:
        _emit({"runs": rows})
        return
    table = Table("id", "target", "kind", "optimizer", "state", "started", "by", "outcome")
    for r in rows:
        table.add_row(r["id"], r["target_id"], r["kind"], r["optimizer"], r["state"], _when(r["created_at"]),
                      r["started_by"] or "-", (r.get("result") or {}).get("message") or r.get("error") or "")
    Console().print(table)


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
    recs = _service(store, quiet=True).recommendations(state.value if state else None, kind=kind.value if kind else None,
                                                       target=target, limit=limit, offset=offset)
    if json_out:
        _emit({"recommendations": [codec.recommendation_dict(r) for r in recs]})
    else:
        render.recommendations(Console(), recs)


@recs_app.command("show")
def recs_show(rec_id: str, json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """A recommendation with its evidence, the SQL to apply and to revert, and its history."""
    service = _service(store, quiet=True)
    rec = service.recommendation(rec_id)
    history = service.audit_log(rec_id)
    if json_out:
        _emit({"recommendation": codec.recommendation_dict(rec), "history": history})
        return
    render.recommendation_page(Console(), rec, history)


def _transition(verb: str):
    def command(rec_id: Annotated[str, typer.Argument(help="recommendation id")],
                note: Annotated[str, typer.Option(help="a note for the audit log")] = "",
                json_out: JsonFlag = False, store: StoreOpt = None) -> None:
        service = _service(store, quiet=True)
        method = getattr(service, verb)
        rec = method(rec_id, note=note) if verb in ("approve", "reject") else \
            method(rec_id, why=note) if verb == "rollback" else method(rec_id)
        if json_out:
            _emit({"recommendation": codec.recommendation_dict(rec)})
        else:
            print(f"recommendation {rec.id} is now {rec.state}")
            if verb == "apply" and rec.applied and rec.applied.get("needs_restart"):
                print("restart the server for the changes to take full effect")
    command.__doc__ = {"approve": "validated -> approved.", "reject": "Reject a recommendation.",
                       "apply": "approved -> applied: run the SQL on the production target; the revert is recorded.",
                       "rollback": "applied -> rolled_back: run the revert recorded at apply time."}[verb]
    return command


for _verb in ("approve", "reject", "apply", "rollback"):
    recs_app.command(_verb)(_transition(_verb))


# --- schedules ---------------------------------------------------------------------------------------------------

schedule_app = typer.Typer(no_args_is_help=True, help="Nightly tuning: cron schedules run by `advisor serve`.")


@schedule_app.command("add")
def schedule_add(target: Annotated[str, typer.Option("--target", "-t", help="target id or name")],
                 cron: Annotated[str, typer.Option(help="5 cron fields, e.g. '0 2 * * *' (02:00 daily)")],
                 kind: Annotated[list[str], typer.Option(help="what each firing tunes: knobs, indexes (repeat, or "
                                                              "a comma list: knobs,indexes)")],
                 timezone_: Annotated[str, typer.Option("--timezone", help="of the cron fields")] = "UTC",
                 optimizer: Annotated[str | None, typer.Option(help="default per kind: hibo, ia2")] = None,
                 trials: Annotated[int, typer.Option(min=2)] = 30,
                 budget_mb: Annotated[float | None, typer.Option("--budget-mb", help="indexes: MiB")] = None,
                 rounds: Annotated[int, typer.Option(min=1)] = 5,
                 auto_apply: Annotated[AutoApply, typer.Option(help="reload_knobs: apply validated knob changes "
                                                                    "that need no restart")] = AutoApply.none,
                 auto_apply_knob: Annotated[list[str], typer.Option(
                     help="with reload_knobs: only these knobs (repeat, or a comma list)")] = [],  # noqa: B006
                 max_regression: Annotated[float, typer.Option(help="roll an auto-applied change back when "
                                                                    "statements get this much slower")] = 0.10,
                 json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Tune a target by itself on a cron schedule (run by `advisor serve`); recommendations wait for approval
    unless --auto-apply reload_knobs."""
    kinds = _kinds(kind)
    plans = [_plan(k, optimizer if len(kinds) == 1 else None, trials, budget_mb, rounds, 300, 48, 3, 3, True, None)
             for k in kinds]
    s = _service(store, quiet=True).add_schedule(target, cron, plans, timezone=timezone_, auto_apply=auto_apply.value,
                                                 auto_apply_knobs=_names(auto_apply_knob),
                                                 max_regression=max_regression)
    _emit(s) if json_out else print(f"schedule {s['id']}: {s['cron']} ({s['timezone']}), next {_when(s['next_fire_at'])}")


@schedule_app.command("list")
def schedule_list(target: Annotated[str | None, typer.Option("--target", "-t", help="target id or name")] = None,
                  json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Schedules with their next firing time."""
    rows = _service(store, quiet=True).schedules(target)
    if json_out:
        _emit({"schedules": rows})
        return
    table = Table("id", "target", "cron", "runs", "auto-apply", "last fired", "next")
    for s in rows:
        table.add_row(s["id"], s["target_id"], f"{s['cron']} {s['timezone']}",
                      ", ".join(p["kind"] for p in s["plan"]["runs"]), s["plan"]["auto_apply"],
                      _when(s["last_fire_at"]), _when(s["next_fire_at"]))
    Console().print(table)


@schedule_app.command("remove")
def schedule_remove(schedule_id: Annotated[str, typer.Argument(help="schedule id")], json_out: JsonFlag = False,
                    store: StoreOpt = None) -> None:
    """Stop a schedule (its past runs stay)."""
    _service(store, quiet=True).remove_schedule(schedule_id)
    _emit({"removed": schedule_id}) if json_out else print(f"removed schedule {schedule_id}")


# --- tokens ------------------------------------------------------------------------------------------------------

tokens_app = typer.Typer(no_args_is_help=True, help="API tokens (admin: needs the store file, not a token).")


@tokens_app.command("create")
def tokens_create(name: Annotated[str, typer.Option(help="who or what the token is for")],
                  role: Annotated[Role, typer.Option(help="viewer reads; operator also runs, approves, applies")],
                  json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """A new API token (send it as 'Authorization: Bearer <secret>'); its secret is printed once, here."""
    token, secret = _service(store, quiet=True).create_token(name, role.value)
    if json_out:
        _emit({**token, "secret": secret})
    else:
        print(f"token {token['name']} ({token['role']}): {secret}")
    print("warning: the secret is shown only now and cannot be shown again (only its hash is stored): keep it "
          "somewhere safe", file=sys.stderr)


@tokens_app.command("list")
def tokens_list(json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """API tokens (never their secrets: only a hash is stored)."""
    rows = _service(store, quiet=True).tokens()
    if json_out:
        _emit({"tokens": rows})
        return
    table = Table("id", "name", "role", "created", "revoked")
    for t in rows:
        table.add_row(t["id"], t["name"], t["role"], _when(t["created_at"]), _when(t["revoked_at"]))
    Console().print(table)


@tokens_app.command("revoke")
def tokens_revoke(ref: Annotated[str, typer.Argument(help="token id or name")], json_out: JsonFlag = False,
                  store: StoreOpt = None) -> None:
    """Revoke a token: requests bearing it are refused from now on."""
    token = _service(store, quiet=True).revoke_token(ref)
    _emit(token) if json_out else print(f"revoked {token['name']}")


# --- playground --------------------------------------------------------------------------------------------------


def playground(password: Annotated[str, typer.Option(help="put this password in the printed DSN (the sandbox "
                                                          "accepts any)")] = "playground",
               seconds: Annotated[float, typer.Option(help="stop after this long; 0 = until Ctrl-C", min=0)] = 0,
               json_out: Annotated[bool, typer.Option("--json", help="print the DSN as one JSON document")] = False
               ) -> None:
    """Start a sandbox 'production' PostgreSQL with a shop workload to try db-advisor on; prints its DSN and
    keeps the workload trickling until stopped."""
    from advisor.bench.playground import create_shop, run_shop_workload
    from connectors.postgres.sandbox import PostgresSandbox

    say = reporter()
    with PostgresSandbox("playground") as sandbox:
        say("creating the shop database (200,000 orders) and running its workload")
        dsn = create_shop(sandbox, password=password)
        _emit({"dsn": dsn}) if json_out else print(dsn)
        sys.stdout.flush()
        say("register it: advisor targets add --name shop --dsn '<the DSN above>' (or in the web UI); Ctrl-C stops")
        end = time.monotonic() + seconds if seconds else None
        rounds = 0
        while end is None or time.monotonic() < end:
            time.sleep(5)
            rounds += 1
            run_shop_workload(dsn.replace(f" password={password}", ""), rounds=5, seed=rounds)


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(playground)
    app.add_typer(targets_app, name="targets")
    app.add_typer(runs_app, name="runs")
    app.add_typer(recs_app, name="recommendations")
    app.add_typer(schedule_app, name="schedule")
    app.add_typer(tokens_app, name="tokens")
