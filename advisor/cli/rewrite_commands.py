"""``advisor rewrite``: the rewrite kind's generated command (``advisor tune rewrites``, ``tune_commands``: its
options, defaults and help from the kind's plan, run by ``AdvisorService.tune``) under the name a DBA reaches for,
with two ways to say what to rewrite besides ``--sql``: ``--file`` (statements read from a file) and ``--workload``
(the observed workload's heaviest, said explicitly). Exactly one of the three (or ``--resume``); a blank one is
refused in one line before any work. ``--json`` prints exactly ``{"statements": [...], "shadow": {...}}``."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import UsageError  # typer >= 0.20 vendors click

from advisor.cli.common import click_context
from advisor.core.errors import AdvisorError

INPUTS = [
    inspect.Parameter("file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Path | None, typer.Option("--file", help="a file of statements separated by ;")]),
    inspect.Parameter("workload", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[
        bool, typer.Option("--workload", help="the observed workload's heaviest statements (bound to the constants "
                                              "of a real call)")]),
]


def rewrite_command():
    """``advisor rewrite``: the rewrite kind's command with ``--file`` and ``--workload``."""
    from advisor.cli.tune_commands import command_for
    from advisor.service.runs import kinds

    tune = command_for(kinds.get("rewrites"))

    def rewrite(*, file: Path | None = None, workload: bool = False, **values) -> None:
        sql = values.get("sql")
        if values.get("resume") is None and sum([sql is not None, file is not None, workload]) != 1:
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
        tune(**{**values, "sql": sql})

    rewrite.__signature__ = inspect.Signature([*inspect.signature(tune).parameters.values(), *INPUTS])
    rewrite.__doc__ = ("Rewrite slow SQL into faster SQL that returns the same rows: equality saturation over "
                       "relational rules, the candidates re-ranked by the planner, proven equivalent on edge-case "
                       "databases and on a shadow, and timed against the original there. Nothing is applied to the "
                       "database (the same run as `advisor tune rewrites`).")
    return rewrite


def register(app: typer.Typer) -> None:
    app.command("rewrite")(rewrite_command())
