"""``advisor train``: the models that ship with the package, trained ahead of time on generated schemas, key sets
and workloads, reproducible from a seed (``advisor.tuning.pretrained``: Aurora's rule policy, LITune's models,
IA2's agent). ``advisor bench models`` compares the shipped models with ones trained from scratch on held-out
schemas, key sets and workloads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli.common import JsonFlag
from advisor.cli.common import emit as _emit_json
from advisor.cli.common import names as _names
from advisor.core.progress import reporter
from advisor.tuning.pretrained import shipped_kinds

KINDS = shipped_kinds()  # the kinds with a shipped model (the registry's)



def train(kinds: Annotated[str, typer.Option(help=f"comma-separated: {', '.join(KINDS)}")] = ",".join(KINDS),
          seed: Annotated[int, typer.Option(help="the training's seed (the same seed gives the same weights)")] = 0,
          episodes: Annotated[int, typer.Option(help="training episodes (0: each kind's own default)", min=0)] = 0,
          out: Annotated[str, typer.Option(help="where the model files go (default: the package's own, shipped)")]
          = "",
          device: Annotated[str, typer.Option(help="auto, cpu or cuda (cpu gives weights identical per seed)")]
          = "cpu",
          json_out: JsonFlag = False) -> None:
    """Train the shipped models ahead of time on generated schemas and key sets, from a seed: a first question on
    a new target then starts from them instead of a training from scratch."""
    from advisor.tuning.pretrained import train_shipped

    doc = train_shipped(_names([kinds]), seed=seed, episodes=episodes or None, out=Path(out) if out else None,
                        device=device, say=reporter(watch=True))
    if json_out:
        _emit_json(doc)
        return
    for stats in doc.values():
        print(stats["summary"])


def register(app: typer.Typer) -> None:
    app.command("train")(train)
