"""The kind registry: one entry per kind of tuning (knobs, indexes, rewrites, the whole advisor, a learned index's parameters), listed in an
explicit tuple as the optimizers of each kind are. An entry holds what every adapter needs to know about its kind:
its change types, its optimizers, its plan (a ``plan.RunPlan`` class of its own options), its pipeline
(``run``: a ``Context`` and its plan in, a result with ``recommendation`` and ``message`` out) and its
lifecycle (applied to production, or handed over to people). The service's ``tune(kind, ...)``, the plans of every
face (``parse_plan``, ``plan_of``, ``stored_plan``, ``checked``), the REST schemas, the CLI's choices and the web
forms are derived from this list, so a new kind is one entry here plus its folder.

>>> names()
('knobs', 'indexes', 'rewrites', 'all', 'learned-index')
>>> get("indexes").default_optimizer, get("rewrites").lifecycle
('ia2', 'handed over')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from advisor.core.errors import AdvisorError
from advisor.core.names import did_you_mean
from advisor.tuning.kind import Context, Kind
from advisor.tuning.plan import COMMON, Option, RunPlan, coerce

__all__ = ["Context", "Kind", "all_options", "checked", "get", "kinds", "names", "parse_plan", "plan_of",
           "register", "stored_plan"]


def _registry() -> tuple[Kind, ...]:
    from advisor.tuning.indexes.kind import KIND as INDEXES
    from advisor.tuning.knobs.kind import KIND as KNOBS
    from advisor.tuning.learned_index.kind import KIND as LEARNED_INDEX
    from advisor.tuning.rewrites.kind import KIND as REWRITES
    from advisor.tuning.all.kind import KIND as ALL

    return (KNOBS, INDEXES, REWRITES, ALL, LEARNED_INDEX)


_KINDS: list[Kind] = []


def kinds() -> tuple[Kind, ...]:
    """Every kind, in its listed order (loaded on first use). A kind's module imports its pipeline inside ``run``:
    the CLI builds its options from this list on every call, and the pipelines (optimizers, egglog) take about a
    second to import."""
    if not _KINDS:
        _KINDS.extend(_registry())
    return tuple(_KINDS)


def names() -> tuple[str, ...]:
    return tuple(k.name for k in kinds())


def get(name: str) -> Kind:
    """The kind ``name``; AdvisorError naming the kinds there are."""
    for kind in kinds():
        if kind.name == name:
            return kind
    raise AdvisorError(f"unknown run kind {name!r}{did_you_mean(name, names())}; expected one of "
                       f"{', '.join(names())}")


def register(kind: Kind) -> None:
    """Add a kind (a plugin's or a test's) after the listed ones; adapters built afterwards show it."""
    if kind.name in names():
        raise AdvisorError(f"a kind named {kind.name!r} is registered already")
    _KINDS.append(kind)


# --- plans: every face's, through the kind's own plan class ---------------------------------------------------


def plan_of(kind: str, **fields) -> RunPlan:
    """The plan of ``kind`` (its own class) with ``fields``, unchecked."""
    return get(kind).plan(kind=kind, **fields)


def parse_plan(fields: Mapping[str, object], *, remote: bool = False) -> RunPlan:
    """The checked plan of loosely typed fields, the one parser of every face: a web form's strings (blank means
    the default), JSON's or the CLI's numbers and booleans (None means the default). Options of other kinds are
    left out (a form sends every field); a name no kind takes is refused. AdvisorError naming the first bad
    field. ``remote``: see ``checked``.

    >>> parse_plan({"kind": "indexes", "budget_mb": "50", "trials": "12"}).budget_mb  # a knob option: left out
    50.0
    """
    _known(fields)
    kind = coerce("kind", fields.get("kind"), None)
    if kind is None:
        raise AdvisorError(f"choose what to tune: {', '.join(names())}")
    return checked(get(kind).plan.from_values(kind, fields), remote=remote)


def stored_plan(d: Mapping[str, object]) -> RunPlan:
    """A stored plan (``RunPlan.to_dict``) as its kind's class, unchecked; what its kind does not take (an older
    version's option, a knob run's own record of its space) is left out."""
    return get(str(d["kind"])).plan.from_stored(d)


def checked(plan: RunPlan, *, remote: bool = False) -> RunPlan:
    """``plan`` checked by its kind (``Kind.checked``), its defaults filled in."""
    return get(plan.kind).checked(plan, remote=remote)


def all_options() -> dict[str, Option]:
    """Every option some kind takes (the common ones first): what the CLI's ``runs start`` and the web forms
    offer (each kind then reads its own). A name whose meaning differs between kinds says each with its kinds."""
    found = dict(RunPlan.options())
    meanings: dict[str, dict[str, list[str]]] = {}
    for kind in kinds():
        for name, o in kind.plan.options().items():
            found.setdefault(name, o)
            if name not in COMMON:
                meanings.setdefault(name, {}).setdefault(o.help, []).append(kind.name)
    for name, by_help in meanings.items():
        if len(by_help) > 1:
            found[name] = dataclasses.replace(found[name], help="; ".join(f"{', '.join(ks)}: {h}"
                                                                          for h, ks in by_help.items()))
    return found


def _known(fields: Mapping[str, object]) -> None:
    unknown = sorted(set(fields) - {"kind"} - set(all_options()))
    if unknown:
        raise AdvisorError(f"unknown run option(s): {', '.join(unknown)}")
