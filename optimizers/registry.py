"""Every optimizer, listed: one ordered tuple per kind (``optimizers.knobs.OPTIMIZERS``,
``optimizers.indexes.OPTIMIZERS``), as sqlglot lists its rules. Adding an optimizer is one module plus one entry
in its kind's tuple; nothing registers itself by side effect. The conformance suite runs over this list."""

from __future__ import annotations

from advisor.core.errors import NotFound
from optimizers import indexes, knobs
from optimizers.base import Optimizer

OPTIMIZERS: dict[str, tuple[type[Optimizer], ...]] = {"knobs": knobs.OPTIMIZERS, "indexes": indexes.OPTIMIZERS}


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
    raise NotFound(f"no {kind} optimizer named {name!r} (available: {names})")


def create(kind: str, name: str, problem, *, seed: int = 0, **options) -> Optimizer:
    """An optimizer over ``problem``."""
    return get(kind, name)(problem, seed=seed, **options)
