"""CLI commands around the server: serve (web UI, REST API, schedules), schedules, API tokens, and the playground
database to try it all on. Adapters like ``service_commands``."""

from __future__ import annotations

import ipaddress
import secrets
import sys
import time
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console

from advisor.cli.pasting import id_table
from advisor.cli.common import (EngineOpt, JsonFlag, Kind, StoreOpt, emit, names, open_service, parse_plan,
                               plan_options, when)
from advisor.core.errors import AdvisorError
from advisor.core.progress import reporter


class Role(str, Enum):
    viewer = "viewer"
    operator = "operator"
    admin = "admin"


class AutoApply(str, Enum):
    none = "none"
    reload_knobs = "reload_knobs"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _kinds(items: list[str]) -> list[Kind]:
    kinds = []
    for name in names(items):
        if name not in Kind.__members__:
            raise typer.BadParameter(f"{name!r} is not a run kind; expected {', '.join(Kind.__members__)}",
                                     param_hint="--kind")
        if Kind(name) not in kinds:
            kinds.append(Kind(name))
    if not kinds:
        raise typer.BadParameter(f"give at least one run kind: {', '.join(Kind.__members__)}", param_hint="--kind")
    return kinds


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

    from web.main import create_app  # the web app only here: the other commands never load it

    say = reporter()
    say("loading the web app")
    probe = open_service(store, quiet=True)  # another process may hold the store: this server asks it, then takes over
    try:
        has_tokens = any(t["revoked_at"] is None for t in probe.tokens())
    finally:
        probe.store.close()
    _check_bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    app = create_app(store, scheduler=not no_scheduler, say=say, url=url)
    if json_out:
        emit({"url": url, "docs": f"{url}api/docs", "scheduler": not no_scheduler, "has_tokens": has_tokens})
        sys.stdout.flush()
    else:
        print(f"web UI:   {url}\nAPI docs: {url}api/docs", flush=True)
    if not has_tokens:
        say("no API token yet: create one with `advisor tokens create --name NAME --role operator` (in another "
            "terminal: this server answers it)")
    if allow_remote and not _loopback(host):
        say(f"listening on {host} without TLS: put a TLS proxy in front of it")
    say(f"serving on {url} (scheduler {'off' if no_scheduler else 'on'}); Ctrl-C stops")
    from advisor.core.settings import get_settings

    trusted = get_settings().trusted_proxies.strip()  # X-Forwarded-* believed only from these (default: none)
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=bool(trusted),
                forwarded_allow_ips=trusted or None)


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


# --- schedules ---------------------------------------------------------------------------------------------------

schedule_app = typer.Typer(no_args_is_help=True, help="Nightly tuning: cron schedules run by `advisor serve`.")


@schedule_app.command("add")
@plan_options
def schedule_add(cron: Annotated[str, typer.Option(help="5 cron fields, e.g. '0 2 * * *' (02:00 daily)")],
                 kind: Annotated[list[str], typer.Option(help="what each firing tunes, in order: knobs, indexes, "
                                                              "rewrites, all (repeat, or a comma list: knobs,indexes)")],
                 plan_fields: dict,
                 target: Annotated[str | None, typer.Option("--target", "-t", help="target id or name; left out for "
                                                                          "runs that need no database (a learned "
                                                                          "index's synthetic keys)")] = None,
                 timezone_: Annotated[str, typer.Option("--timezone", help="of the cron fields")] = "UTC",
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
    optimizer = plan_fields.pop("optimizer") if len(kinds) == 1 else None  # one optimizer names one kind's
    plans = [parse_plan({"kind": k.value, **plan_fields, "optimizer": optimizer}) for k in kinds]
    s = open_service(store, quiet=True).add_schedule(target, cron, plans, timezone=timezone_,
                                                     auto_apply=auto_apply.value,
                                                     auto_apply_knobs=names(auto_apply_knob),
                                                     max_regression=max_regression)
    emit(s) if json_out else print(f"schedule {s['id']}: {s['cron']} ({s['timezone']})\n  next {s['next_fire_text']}")


@schedule_app.command("list")
def schedule_list(target: Annotated[str | None, typer.Option("--target", "-t", help="target id or name")] = None,
                  json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Schedules with their next firing time (in each schedule's own time zone, UTC beside it)."""
    rows = open_service(store, quiet=True).schedules(target)
    if json_out:
        emit({"schedules": rows})
        return
    if not rows:
        print("no schedules" + (f" for target {target}" if target else "") + " (advisor schedule add makes one)")
    for s in rows:  # a block per schedule: its times whole at 80 columns, never cut by a table's cell
        print(f"schedule {s['id']}: {s['target_name'] or s['target_id']}, runs "
              f"{', '.join(p['kind'] for p in s['plan']['runs'])}, auto-apply {s['plan']['auto_apply']}\n"
              f"  cron  {s['cron']} ({s['timezone']})\n  next  {s['next_fire_text']}\n  last  {s['last_fire_text']}")


@schedule_app.command("remove")
def schedule_remove(schedule_id: Annotated[str, typer.Argument(help="schedule id")], json_out: JsonFlag = False,
                    store: StoreOpt = None) -> None:
    """Stop a schedule (its past runs stay)."""
    open_service(store, quiet=True).remove_schedule(schedule_id)
    emit({"removed": schedule_id}) if json_out else print(f"removed schedule {schedule_id}")


# --- tokens ------------------------------------------------------------------------------------------------------

tokens_app = typer.Typer(no_args_is_help=True, help="API tokens (admin: needs the store file, not a token).")


@tokens_app.command("create")
def tokens_create(name: Annotated[str, typer.Option(help="who or what the token is for")],
                  role: Annotated[Role, typer.Option(help="viewer reads; operator also runs, approves, applies; "
                                                          "admin also manages tokens over REST")],
                  json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """A new API token (send it as 'Authorization: Bearer <secret>'); its secret is printed once, here."""
    token, secret = open_service(store, quiet=True).create_token(name, role.value)
    if json_out:
        emit({**token, "secret": secret})
    else:
        print(f"token {token['name']} ({token['role']}): {secret}")
    print("warning: the secret is shown only now and cannot be shown again (only its hash is stored): keep it "
          "somewhere safe", file=sys.stderr)


@tokens_app.command("list")
def tokens_list(json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """API tokens (never their secrets: only a hash is stored)."""
    rows = open_service(store, quiet=True).tokens()
    if json_out:
        emit({"tokens": rows})
        return
    table = id_table("id", "name", "role", "created", "revoked")
    for t in rows:
        table.add_row(t["id"], t["name"], t["role"], when(t["created_at"]), when(t["revoked_at"]))
    Console().print(table)


@tokens_app.command("revoke")
def tokens_revoke(ref: Annotated[str, typer.Argument(help="token id or name")], json_out: JsonFlag = False,
                  store: StoreOpt = None) -> None:
    """Revoke a token: requests bearing it are refused from now on."""
    token = open_service(store, quiet=True).revoke_token(ref)
    emit(token) if json_out else print(f"revoked {token['name']}")


# --- playground --------------------------------------------------------------------------------------------------


def playground(password: Annotated[str | None, typer.Option(
                   help="the password of the playground's login (the server asks for it over TCP and the socket; a "
                        "wrong one is refused); default: a random one, in the DSN printed")] = None,
               user: Annotated[str, typer.Option(help="the playground's login (a superuser, as a DBA's)")] = "dba",
               scale: Annotated[float, typer.Option(help="size of the shop: 1 = 200,000 orders (about 30 MB)",
                                                    min=0.01, max=100)] = 1.0,
               seconds: Annotated[float, typer.Option(help="stop after this long; 0 = until Ctrl-C", min=0)] = 0,
               engine: EngineOpt = "postgres",
               json_out: Annotated[bool, typer.Option("--json", help="print the DSN as one JSON document")] = False
               ) -> None:
    """Start a sandbox 'production' server of --engine with a shop workload to try db-advisor on; prints its DSN and
    keeps the workload trickling until stopped."""
    from advisor.bench.playground import create_shop, playground_sandbox, run_shop_workload, shop_size

    if not user.isidentifier():
        raise typer.BadParameter(f"letters, digits and underscores, not {user!r}", param_hint="--user")
    if password is None:  # no guessable default: only who reads the printed DSN gets in (issue 42)
        password = secrets.token_urlsafe(12)
    if not password:
        raise typer.BadParameter("the playground's login needs a password", param_hint="--password")
    say = reporter()
    orders, customers = shop_size(scale)
    with playground_sandbox("playground", engine=engine) as sandbox:
        say(f"creating the shop database ({orders:,} orders) and running its workload")
        dsn = create_shop(sandbox, password=password, scale=scale, login=user)
        emit({"dsn": dsn}) if json_out else print(dsn)
        sys.stdout.flush()
        say("next, in another terminal: export ADVISOR_TARGET_DSN='<the DSN above>', then advisor targets add "
            "--name shop (it reads the DSN from there: no password on a command line), then advisor observe "
            "--target shop; Ctrl-C stops")
        end = time.monotonic() + seconds if seconds else None
        rounds = 0
        while end is None or time.monotonic() < end:
            time.sleep(5)
            rounds += 1
            run_shop_workload(sandbox.dsn("shop"), rounds=5, seed=rounds, orders=orders, customers=customers)
