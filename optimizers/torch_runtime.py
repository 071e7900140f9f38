"""Where and how models run: the device (``auto``: CUDA when present, else CPU) and the CPU thread pool (a model's
blob as a file or text: ``optimizers.rl.persistence``)."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import torch

from advisor.core.errors import BadDevice


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` | ``cpu`` | ``cuda`` (``cuda:N``). Asking for CUDA where there is none is an error, not a fallback."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise BadDevice(f"device {name!r} asked for, but this machine has no CUDA device (use auto or cpu)")
    if name != "cpu" and not name.startswith("cuda"):
        raise BadDevice(f"unknown device {name!r}: use auto, cpu or cuda")
    return torch.device(name)


@contextmanager
def one_thread():
    """Small models run fastest on one thread; with OpenMP runtimes of other libraries loaded (scikit-learn,
    Optuna's dependencies), torch's default thread pool made a 30-point GP fit 10x slower here."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cpu_threads(device: torch.device):
    """``one_thread()`` on the CPU, nothing on an accelerator."""
    return one_thread() if device.type == "cpu" else nullcontext()

