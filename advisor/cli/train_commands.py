"""``advisor train``: the models that ship with the package, trained ahead of time on generated schemas and
workloads, reproducible from a seed (``optimizers.rewrites.pretrain`` for Aurora's rule policy). ``advisor bench
models`` compares the shipped policy with one trained from scratch on each held-out schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli.common import JsonFlag
from advisor.cli.common import emit as _emit_json
from advisor.cli.common import names as _names
from advisor.core.progress import reporter
from advisor.tuning.pretrained import KINDS



def train(kinds: Annotated[str, typer.Option(help=f"comma-separated: {', '.join(KINDS)}")] = "rewrites",
          seed: Annotated[int, typer.Option(help="the training's seed (the same seed gives the same weights)")] = 0,
          episodes: Annotated[int, typer.Option(help="training episodes", min=1)] = 240,
          out: Annotated[str, typer.Option(help="where the model files go (default: the package's own, shipped)")]
          = "",
          device: Annotated[str, typer.Option(help="auto, cpu or cuda (cpu gives weights identical per seed)")]
          = "cpu",
          json_out: JsonFlag = False) -> None:
    """Train the shipped models ahead of time on generated schemas, from a seed: a first question on a new target
    then starts from them instead of a training from scratch."""
    from advisor.tuning.pretrained import train_shipped

    doc = train_shipped(_names([kinds]), seed=seed, episodes=episodes, out=Path(out) if out else None,
                        device=device, say=reporter(watch=True))
    stats = doc["rewrites"]
    path = stats["model"]
    if json_out:
        _emit_json(doc)
        return
    print(f"Aurora's policy: {path} ({stats['episodes']} episodes on {stats['statements']} statements of "
          f"{len(stats['schemas'])} generated schemas, seed {seed}, {stats['seconds']:.0f} s)")


def register(app: typer.Typer) -> None:
    app.command("train")(train)
