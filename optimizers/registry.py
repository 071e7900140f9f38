"""Every optimizer, listed: one ordered tuple per kind (``optimizers.knobs.OPTIMIZERS``,
``optimizers.indexes.OPTIMIZERS``, ``optimizers.learned_index.OPTIMIZERS``), as sqlglot lists its rules. Adding an optimizer is one module plus one entry
in its kind's tuple; nothing registers itself by side effect. The conformance suite runs over this list."""

from __future__ import annotations

import inspect

from advisor.core.errors import NotFound
from advisor.core.names import did_you_mean
from optimizers import indexes, knobs, learned_index, rewrites
from optimizers.base import Optimizer

OPTIMIZERS: dict[str, tuple[type[Optimizer], ...]] = {"knobs": knobs.OPTIMIZERS, "indexes": indexes.OPTIMIZERS,
                                                     "rewrites": rewrites.OPTIMIZERS,
                                                     "learned-index": learned_index.OPTIMIZERS}


def available(kind: str | None = None) -> list[type[Optimizer]]:
    """The optimizers of ``kind`` (every kind when None), in their listed order."""
    return [cls for k, listed in OPTIMIZERS.items() if kind is None or k == kind for cls in listed]


def get(kind: str, name: str) -> type[Optimizer]:
    """The optimizer class ``name`` of ``kind``; NotFound naming the ones there are."""
    if kind not in OPTIMIZERS:
        raise NotFound(f"no optimizer kind {kind!r} (kinds: {', '.join(OPTIMIZERS)})")
    for cls in OPTIMIZERS[kind]:
        if cls.name == name:
            return cls
    names = ", ".join(c.name for c in OPTIMIZERS[kind]) or "none"
    raise NotFound(f"no {kind} optimizer named {name!r}{did_you_mean(name, [c.name for c in OPTIMIZERS[kind]])} "
                   f"(available: {names})")


def create(kind: str, name: str, problem, *, seed: int = 0, strict: bool = True, **options) -> Optimizer:
    """An optimizer over ``problem``. With ``strict=False``, options the optimizer does not take are left out
    (a pipeline passes the options of a run, e.g. IA2's training episodes, to whichever optimizer it runs)."""
    cls = get(kind, name)
    if not strict:
        options = {k: v for k, v in options.items() if k in taken(cls)}
    return cls(problem, seed=seed, **options)


def taken(cls: type[Optimizer]) -> set[str]:
    """The options an optimizer class takes: the named parameters of every ``_setup`` along its classes (a
    ``**options`` one hands the rest on to its base's, and the contract's takes none)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        setup = klass.__dict__.get("_setup")
        if setup is not None:
            names |= {n for n, p in inspect.signature(setup).parameters.items()
                      if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return names
