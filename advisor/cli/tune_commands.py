"""``advisor tune <kind>``: one command per kind of the registry, generated from it (``advisor.tuning.kinds``): an
``--option`` per option of the kind's plan (its help, bounds and choices; left out: the kind's default), per input
it takes from a command line besides its plan (``Kind.inputs``: a knob run's hardware) and per switch of what its
report shows (``Kind.displays``: an index run's ``--explain``); ``--resume`` continues an interrupted run with the
plan it was started with. The result is drawn by the kind's faces (``common.show_result``). A kind registered by a
plugin gets its command the same way; the whole run (``all``) is ``advisor tune`` itself.

>>> from advisor.service.runs import kinds
>>> names = [p.name for p in _parameters(kinds.get("knobs"))]
>>> names[:5], "trials" in names, "memory_gb" in names, "budget_mb" in names
(['target', 'json_out', 'register', 'store', 'resume'], True, True, False)
"""

from __future__ import annotations

import inspect
from enum import Enum
from typing import Annotated

import typer

from advisor.cli.common import (DSN_FORMS, TARGET_ENV, JsonFlag, RegisterOpt, StoreOpt, TargetDsn, names,
                                open_service, parse_plan, resolve_dsn, show_result)

TYPES = {"int": int, "float": float, "bool": bool, "text": str, "names": list[str]}
FIXED = ("target", "json_out", "register", "store", "resume")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _option(name: str, o, kind, *, required: bool = False) -> inspect.Parameter:
    """A Typer option of a plan option or an input (``plan.Option``): its flag, type (a kind's choices as an enum),
    help and bounds; None by default (the kind's default), a switch ``--x/--no-x``."""
    choices = kind.choices.get(name)
    if choices and o.type == "text":
        kind_of = Enum(f"{name.title().replace('_', '')}Choice", {c: c for c in choices}, type=str)
    elif name == "optimizer" and kind.optimizer_names():
        kind_of = Enum(f"{kind.name.title().replace('-', '')}Optimizer", {n: n for n in kind.optimizer_names()},
                       type=str)
    else:
        kind_of = TYPES[o.type]
    decls = (f"{_flag(name)}/--no-{name.replace('_', '-')}",) if o.type == "bool" else (_flag(name),)
    low, high = o.bounds or (None, None)
    bounds = {"min": low, "max": high} if o.type == "int" and o.bounds else {}
    shown = o.help + ("; needed unless --resume" if required else "")
    default = o.default if o.type == "bool" and name in {d.name for d in kind.displays} else None
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[kind_of | None, typer.Option(*decls, help=shown,
                                                                              show_default=False, **bounds)])


def _parameters(kind) -> list[inspect.Parameter]:
    target_help = (f"the database: a registered target's name, or {DSN_FORMS} (default: {TARGET_ENV})"
                   + ("; a plan that needs no database (the kind says which) runs without one, under a target "
                      "of its own" if kind.own_target is not None else ""))
    fixed = [("target", Annotated[str | None, typer.Option("--target", "-t", help=target_help)] if kind.own_target
              is not None else TargetDsn, None), ("json_out", JsonFlag, False), ("register", RegisterOpt, None),
             ("store", StoreOpt, None),
             ("resume", Annotated[str | None, typer.Option(help="continue an interrupted run by its id, with the "
                                                                "options it was started with: what it finished is "
                                                                "reused, not measured again")], None)]
    params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a) for n, a, d in fixed]
    required = set(kind.required)
    params += [_option(name, o, kind, required=name in required) for name, o in kind.plan.options().items()]
    params += [_option(o.name, o, kind) for o in (*kind.inputs, *kind.displays)]
    return params


def command_for(kind):
    """The ``advisor tune <kind>`` command of ``kind`` (a registry entry)."""

    def tune(**values) -> None:
        target, json_out, register, store, resume = (values.pop(n) for n in FIXED)
        plan_fields = {n: values.pop(n) for n in kind.plan.options()}
        displays = {o.name: bool(values.pop(o.name)) for o in kind.displays}
        given = {n: (v.value if isinstance(v, Enum) else v) for n, v in values.items()}
        service = open_service(store)  # progress on stderr, also with --json
        if resume:
            plan = service.resumed_plan(resume, kind.name)
        else:
            missing = [_flag(n) for n in kind.required if plan_fields.get(n) is None]
            if missing:
                raise typer.BadParameter(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} needed "
                                         "(unless --resume continues a stored run)")
            fields = {n: (v.value if isinstance(v, Enum) else names(v) if isinstance(v, list) else v)
                      for n, v in plan_fields.items()}
            plan = parse_plan({"kind": kind.name, **fields})
        if kind.own_target is None or target or _env_target():
            target = resolve_dsn(target)
        result = service.tune(kind.name, target, plan, register=register, by_hand=False, resume=resume,
                              **kind.taken(given))
        show_result(service, kind.name, result, json_out, **displays)

    tune.__signature__ = inspect.Signature(_parameters(kind))
    tune.__doc__ = f"{kind.summary[:1].upper()}{kind.summary[1:]}."
    tune.__name__ = f"tune_{kind.name.replace('-', '_')}"
    return tune


def _env_target() -> bool:
    import os

    return bool(os.environ.get(TARGET_ENV, "").strip())


def register(app: typer.Typer) -> None:
    """One ``tune`` sub-command per kind (the whole run, which runs the others, is the group itself)."""
    from advisor.service.runs import kinds

    for kind in kinds.kinds():
        if not kind.composite:
            app.command(kind.name)(command_for(kind))
