"""``advisor recommendations``: list, show, approve, apply, roll back, watch. Adapters like ``targets_commands``."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer
from rich.console import Console

from advisor.cli import render
from advisor.cli.common import JsonFlag, Kind, StoreOpt, emit, open_service, rec_doc
from advisor.core.domain import state_word


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
    app.add_typer(recs_app, name="recommendations")
