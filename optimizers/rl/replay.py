"""The replay buffer: a ring of transitions, one numpy array per named field (its shape and type given once), that
samples batches as tensors with a numpy generator the agent holds (so a restored agent draws the same batches),
optionally weighting the most recent transitions, and travels in a model's blob.

>>> import numpy as np
>>> buf = ReplayBuffer(3, {"x": ((2,), np.float32), "a": ((), np.int64)})
>>> for i in range(4):
...     buf.add(np.full(2, i), i)
>>> buf.size, buf.pos, buf.a.tolist()  # the fourth overwrote the first
(3, 1, [3, 1, 2])
>>> buf.recent(2).a.tolist()
[2, 3]
>>> x, a = buf.sample(4, np.random.default_rng(0), "cpu")
>>> tuple(x.shape), a.dtype
((4, 2), torch.int64)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

Spec = Mapping[str, tuple[tuple[int, ...], type]]  # field name -> (shape of one transition's value, numpy type)


class ReplayBuffer:
    """``capacity`` transitions; field ``name`` is the array ``self.<name>`` of shape [capacity, *shape]."""

    def __init__(self, capacity: int, spec: Spec):
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.spec = dict(spec)
        self.fields = tuple(self.spec)
        for name, (shape, dtype) in self.spec.items():
            if hasattr(self, name):
                raise ValueError(f"a replay buffer's field may not be named {name!r}")
            setattr(self, name, np.zeros((capacity, *shape), dtype))

    def add(self, *values) -> None:
        """One transition: a value per field, in the spec's order; the oldest is overwritten when full."""
        if len(values) != len(self.fields):
            raise ValueError(f"a transition has {len(self.fields)} fields ({', '.join(self.fields)}), "
                             f"not {len(values)}")
        i = self.pos
        for name, value in zip(self.fields, values):
            getattr(self, name)[i] = value
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int, rng: np.random.Generator, device, recent: int = 0) -> list[torch.Tensor]:
        """``n`` transitions drawn uniformly, as a tensor per field; with ``recent`` > 0, half of them from the
        last ``recent`` ones (online fine-tuning weighs what the current phase just showed)."""
        idx = rng.integers(0, self.size, size=n)
        if recent > 0:
            back = rng.integers(1, min(recent, self.size) + 1, size=n // 2)
            idx[: n // 2] = (self.pos - back) % self.capacity
        return [torch.as_tensor(getattr(self, f)[idx], device=device) for f in self.fields]

    def recent(self, n: int) -> "ReplayBuffer":
        """A buffer of capacity ``n`` holding the last ``n`` transitions of this one (oldest first)."""
        out = ReplayBuffer(n, self.spec)
        order = [(self.pos - self.size + i) % self.capacity for i in range(self.size)][-n:]
        for i in order:
            out.add(*(getattr(self, f)[i] for f in self.fields))
        return out

    def to_blob(self) -> dict:
        """The transitions held, as tensors (with ``size``, ``pos`` and ``capacity``), for a model's blob."""
        return {"size": self.size, "pos": self.pos, "capacity": self.capacity,
                **{f: torch.from_numpy(getattr(self, f)[: self.size].copy()) for f in self.fields}}

    def load_blob(self, blob: dict) -> None:
        """What ``to_blob`` wrote, into this buffer (of at least that capacity)."""
        self.size, self.pos = int(blob["size"]), int(blob["pos"])
        for f in self.fields:
            getattr(self, f)[: self.size] = blob[f].numpy()
