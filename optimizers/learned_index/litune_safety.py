"""LITune's safe exploration (``optimizers.learned_index.litune``): what counts as unsafe, the learned unsafe
region, and the trust region around the best safe point.

* ``is_unsafe(outcome, memory_limit_bytes)``: a failed trial (the harness's early termination below the safety
  fraction of the default's speed, on CPU time per operation, sets ``metrics["unsafe"] = 1`` and status ``failed``), an unsafe flag, or
  a structure larger than the memory bound (bytes). An ``infeasible`` outcome (parameters the engine refuses
  together) is not unsafe, but LITune's region models learn to avoid it as they avoid unsafe points.
* ``UnsafeRegion``: a distance-weighted k-nearest-neighbour classifier over the visited unit-cube points; a
  point is predicted unsafe when the visited points within ``radius`` (L2 in the unit cube) vote unsafe by weight.
  With no visited point near, nothing is known and nothing is vetoed.
* ``UnsafeClassifier``: a small MLP over unit-cube points -> P(unsafe), fitted on every labelled point LITune has
  (meta-training's visits and this run's tells, balanced by class): it generalizes where the k-NN cannot, e.g. a
  rule across parameters (min < init < max density) in 14 dimensions. Refitted from the same points with the same
  seed it is the same model, so it is derived data, never state.
* ``TrustRegion``: proposals are clipped to an L-infinity box around the best safe point whose half-width grows
  from ``start`` to 0.5 (the whole cube) as safe evidence accumulates (``full_after`` safe visits).

>>> region = UnsafeRegion(radius=0.2)
>>> region.add([0.9, 0.9], True); region.add([0.1, 0.1], False)
>>> region.unsafe([0.85, 0.95]), region.unsafe([0.15, 0.1]), region.unsafe([0.5, 0.5])
(True, False, False)
>>> TrustRegion(start=0.1, full_after=4).clip([0.9, 0.0], center=[0.5, 0.5], safe=0).round(2).tolist()
[0.6, 0.4]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from advisor.core.domain import TrialResult


def is_unsafe(outcome: TrialResult, memory_limit_bytes: int | None) -> bool:
    metrics = outcome.metrics or {}
    if outcome.status == "failed" or float(metrics.get("unsafe", 0.0)) > 0:
        return True
    memory = metrics.get("memory_bytes")
    return memory_limit_bytes is not None and memory is not None and float(memory) > memory_limit_bytes


class UnsafeRegion:
    """Visited unit-cube points labelled safe / unsafe, and the prediction for a new point."""

    def __init__(self, radius: float = 0.15, k: int = 5):
        self.radius, self.k = float(radius), int(k)
        self.points: list[list[float]] = []
        self.labels: list[bool] = []

    def add(self, x: Sequence[float], unsafe: bool) -> None:
        self.points.append([float(v) for v in x])
        self.labels.append(bool(unsafe))

    @property
    def any_unsafe(self) -> bool:
        return any(self.labels)

    def probability(self, x: Sequence[float]) -> float:
        """The weight of unsafe votes among the ``k`` nearest visited points within ``radius`` (0 when none)."""
        if not self.points:
            return 0.0
        pts = np.asarray(self.points)
        d = np.linalg.norm(pts - np.asarray(x, dtype=float), axis=1)
        near = np.argsort(d, kind="stable")[: self.k]
        near = near[d[near] <= self.radius]
        if not len(near):
            return 0.0
        w = 1.0 / (d[near] + 1e-3)
        return float(w[np.asarray(self.labels)[near]].sum() / w.sum())

    def unsafe(self, x: Sequence[float]) -> bool:
        return self.probability(x) > 0.5


class UnsafeClassifier:
    """P(unsafe) of unit-cube points, learned from labelled points; ``ready`` once both labels are numerous."""

    def __init__(self, points: Sequence[Sequence[float]], labels: Sequence[bool], seed: int = 0, hidden: int = 32,
                 epochs: int = 150, least: int = 4):
        import torch
        from torch import nn

        y = np.asarray(labels, dtype=np.float32)
        self.ready = len(y) > 0 and min(y.sum(), len(y) - y.sum()) >= least
        if not self.ready:
            return
        x = torch.as_tensor(np.asarray(points, dtype=np.float32))
        t = torch.as_tensor(y)
        weight = torch.where(t > 0, 0.5 / t.mean(), 0.5 / (1 - t.mean()))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 1))
        opt = torch.optim.Adam(self.net.parameters(), lr=1e-2)
        loss_fn = nn.BCEWithLogitsLoss(weight=weight)
        for _ in range(epochs):
            opt.zero_grad()
            loss_fn(self.net(x).squeeze(-1), t).backward()
            opt.step()

    def probability(self, x: Sequence[float]) -> float:
        if not self.ready:
            return 0.0
        import torch

        with torch.no_grad():
            return float(torch.sigmoid(self.net(torch.as_tensor(np.asarray([x], dtype=np.float32)))).item())


class TrustRegion:
    """An L-infinity box around the best safe point, widening with safe evidence."""

    def __init__(self, start: float = 0.15, full_after: int = 12):
        self.start, self.full_after = float(start), max(1, int(full_after))

    def half_width(self, safe: int) -> float:
        return self.start + (0.5 - self.start) * min(1.0, safe / self.full_after)

    def clip(self, x: Sequence[float], center: Sequence[float], safe: int) -> np.ndarray:
        h = self.half_width(safe)
        c = np.asarray(center, dtype=float)
        return np.clip(np.clip(np.asarray(x, dtype=float), c - h, c + h), 0.0, 1.0)
