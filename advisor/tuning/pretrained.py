"""The models that ship with the package, trained ahead of time (``advisor train``): each kind with one says how
it is trained from a seed and where its files go (``Kind.train_shipped``, its folder's ``shipped`` module: Aurora's
rule policy, LITune's meta-trained models, IA2's agent)."""

from __future__ import annotations

from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.tuning import kinds as registry


def shipped_kinds() -> tuple[str, ...]:
    """The kinds with a shipped model, in the registry's order."""
    return tuple(k.name for k in registry.kinds() if k.train_shipped is not None)


def train_shipped(kinds: tuple[str, ...] | None = None, seed: int = 0, episodes: int | None = None,
                  out: Path | None = None, device: str = "cpu", say: Say = silent) -> dict:
    """Train each kind's shipped model from ``seed`` (``episodes``: each kind's own default when None; ``kinds``:
    all with one) and write its files (into the package, or ``out``); what was trained, per kind (with a one-line
    ``summary``)."""
    have = shipped_kinds()
    kinds = have if kinds is None else kinds
    unknown = [k for k in kinds if k not in have]
    if unknown:
        raise AdvisorError(f"no shipped model for {', '.join(unknown)}: the kinds with one are {', '.join(have)}")
    return {kind: registry.get(kind).train_shipped(seed, episodes, out, device, say) for kind in kinds}
