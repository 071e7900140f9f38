"""The kind registry: one entry per kind of tuning (knobs, indexes, rewrites, the whole advisor, a learned index's parameters), listed in an
explicit tuple as the optimizers of each kind are. An entry holds what every adapter needs to know about its kind:
its change types, its optimizers, the plan options it takes (``advisor.tuning.plan.OPTIONS``), its pipeline
(``run``: a ``Context`` and a ``RunPlan`` in, a result with ``recommendation`` and ``message`` out) and its
lifecycle (applied to production, or handed over to people). The service's ``tune(kind, ...)``, ``RunPlan``, the
REST schemas, the CLI's choices and the web forms are derived from this list, so a new kind is one entry here
plus its pipeline.

>>> names()
('knobs', 'indexes', 'rewrites', 'all', 'learned-index')
>>> get("indexes").default_optimizer, get("rewrites").lifecycle
('ia2', 'handed over')
"""

from __future__ import annotations

from advisor.core.errors import AdvisorError
from advisor.core.names import did_you_mean
from advisor.tuning.kind import Context, Kind

__all__ = ["Context", "Kind", "get", "kinds", "names", "register"]


def _registry() -> tuple[Kind, ...]:
    from advisor.tuning.indexes.kind import KIND as INDEXES
    from advisor.tuning.knobs.kind import KIND as KNOBS
    from advisor.tuning.learned.kind import KIND as LEARNED_INDEX
    from advisor.tuning.rewrites.kind import KIND as REWRITES
    from advisor.tuning.whole.kind import KIND as ALL

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

