"""Optimizer plugins by (kind, name). A plugin joins with the ``@register`` decorator."""

from __future__ import annotations

from advisor.core.errors import NotFound
from optimizers.base import Optimizer

_REGISTRY: dict[tuple[str, str], type[Optimizer]] = {}


def register(cls: type[Optimizer]) -> type[Optimizer]:
    key = (cls.kind, cls.name)
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise ValueError(f"optimizer {cls.kind}/{cls.name} is registered twice")
    _REGISTRY[key] = cls
    return cls


def _load_plugins() -> None:
    import optimizers.indexes  # noqa: F401  (registers its plugins)
    import optimizers.knobs  # noqa: F401


def available(kind: str | None = None) -> list[type[Optimizer]]:
    _load_plugins()
    return [cls for (k, _), cls in sorted(_REGISTRY.items()) if kind is None or k == kind]


def create(kind: str, name: str, **options) -> Optimizer:
    _load_plugins()
    cls = _REGISTRY.get((kind, name))
    if cls is None:
        names = ", ".join(c.name for c in available(kind)) or "none"
        raise NotFound(f"no {kind} optimizer named {name!r} (available: {names})")
    return cls(**options)
