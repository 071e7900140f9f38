"""The models that ship with the package, trained ahead of time (``advisor train``): for each kind with one, how
it is trained from a seed and where its files go. Aurora's rule policy is the one so far
(``optimizers.rewrites.pretrain``); IA2's agent and LITune's model are still trained per target."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent

KINDS = ("rewrites",)


def train_shipped(kinds: tuple[str, ...] = KINDS, seed: int = 0, episodes: int = 240, out: Path | None = None,
                  device: str = "cpu", say: Say = silent) -> dict:
    """Train each kind's shipped model from ``seed`` and write its files (into the package, or ``out``); what was
    trained, per kind."""
    from optimizers.rewrites import pretrain

    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise AdvisorError(f"no shipped model for {', '.join(unknown)}: the kinds with one are {', '.join(KINDS)}")
    path = out / pretrain.SHIPPED.name if out else pretrain.SHIPPED
    started = time.monotonic()
    agent, stats = pretrain.train_policy(dialects(), episodes=episodes, seed=seed, device=device, say=say)
    stats["seconds"] = round(time.monotonic() - started, 1)
    pretrain.save(agent, stats, path)
    return {"rewrites": {"model": str(path), **stats}}


def dialects() -> tuple[str, ...]:
    """The SQL dialects of the engines the advisor runs (what the shipped rewrite policy trains in)."""
    from connectors import factory

    return tuple(sorted({engine.connector.dialect for engine in factory.ENGINES.values()}))
