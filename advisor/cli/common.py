"""What every CLI module shares: the ``--json``, ``--store`` and ``--register`` options, the service (from
``advisor.service.factory``), one JSON document on stdout (a recommendation with its headline numbers:
``rec_doc``; an observation: ``observation_doc``), times, repeatable options that take comma lists, run plans
from options (``parse_plan``: a refused value is a usage error, exit 2) and optimizer choices from the registry
(``optimizer_choice``), and ``resolve_dsn``: where a DSN option's value comes from (so that a password need not
be in argv, where ``ps`` shows it)."""

from __future__ import annotations

import json
import os
import stat
import sys
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated

import typer
from typer._click.exceptions import UsageError  # typer >= 0.20 vendors click

from advisor.core.progress import reporter
from advisor.service import summary
from advisor.storage import codec

JsonFlag = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
StoreOpt = Annotated[str | None, typer.Option("--store", help="the store: a DuckDB file path, or a postgresql:// URL "
                                                            "shared by several processes (default: ADVISOR_STORE)")]

EngineOpt = Annotated[str, typer.Option("--engine", help="the database engine of the servers it starts for itself: "
                                                        "postgres, or mariadb once the advisor supports it")]

TARGET_ENV = "ADVISOR_TARGET_DSN"
DSN_FORMS = (f"a PostgreSQL DSN (postgresql://user@host:5432/db or libpq key=value pairs) or a MariaDB URL "
             f"(mariadb://user@host:3306/db), or where to read it so that a password stays out of argv (ps): "
             f"env:VAR (an environment variable), file:PATH (its first line; the file must not be readable by "
             f"others: chmod 600), - (stdin); a PostgreSQL service (service=NAME) uses PGSERVICEFILE and PGPASSFILE")
TargetDsn = Annotated[str | None, typer.Option("--target", "-t", help=f"the database: a registered target's "
                                                                      f"name, or {DSN_FORMS} (default: {TARGET_ENV})")]


RegisterOpt = Annotated[str | None, typer.Option(
    "--register", help="register the --target database under this name when no target is registered for it (its "
                       "DSN stored encrypted); a database registered already is used under its name, whatever "
                       "DSN reaches it. Without it an unregistered database is observed but not stored, and not "
                       "tuned")]


def _kind_enum() -> type[Enum]:
    from advisor.service.runs import kinds

    return Enum("Kind", {name: name for name in kinds.names()}, type=str)  # type: ignore[return-value]


Kind = _kind_enum()  # the run kinds of the registry (advisor.tuning.kinds)


def optimizer_choice(kind: str) -> type[Enum]:
    """The listed optimizers of ``kind`` as the choices of an ``--optimizer`` option: its help and its error (a
    usage error, exit 2) name the same tuple, the registry's (``Kind.optimizer_names``)."""
    from advisor.service.runs import optimizer_names

    return Enum(f"{kind.capitalize()}Optimizer", {name: name for name in optimizer_names(kind)},  # type: ignore[return-value]
                type=str)


def parse_plan(fields: dict):
    """The run plan of a command's options (``RunPlan.parse``, the one parser of every adapter); a value it
    refuses is a usage error (exit 2), named as the plan names it."""
    from advisor.core.errors import AdvisorError
    from advisor.service.runs import kinds

    try:
        return kinds.parse_plan(fields)
    except AdvisorError as e:
        raise UsageError(e.message, ctx=click_context()) from None


def click_context():
    """The command being run (so a usage error names its ``--help``), or None outside one."""
    from typer._click.globals import get_current_context

    return get_current_context(silent=True)


def open_service(store: str | None, quiet: bool = False):
    """The service over the store (runs execute in this process), its progress on stderr unless ``quiet`` (for
    commands that only read the store; a command that observes or tunes reports progress also under ``--json``,
    whose document alone goes to stdout). While another process holds a DuckDB store, the service uses it through
    that process (``advisor.service.factory.build_service``)."""
    from advisor.service.factory import build_service

    return build_service(store, say=reporter(quiet=quiet))


def rec_doc(service, rec, head=None) -> dict | None:
    """A recommendation as JSON with its headline numbers (``summary``: ``AdvisorService.headline``, the REST
    API's, the predicted gain included); ``head``: those numbers when the caller has them. None for None."""
    if rec is None:
        return None
    return {**codec.recommendation_dict(rec), "summary": summary.document(head or service.headline(rec))}


def expanded(service, doc):
    """``doc`` with each ``Recommendation`` in it as JSON with its headline numbers (``rec_doc``)."""
    from advisor.core.domain import Recommendation

    if isinstance(doc, Recommendation):
        return rec_doc(service, doc)
    if isinstance(doc, dict):
        return {k: expanded(service, v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [expanded(service, v) for v in doc]
    return doc


def show_result(service, kind: str, result, json_out: bool, *, demo: bool = False, **displays) -> None:
    """A run's result as its kind's faces say (``Kind.document`` with ``--json``, with how its shadows were made;
    else ``Kind.report`` with ``displays`` (``Kind.displays``: an index run's ``explain``), drawn by
    ``render.report``; ``demo``: the demo's last screen)."""
    from rich.console import Console

    from advisor.cli import render
    from advisor.service.runs import kinds

    entry = kinds.get(kind)
    if json_out:
        doc = expanded(service, entry.documented(result))
        emit({**doc, "shadow": service.last_shadow} if entry.uses_shadows else doc)
    else:
        render.report(Console(), entry.shown(result, **displays), result=result, demo=demo)


def observation_doc(obs) -> dict:
    """An observation as JSON (``observe``, ``targets observe``): the snapshot's facts and each statement's
    ``queryid``, ``sql``, ``calls``, ``total_ms``, ``mean_ms``, ``rows`` and ``merged`` ids."""
    s = obs.snapshot
    return {"target_id": obs.target_id, "snapshot_id": obs.snapshot_id, "database": s.database,
            "server_version": s.server_version, "server": s.server, "workload_kind": obs.workload_kind,
            "workload": {"statements": [{**codec.plain(st), "mean_ms": st.mean_ms}
                                        for st in obs.workload.statements],
                         "interval_s": obs.workload.interval_s},
            "metrics": s.metrics, "tables": s.tables, "indexes": s.indexes, "settings_count": len(s.settings)}


def emit(doc: object) -> None:
    """``doc`` as the one JSON document on stdout."""
    sys.stdout.write(json.dumps(codec.plain(doc), indent=2, default=str) + "\n")


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if ts else "-"


def names(items: list[str]) -> tuple[str, ...]:
    """Values of a repeatable option that also takes comma lists: ``--kind knobs --kind indexes`` or
    ``--kind knobs,indexes``."""
    return tuple(n.strip() for item in items for n in item.split(",") if n.strip())


def resolve_dsn(value: str | None, option: str = "--target", *, ask: bool = False) -> str:
    """The DSN a DSN option stands for: ``env:VAR``, ``file:PATH`` (first line), ``-`` (a line of stdin, asked for
    without echo on a terminal), else the value itself; when the option is not given, ``ADVISOR_TARGET_DSN``,
    then (``ask``) stdin. Errors (exit 2) name the source, never the DSN. A regular file readable or writable by
    others is refused, as libpq refuses such a password file."""
    given = (value or "").strip()
    if not given:
        env = os.environ.get(TARGET_ENV, "").strip()
        if env:
            return env
        if ask:
            return _read_stdin(option)
        raise UsageError(f"no target database: give {option} (a DSN, env:VAR, file:PATH or -) or set {TARGET_ENV}")
    if given == "-":
        return _read_stdin(option)
    if given.startswith("env:"):
        name = given[4:].strip()
        dsn = os.environ.get(name, "").strip() if name else ""
        if not dsn:
            raise UsageError(f"{option} env:{name}: the environment variable {name or '(no name)'} is not set or "
                             f"empty")
        return dsn
    if given.startswith("file:"):
        return _read_file(option, given[5:].strip())
    return given


def _read_stdin(option: str) -> str:
    if sys.stdin is None or sys.stdin.closed:
        raise UsageError(f"{option} -: there is no stdin to read the DSN from")
    if sys.stdin.isatty():
        return typer.prompt("DSN (not echoed)", hide_input=True, err=True).strip()
    dsn = sys.stdin.readline().strip()  # piped: `secret-tool lookup ... | advisor observe --target -`
    if not dsn:
        raise UsageError(f"{option}: no DSN on stdin (give {option} a DSN, env:VAR or file:PATH, set {TARGET_ENV}, "
                         f"or pipe one line)")
    return dsn


def _read_file(option: str, path: str) -> str:
    where = f"{option} file:{path}"
    if not path:
        raise UsageError(f"{where}: no file name after file:")
    full = os.path.expanduser(path)
    try:
        with open(full, encoding="utf-8") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                raise UsageError(f"{where}: the file is accessible by other users (mode "
                                 f"{stat.S_IMODE(info.st_mode):04o}) and may hold a password; chmod 600 it")
            dsn = f.readline().strip()
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{where}: is a directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{where}: cannot read it ({getattr(e, 'strerror', None) or type(e).__name__})") from None
    if not dsn:
        raise UsageError(f"{where}: the file's first line is empty")
    return dsn


def plan_options(command):
    """Give a Typer command one ``--option`` per run plan option (``advisor.tuning.plan.all_options``, each with the
    kinds that take it in its help), derived from the kind registry like the REST schema and the web forms. The
    command receives them as ``plan_fields``: a dict for ``RunPlan.parse`` (None: the kind's default)."""
    import functools
    import inspect

    from advisor.service.runs import all_options, kinds

    options = all_options()

    types = {"int": int | None, "float": float | None, "bool": bool | None, "text": str | None,
             "names": list[str] | None}
    added = []
    for o in options.values():
        takers = [k.name for k in kinds.kinds() if o.name in k.options]
        flag = f"--{o.name.replace('_', '-')}"
        decls = (f"{flag}/--no-{o.name.replace('_', '-')}",) if o.type == "bool" else (flag,)
        shown = f"{o.help} ({', '.join(takers)})" if takers else o.help
        added.append(inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                       annotation=Annotated[types[o.type], typer.Option(*decls, help=shown,
                                                                                        show_default=False)]))
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "plan_fields"]

    @functools.wraps(command)
    def with_plan(**values):
        fields = {name: values.pop(name) for name in options}
        for name in (n for n, o in options.items() if o.type == "names"):  # repeatable, each may be a comma list
            if fields.get(name) is not None:
                fields[name] = names(fields[name])
        return command(plan_fields=fields, **values)

    with_plan.__signature__ = signature.replace(parameters=kept + added)
    return with_plan
