"""The ``advisor`` command (Typer). Commands parse flags, call one service method, render the result.

``--json`` prints exactly one JSON document on stdout; progress goes to stderr. Errors print one line on stderr
(``error: ...``) and exit non-zero: 1 for an error of the advisor or its target, 2 for a usage error.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Annotated

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError  # typer >= 0.20 vendors click
from rich.console import Console

from advisor.cli import (recommendations_commands, render, rewrite_commands, runs_commands, schedule_commands,
                         server_commands, targets_commands, tokens_commands, train_commands, tune_commands)
from advisor.cli.bench_commands import bench_app
from advisor.cli.common import (EngineOpt, JsonFlag, RegisterOpt, StoreOpt, observation_doc,
                               parse_plan, resolve_dsn, show_result)
from advisor.cli.common import TargetDsn as Target
from advisor.cli.common import emit as _emit_json
from advisor.cli.common import names as _names
from advisor.cli.common import open_service as _service
from advisor.core.errors import AdvisorError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="db-advisor: ML tuning advisor for PostgreSQL and MariaDB. Observes a workload, proposes changes, "
                       "validates them on a shadow instance, and recommends.")
tune_app = typer.Typer(help="Propose and validate changes for a target: `advisor tune --target DSN` runs the whole "
                            "advisor (indexes, rewrites, knobs, then the changes measured together); `advisor tune "
                            "KIND` runs one kind with all its options.")
app.add_typer(tune_app, name="tune")
app.add_typer(bench_app, name="bench")

@app.command()
def observe(target: Target = None, json_out: JsonFlag = False, interval: Annotated[float, typer.Option(
        help="seconds between two snapshots; 0 = everything since the last stats reset", min=0)] = 0.0,
        top: Annotated[int, typer.Option(help="statements to list", min=1)] = 10, register: RegisterOpt = None,
        store: StoreOpt = None) -> None:
    """Snapshot a database: workload (the engine's statement statistics), metrics, settings, schema and indexes. Stored under the
    registered target of that database, whatever DSN reaches it; an unregistered one is shown, not stored
    (--register NAME registers it)."""
    target = resolve_dsn(target)
    service = _service(store)  # progress on stderr, also with --json (an --interval waits)
    obs = service.observe(target, interval_s=interval, register=register, by_hand=False)
    if json_out:
        _emit_json(observation_doc(obs))
    else:
        render.observation(Console(), obs, top)


@tune_app.callback(invoke_without_command=True)
def tune_all(ctx: typer.Context, target: Target = None,
             kinds: Annotated[list[str], typer.Option(help="what to tune, in this order: indexes, rewrites, knobs "
                                                          "(repeat or comma-separate; default: all three)")] = [],  # noqa: B006
             budget_mb: Annotated[float | None, typer.Option("--budget-mb", help="MiB of new indexes (default: a "
                                                                                "quarter of the database's size)")]
             = None,
             trials: Annotated[int, typer.Option(help="trials of the knob search", min=2)] = 30,
             max_statements: Annotated[int, typer.Option(help="the heaviest statements to rewrite", min=1)] = 20,
             rounds: Annotated[int, typer.Option(help="interleaved A/B rounds of each validation", min=1)] = 5,
             sample_percent: Annotated[float | None, typer.Option(
                 help="load the shadows with this percentage of large tables", min=0.001, max=100)] = None,
             json_out: JsonFlag = False, register: RegisterOpt = None, store: StoreOpt = None) -> None:
    """Without a kind: the whole advisor in one run. Indexes, then rewrites of what is still slow (with the new
    indexes on the shadow), then knobs on a shadow that has them; finally the validated changes are measured
    together on a fresh shadow, each kept only if it pays in the bundle."""
    if ctx.invoked_subcommand is not None:
        return
    plan = parse_plan({"kind": "all", "kinds": _names(kinds), "budget_mb": budget_mb, "trials": trials,
                       "max_statements": max_statements, "rounds": rounds, "sample_percent": sample_percent})
    target = resolve_dsn(target)
    service = _service(store)  # progress on stderr, also with --json
    result = service.tune("all", target, plan, register=register, by_hand=False)
    show_result(service, "all", result, json_out)


@app.command()
def demo(scale: Annotated[float, typer.Option(help="TPC-H scale factor", min=0.001, max=10)] = 0.02,
         rounds: Annotated[int, typer.Option(help="interleaved A/B rounds of each validation", min=1)] = 5,
         streams: Annotated[int, typer.Option(help="TPC-H streams run as the workload", min=1)] = 2,
         trials: Annotated[int, typer.Option(help="trials of the knob search", min=2)] = 8,
         engine: EngineOpt = "postgres", json_out: JsonFlag = False, store: StoreOpt = None) -> None:
    """The whole advisor on a self-started "production" server of --engine (TPC-H + ORM-style reports), end to end:
    indexes, rewrites, knobs, then the changes measured together; starts and stops its own servers."""
    from advisor.bench.demo import DemoOptions, run_demo

    service = _service(store)
    result = run_demo(service, DemoOptions(scale=scale, streams=streams, rounds=rounds, trials=trials, engine=engine),
                      say=service.say)
    show_result(service, "all", result, json_out, demo=True)


rewrite_commands.register(app)
train_commands.register(app)
tune_commands.register(tune_app)
# one module per command group (each its ``register``): the server and the playground, then the service's records
for group in (server_commands, targets_commands, runs_commands, recommendations_commands, schedule_commands,
              tokens_commands):
    group.register(app)


def _exit_on_signals() -> None:
    """Make SIGTERM and SIGHUP exit normally (SIGINT already raises KeyboardInterrupt), so that the exit hooks
    run: sandboxes and shadows started by the command are stopped."""

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError):
            signal.signal(sig, _exit)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command; turn every error into one line on stderr; known library warnings are kept
    off the terminal (``advisor.core.quiet``)."""
    from advisor.core import quiet
    from advisor.core.settings import get_settings

    quiet.install()
    _exit_on_signals()
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="advisor", standalone_mode=False)
        return code if isinstance(code, int) else 0  # a command's typer.Exit(n) arrives here as n
    except typer.Exit as e:
        return e.exit_code
    except NoArgsIsHelpError as e:
        print(e.ctx.get_help() if e.ctx else "see advisor --help")
        return 0
    except UsageError as e:
        hint = f" (see advisor {e.ctx.command_path.split(' ', 1)[1] + ' ' if e.ctx and ' ' in e.ctx.command_path else ''}--help)"
        print(f"error: {e.format_message()}{hint}", file=sys.stderr)
        return 2
    except typer.Abort:
        print("error: interrupted", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("error: interrupted; servers started by this command were stopped", file=sys.stderr)
        return 130
    except AdvisorError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return e.exit_code
    except Exception as e:  # noqa: BLE001 - last resort: one line, traceback only on request
        if get_settings().debug:
            raise
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"error: internal error ({type(e).__name__}: {first}); set ADVISOR_DEBUG=1 for a traceback",
              file=sys.stderr)
        return 1


def run() -> None:
    sys.exit(main())
