"""A model's blob (its networks' weights and metadata: tensors, numbers, strings, lists and dicts of them) to a
file (``save``, with a JSON manifest beside it), to text for an optimizer's JSON state (``to_text``), and back
(``load``, ``stored``, ``from_text``): always onto the CPU and through torch's safe unpickler (nothing but tensors
and plain values is read from a file), whatever the device the model runs on.

>>> import torch
>>> blob = {"net": weights(net=torch.nn.Linear(2, 1))["net"], "seed": 3}
>>> back = from_text(to_text(blob))
>>> back["seed"], torch.equal(back["net"]["weight"], blob["net"]["weight"])
(3, True)
"""

from __future__ import annotations

import base64
import io
import json
import pickle
from pathlib import Path

import torch
from torch import nn

# what reading a damaged, truncated or foreign file raises (``stored`` answers None for them)
UNREADABLE = (ValueError, KeyError, RuntimeError, OSError, TypeError, pickle.UnpicklingError)


def weights(**modules: nn.Module) -> dict:
    """The named modules' state dicts, for a blob."""
    return {name: module.state_dict() for name, module in modules.items()}


def restore(blob: dict, **modules: nn.Module) -> None:
    """Load each named module's state dict from ``blob`` (as ``weights`` wrote it)."""
    for name, module in modules.items():
        module.load_state_dict(blob[name])


def save(blob: dict, path: Path, manifest: dict | None = None) -> Path:
    """``blob`` to ``path`` (``torch.save``), and ``manifest`` (when given) as JSON beside it (``.json``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(blob, path)
    if manifest is not None:
        path.with_suffix(".json").write_text(json.dumps(manifest, indent=1) + "\n")
    return path


def load(path: Path) -> dict:
    """The blob at ``path``, on the CPU (raises as ``torch.load`` does: ``UNREADABLE``)."""
    return torch.load(path, map_location="cpu", weights_only=True)


def stored(path: Path | None) -> dict | None:
    """The blob at ``path``, or None when there is none or it cannot be read."""
    if path is None or not path.exists():
        return None
    try:
        return load(path)
    except UNREADABLE:
        return None


def to_text(blob: dict) -> str:
    """``blob`` as base64 of ``torch.save``'s bytes."""
    out = io.BytesIO()
    torch.save(blob, out)
    return base64.b64encode(out.getvalue()).decode()


def from_text(text: str) -> dict:
    """What ``to_text`` wrote, on the CPU."""
    return torch.load(io.BytesIO(base64.b64decode(text)), map_location="cpu", weights_only=True)
