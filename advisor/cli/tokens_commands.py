"""``advisor tokens``: API tokens (create, list, revoke; admin: needs the store file, not a token). Adapters like
``targets_commands``."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer
from rich.console import Console

from advisor.cli.pasting import id_table
from advisor.cli.common import JsonFlag, StoreOpt, emit, open_service, when


class Role(str, Enum):
    viewer = "viewer"
    operator = "operator"
    admin = "admin"


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


def register(app: typer.Typer) -> None:
    app.add_typer(tokens_app, name="tokens")
