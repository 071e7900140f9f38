"""Aurora's shipped rule policy, trained ahead of time (``advisor train --kinds rewrites``;
``optimizers.rewrites.search.pretrain``) on generated statements in the SQL dialects of the engines the advisor runs;
reproduced bit for bit from its seed on the CPU (its rewards are estimated costs)."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.core.progress import Say


def train(seed: int, episodes: int | None, out: Path | None, device: str, say: Say) -> dict:
    from optimizers.rewrites.search import pretrain

    path = out / pretrain.SHIPPED.name if out else pretrain.SHIPPED
    started = time.monotonic()
    agent, stats = pretrain.train_policy(dialects(), episodes=episodes or 240, seed=seed, device=device, say=say)
    stats["seconds"] = round(time.monotonic() - started, 1)
    pretrain.save(agent, stats, path)
    return {"model": str(path), **stats,
            "summary": f"Aurora's policy: {path} ({stats['episodes']} episodes on {stats['statements']} statements "
                       f"of {len(stats['schemas'])} generated schemas, seed {seed}, {stats['seconds']:.0f} s)"}


def dialects() -> tuple[str, ...]:
    """The SQL dialects of the engines the advisor runs (what the shipped rewrite policy trains in)."""
    from connectors import factory

    return tuple(sorted({engine.connector.dialect for engine in factory.ENGINES.values()}))
