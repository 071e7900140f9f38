"""``advisor schedule``: nightly tuning, cron schedules run by ``advisor serve`` (add, list, remove). Adapters like
``targets_commands``."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from advisor.cli.common import JsonFlag, Kind, StoreOpt, emit, names, open_service, parse_plan, plan_options


class AutoApply(str, Enum):
    none = "none"
    reload_knobs = "reload_knobs"


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
                 fleet: Annotated[str | None, typer.Option(help="instead of --target: a fleet, 'all' or 'tag:NAME' "
                                                                "(advisor targets tag), each firing one job of one "
                                                                "run per target")] = None,
                 json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """Tune a target (or a fleet of them) by itself on a cron schedule (run by `advisor serve`; a fleet's runs on
    its Ray cluster with `advisor serve --ray`); recommendations wait for approval unless --auto-apply
    reload_knobs (one target only)."""
    kinds = _kinds(kind)
    optimizer = plan_fields.pop("optimizer") if len(kinds) == 1 else None  # one optimizer names one kind's
    plans = [parse_plan({"kind": k.value, **plan_fields, "optimizer": optimizer}) for k in kinds]
    if fleet is not None:
        if target is not None or auto_apply.value != "none" or auto_apply_knob:
            raise typer.BadParameter("a fleet schedule takes no --target and applies nothing by itself",
                                     param_hint="--fleet")
        s = open_service(store, quiet=True).add_fleet_schedule(fleet, cron, plans, timezone=timezone_)
        emit(s) if json_out else print(f"schedule {s['id']}: {s['target_name']}, {s['cron']} ({s['timezone']})\n"
                                       f"  next {s['next_fire_text']}")
        return
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


@schedule_app.command("job")
def schedule_job(job_id: Annotated[str, typer.Argument(help="a fleet firing's job id (its runs' job_id)")],
                 json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """A fleet firing as one job: each target's run and how it ended."""
    job = open_service(store, quiet=True).fleet_job(job_id)
    if json_out:
        emit(job)
        return
    states = ", ".join(f"{n} {state}" for state, n in sorted(job["states"].items())) or "no runs"
    print(f"fleet job {job_id} (schedule {job['schedule_id'] or '-'}): {states}")
    for r in job["runs"]:
        print(f"  {r['target_name'] or r['target_id']}: run {r['id']} {r['kind']} {r['state']}"
              + (f" ({r['error']})" if r.get("error") else ""))


@schedule_app.command("remove")
def schedule_remove(schedule_id: Annotated[str, typer.Argument(help="schedule id")], json_out: JsonFlag = False,
                    store: StoreOpt = None) -> None:
    """Stop a schedule (its past runs stay)."""
    open_service(store, quiet=True).remove_schedule(schedule_id)
    emit({"removed": schedule_id}) if json_out else print(f"removed schedule {schedule_id}")


def register(app: typer.Typer) -> None:
    app.add_typer(schedule_app, name="schedule")
