"""LITune's safe exploration (``optimizers.learned_index.litune``): what counts as unsafe, the learned unsafe
region, and the trust region around the best safe point.

* ``is_unsafe(outcome, memory_limit_bytes)``: a failed trial (the harness's early termination below the safety
  fraction of the default's throughput sets ``metrics["unsafe"] = 1`` and status ``failed``), an unsafe flag, or
  a structure larger than the memory bound (bytes). An ``infeasible`` outcome is not a visit of the space.
* ``UnsafeRegion``: a distance-weighted k-nearest-neighbour classifier over the visited unit-cube points; a
  point is predicted unsafe when the visited points within ``radius`` (L2 in the unit cube) vote unsafe by weight.
  With no visited point near, nothing is known and nothing is vetoed.
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
