"""``advisor rewrite``: faster SQL for given statements or the observed workload, each proven equivalent by
execution and timed on a shadow (``AdvisorService.tune_rewrites``). A thin adapter: parse flags, call the
service, render a table or print one JSON document (``--json``: exactly ``{"statements": [...], "shadow": {...}}``,
the shadow's method named)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import UsageError  # typer >= 0.20 vendors click

from advisor.cli.common import (JsonFlag, RegisterOpt, StoreOpt, click_context, open_service, optimizer_choice,
                                parse_plan, resolve_dsn, show_result)
from advisor.cli.common import TargetDsn as Target
from advisor.core.errors import AdvisorError

RewriteOptimizer = optimizer_choice("rewrites")  # the registry's


def rewrite(target: Target = None,
            sql: Annotated[str | None, typer.Option("--sql", help="the statement(s) to rewrite, constants written in "
                                                              "(several separated by ;)")] = None,
            file: Annotated[Path | None, typer.Option("--file", help="a file of statements separated by ;")] = None,
            workload: Annotated[bool, typer.Option("--workload", help="the observed workload's heaviest statements "
                                                                     "(bound to the constants of a real call)")]
            = False,
            optimizer: Annotated[RewriteOptimizer, typer.Option(
                help="rewrite search (aurora: learned)")] = "aurora",
            rounds: Annotated[int, typer.Option(help="interleaved timing rounds on the shadow", min=1)] = 5,
            validate: Annotated[bool, typer.Option(help="time the rewrites against the originals on a shadow "
                                                        "(equivalence is always checked)")] = True,
            max_statements: Annotated[int, typer.Option(help="--workload: how many of the heaviest", min=1)] = 20,
            seed: Annotated[int, typer.Option(help="random seed")] = 0,
            resume: Annotated[str | None, typer.Option(help="continue an interrupted rewrite run by its id, with "
                                                            "the options it was started with: the races it "
                                                            "finished are reused, not timed again")] = None,
            json_out: JsonFlag = False, register: RegisterOpt = None, store: StoreOpt = None) -> None:
    """Rewrite slow SQL into faster SQL that returns the same rows: equality saturation over relational rules, the
    candidates re-ranked by the planner, proven equivalent on edge-case databases and on a shadow, and timed
    against the original there. Nothing is applied to the database."""
    if resume is None and sum([sql is not None, file is not None, workload]) != 1:
        raise typer.BadParameter("give exactly one of --sql, --file or --workload (or --resume RUN)")
    if file is not None:
        try:
            sql = file.read_text()
        except OSError as e:
            raise AdvisorError(f"cannot read {file}: {e.strerror}") from None
    if sql is not None and not sql.strip():  # blank is not "the workload": that is --workload, said explicitly
        where = f"--file {file}" if file is not None else "--sql"
        raise UsageError(f"{where} holds no SQL: give the statements to rewrite, or --workload for the observed "
                         f"workload's heaviest", ctx=click_context())
    target = resolve_dsn(target)
    service = open_service(store)  # progress on stderr, also with --json
    if resume:
        plan = service.resumed_plan(resume, "rewrites")
    else:
        plan = parse_plan({"kind": "rewrites", "optimizer": optimizer.value, "max_statements": max_statements,
                           "seed": seed, "rounds": rounds, "validate": validate, "sql": sql})
    # given SQL the target refuses: refused before any work
    result = service.tune("rewrites", target, plan, register=register, by_hand=False, resume=resume)
    show_result(service, "rewrites", result, json_out)


def register(app: typer.Typer) -> None:
    app.command("rewrite")(rewrite)
