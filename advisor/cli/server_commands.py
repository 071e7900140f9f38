"""``advisor serve`` (the web UI, the REST API and the schedules) and ``advisor playground`` (a database to try it
all on). Adapters like ``targets_commands``."""

from __future__ import annotations

import ipaddress
import os
import secrets
import sys
import time
from typing import Annotated

import typer

from advisor.cli.common import EngineOpt, StoreOpt, emit, open_service
from advisor.core.errors import AdvisorError
from advisor.core.progress import reporter


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --- serve -------------------------------------------------------------------------------------------------------


def serve(host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="port", min=1, max=65535)] = 8000,
          no_scheduler: Annotated[bool, typer.Option("--no-scheduler", help="do not run the nightly schedules")] = False,
          allow_remote: Annotated[bool, typer.Option(help="listen on a non-loopback address (there is no TLS: put "
                                                          "a TLS proxy in front)")] = False,
          json_out: Annotated[bool, typer.Option("--json", help="print the URLs as one JSON document on stdout "
                                                               "before serving")] = False,
          ray: Annotated[str | None, typer.Option(help="run the searches' trials and the fleets' runs on this Ray "
                                                       "cluster (host:port, ray://...), or auto (a local one on "
                                                       "loopback); default: the ADVISOR_RAY setting")] = None,
          store: StoreOpt = None) -> None:
    """Run the web UI, the REST API (/api, docs at /api/docs) and the nightly schedules, until Ctrl-C."""
    if ray is not None:  # the server's runs read it as their setting (a run's own ray option still wins)
        os.environ["ADVISOR_RAY"] = ray
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


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(playground)
