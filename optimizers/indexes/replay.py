"""IA2's replay buffer (``optimizers.indexes.td3``): transitions of per-candidate features, with the critic's
pooled view of each state (``pool``) computed once, when the transition enters."""

from __future__ import annotations

import numpy as np
import torch

from optimizers.indexes.env import CANDIDATE_FEATURES, GLOBAL_FEATURES


def pool(phi: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The critic's view of the valid candidates of a state: their mean and peak features [2 F] (zeros and -1
    when none is valid). Computed once per transition, when it enters the replay buffer."""
    valid = phi[mask]
    if not len(valid):
        return np.concatenate([np.zeros(CANDIDATE_FEATURES), -np.ones(CANDIDATE_FEATURES)]).astype(np.float32)
    return np.concatenate([valid.mean(0), valid.max(0)]).astype(np.float32)


class Buffer:
    def __init__(self, capacity: int, n: int):
        self.capacity, self.size, self.pos = capacity, 0, 0
        f = np.float32
        self.g = np.zeros((capacity, GLOBAL_FEATURES), f)
        self.pooled = np.zeros((capacity, 2 * CANDIDATE_FEATURES), f)
        self.phi = np.zeros((capacity, n, CANDIDATE_FEATURES), f)
        self.mask = np.zeros((capacity, n), bool)
        self.a = np.zeros(capacity, np.int64)
        self.r = np.zeros(capacity, f)
        self.g2 = np.zeros_like(self.g)
        self.pooled2 = np.zeros_like(self.pooled)
        self.phi2 = np.zeros_like(self.phi)
        self.mask2 = np.zeros_like(self.mask)
        self.done = np.zeros(capacity, f)

    def add(self, g, phi, mask, a, r, g2, phi2, mask2, done) -> None:
        i = self.pos
        self.g[i], self.phi[i], self.mask[i], self.a[i], self.r[i] = g, phi, mask, a, r
        self.g2[i], self.phi2[i], self.mask2[i], self.done[i] = g2, phi2, mask2, float(done)
        self.pooled[i], self.pooled2[i] = pool(phi, mask), pool(phi2, mask2)
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch: int, rng: np.random.Generator, device: torch.device):
        idx = rng.integers(0, self.size, size=batch)
        t = lambda x: torch.as_tensor(x[idx], device=device)  # noqa: E731
        return (t(self.g), t(self.pooled), t(self.phi), t(self.mask), t(self.a), t(self.r), t(self.g2), t(self.pooled2),
                t(self.phi2), t(self.mask2), t(self.done))
