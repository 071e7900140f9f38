"""The ``advisor`` command (Typer). Commands parse flags, call one service method, render the result.

``--json`` prints exactly one JSON document on stdout; progress goes to stderr. Errors print one line on stderr
(``error: ...``) and exit non-zero: 1 for an error of the advisor or its target, 2 for a usage error.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from enum import Enum
from typing import Annotated

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError  # typer >= 0.20 vendors click
from rich.console import Console

from advisor.cli import learned_commands, render, rewrite_commands, train_commands
from advisor.cli.bench_commands import bench_app
from advisor.cli.common import (EngineOpt, JsonFlag, RegisterOpt, StoreOpt, observation_doc, optimizer_choice,
                               parse_plan, rec_doc, resolve_dsn)
from advisor.cli.common import TargetDsn as Target
from advisor.cli.common import emit as _emit_json
from advisor.cli.common import names as _names
from advisor.cli.common import open_service as _service
from advisor.cli.service_commands import register
from advisor.core.errors import AdvisorError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="db-advisor: ML tuning advisor for PostgreSQL and MariaDB. Observes a workload, proposes changes, "
                       "validates them on a shadow instance, and recommends.")
tune_app = typer.Typer(help="Propose and validate changes for a target: `advisor tune --target DSN` runs the whole "
                            "advisor (indexes, rewrites, knobs, then the changes measured together); `advisor tune "
                            "knobs|indexes` runs one kind with all its options.")
app.add_typer(tune_app, name="tune")
app.add_typer(bench_app, name="bench")

KnobOptimizer, IndexOptimizer = optimizer_choice("knobs"), optimizer_choice("indexes")  # the registry's


class Storage(str, Enum):
    ssd = "ssd"
    hdd = "hdd"
    san = "san"


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


def _objectives() -> type[Enum]:
    from advisor.service.runs import kinds

    return Enum("Objective", {o: o for o in kinds.get("knobs").choices["objective"]}, type=str)  # type: ignore


Objective = _objectives()  # the knob kind's objectives, as REST lists them


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
    if json_out:
        _emit_json(_whole_doc(service, result))
    else:
        render.whole_result(Console(), result)


def _whole_doc(service, result) -> dict:
    from advisor.service.runs import kinds

    return {**kinds.get("all").outcome(result),
            "recommendations": [rec_doc(service, r) for r in result.recommendations], "shadow": service.last_shadow}


@tune_app.command("knobs")
def tune_knobs(target: Target = None,
               optimizer: Annotated[KnobOptimizer, typer.Option(
                   help="knob optimizer: a search run on a shadow, or rules (one configuration)")] = "hibo",
               json_out: JsonFlag = False,
               trials: Annotated[int, typer.Option(help="trials of a search run (baseline and seeds included)", min=2)] = 30,
               seeds: Annotated[int, typer.Option(help="seed configurations tried first (LLM or rules); 0 = none", min=0)] = 3,
               include: Annotated[list[str], typer.Option(help="knobs to add to the searched space (repeat or comma-separate)")] = [],  # noqa: B006
               exclude: Annotated[list[str], typer.Option(help="knobs to leave out of the searched space")] = [],  # noqa: B006
               range_: Annotated[list[str], typer.Option("--range", help="narrow a knob's range: NAME=LOW:HIGH")] = [],  # noqa: B006
               allow_durability: Annotated[bool, typer.Option(help="also search fsync, synchronous_commit, full_page_writes")] = False,
               allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", "--allow-unsafe-knobs", help="let --include name knobs that change correctness (autovacuum, session_replication_role, foreign_key_checks, ...)")] = False,
               objective: Annotated[Objective, typer.Option(help="minimize weighted latency, or maximize throughput")] = Objective.latency,
               repeats: Annotated[int, typer.Option(help="executions of each statement per trial (median)", min=1)] = 3,
               seed: Annotated[int, typer.Option(help="random seed of the search")] = 0,
               resume: Annotated[str | None, typer.Option(help="continue an interrupted tuning run by its id")] = None,
               rounds: Annotated[int, typer.Option(help="interleaved A/B rounds of the final validation", min=1)] = 5,
               validate: Annotated[bool, typer.Option(help="validate on a shadow before recommending")] = True,
               sample_percent: Annotated[float | None, typer.Option(
                   help="load the shadow with this percentage of large tables", min=0.001, max=100)] = None,
               recheck: Annotated[bool, typer.Option(help="re-measure a validated recommendation on a freshly built "
                                                          "shadow: the share of its gain that holds")] = False,
               memory_gb: Annotated[float | None, typer.Option(help="server RAM for this run (default: stored with the target, else read from the server)", min=0.1)] = None,
               cores: Annotated[int | None, typer.Option(help="server cores for this run (default: as for --memory-gb)", min=1)] = None,
               storage: Annotated[Storage | None, typer.Option(help="server storage kind")] = None,
               register: RegisterOpt = None, store: StoreOpt = None) -> None:
    """Recommend settings for a target: a search on a shadow instance (or one rule-based configuration),
    validated against the current settings before it is recommended."""
    from advisor.core.hardware import resolve
    plan = parse_plan({"kind": "knobs", "optimizer": optimizer.value, "trials": trials, "seeds": seeds, "seed": seed,
                       "repeats": repeats, "rounds": rounds, "validate": validate,
                       "sample_percent": sample_percent, "recheck": recheck, "include": _names(include),
                       "exclude": _names(exclude), "range": _names(range_), "allow_durability": allow_durability,
                       "allow_unsafe": allow_unsafe, "objective": objective.value})
    target = resolve_dsn(target)
    service = _service(store)
    hw = resolve(memory_gb, cores, storage.value if storage else None)
    result = service.tune("knobs", target, plan, register=register, by_hand=False, hardware=hw, resume=resume)
    if json_out:
        _emit_json(_tune_doc(service, result))
    else:
        render.tune_result(Console(), result)


def _tune_doc(service, result) -> dict:
    rec = result.recommendation
    return {"recommendation": rec_doc(service, rec), "reasons": result.reasons,
            "message": result.message, "workload_kind": result.observation.workload_kind,
            "not_replayed": [{"statement": s, "reason": r} for s, r in result.skipped],
            "run_id": result.run_id, "findings": list(result.findings), "dropped": list(result.dropped),
            "objective_unit": result.summary.get("objective_unit"),  # what each trial's objective is measured in
            "trials": [{"number": t.number, "source": t.source, "config": t.config, "status": t.result.status,
                        "objective": t.result.objective, "reason": t.result.reason,
                        "duration_s": round(t.duration_s, 3)} for t in result.trials],
            "shadow": service.last_shadow}  # how its shadows were made: thin clone, full or sampled copy


@tune_app.command("indexes")
def tune_indexes(budget_mb: Annotated[float | None, typer.Option("--budget-mb", help="storage for new indexes, "
                                                                 "MiB; needed unless --resume", min=0.001)] = None,
                 target: Target = None,
                 optimizer: Annotated[IndexOptimizer, typer.Option(help="index optimizer")] = "ia2",
                 json_out: JsonFlag = False,
                 device: Annotated[str | None, typer.Option(help="IA2 training device: auto (CUDA when present), cpu, "
                                                               "cuda (default: ADVISOR_DEVICE)")] = None,
                 episodes: Annotated[int, typer.Option(help="IA2 training episodes (when no model is stored)", min=1)] = 300,
                 retrain: Annotated[bool, typer.Option(help="train IA2 again even if this target has a model")] = False,
                 samples: Annotated[int, typer.Option(help="IA2 rollouts sampled from the policy besides the greedy "
                                                           "one (more: closer to optimal, slower)", min=0)] = 48,
                 max_width: Annotated[int, typer.Option(help="columns per candidate index", min=1, max=3)] = 3,
                 seed: Annotated[int, typer.Option(help="random seed")] = 0,
                 rounds: Annotated[int, typer.Option(help="interleaved A/B rounds of the validation", min=1)] = 5,
                 validate: Annotated[bool, typer.Option(help="build and measure the indexes on a shadow")] = True,
                 sample_percent: Annotated[float | None, typer.Option(
                     help="load the shadow with this percentage of large tables", min=0.001, max=100)] = None,
                 recheck: Annotated[bool, typer.Option(help="re-measure a validated recommendation on a freshly "
                                                            "built shadow: the share of its gain that holds")] = False,
                 explain: Annotated[bool, typer.Option("--explain", help="print, per observed statement, its bound "
                                                       "constants, candidates, what-if costs and why each candidate "
                                                       "was or was not chosen")] = False,
                 resume: Annotated[str | None, typer.Option(help="continue an interrupted index run by its id, with "
                                                                 "the options it was started with: the validation "
                                                                 "passes it finished are reused, not measured "
                                                                 "again")] = None,
                 register: RegisterOpt = None, store: StoreOpt = None) -> None:
    """Recommend indexes within a storage budget: what-if costs on a shadow (HypoPG; MariaDB: IGNORED indexes
    built there), the optimizer's choice, then each index built and measured on the shadow; an index that slows a
    statement or helps none is dropped. `--explain` prints why, per statement (the JSON output always has it)."""
    target = resolve_dsn(target)
    service = _service(store)
    if resume:
        plan = service.resumed_plan(resume, "indexes")
    elif budget_mb is None:
        raise typer.BadParameter("--budget-mb is needed (unless --resume continues a stored run)")
    else:
        plan = parse_plan({"kind": "indexes", "optimizer": optimizer.value, "budget_mb": budget_mb,
                           "episodes": episodes, "samples": samples, "seed": seed, "rounds": rounds,
                           "validate": validate, "sample_percent": sample_percent, "recheck": recheck,
                           "max_width": max_width, "retrain": retrain})
    result = service.tune("indexes", target, plan, register=register, by_hand=False, device=device, resume=resume)
    if json_out:
        rec = result.recommendation
        texts = {row["queryid"]: row["statement"] for row in result.explain}
        _emit_json({"recommendation": rec_doc(service, rec), "message": result.message,
                    "chosen": [{"table": f"{ix.schema}.{ix.table}", "columns": list(ix.columns)} for ix in result.chosen],
                    "whatif": result.whatif, "training": result.training,
                    "not_parsed": [{"queryid": q, "sql": texts.get(q), "reason": r} for q, r in result.skipped],
                    "explain": list(result.explain), "fallback": result.fallback,
                    "dropped": list(result.dropped), "shadow": service.last_shadow})
    else:
        render.index_result(Console(), result)
        if explain:
            render.index_explain(Console(), list(result.explain))


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
    if json_out:
        _emit_json(_whole_doc(service, result))
    else:
        render.whole_result(Console(), result, demo=True)


rewrite_commands.register(app)
train_commands.register(app)
learned_commands.register(tune_app)
register(app)  # the service's groups: serve, playground, targets, runs, recommendations, schedule, tokens


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
