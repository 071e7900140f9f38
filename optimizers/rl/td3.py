"""TD3 (Fujimoto et al., 2018), the update both actor-critic agents here learn by (IA2's over discrete, masked
actions; LITune's over the unit cube): the hyper-parameters they share (``TD3Options``, which each agent's options
extend with its own fields and defaults), and the update's parts: target policy smoothing (``smoothing_noise``),
the twin critics' minimum in the Bellman target (``twin_min``, ``bellman``), the critics' step, the delayed actor
step and Polyak averaging of the target networks (``polyak``), composed by ``update``. The agent supplies what is
its own as functions: the target, the critics' values of the batch, the actor's loss.

>>> import torch
>>> net, target = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
>>> with torch.no_grad():
...     _ = net.weight.fill_(1.0), target.weight.fill_(0.0)
>>> polyak([(net, target)], 0.25)
>>> target.weight.item()
0.25
>>> bellman(torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([2.0]), 0.5).item()
2.0
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True)
class TD3Options:
    """The hyper-parameters of every TD3 agent here (defaults: the TD3 paper's where it has one); an agent's options
    subclass this with its own fields and its own defaults (saved flat, as ``dataclasses.asdict`` gives them)."""

    hidden: int = 64  # units per hidden layer of the actor and the critics
    gamma: float = 0.99  # discount
    lr_actor: float = 3e-4
    lr_critic: float = 3e-4
    batch: int = 64  # transitions per update
    buffer: int = 10_000  # the replay buffer's capacity
    tau: float = 0.005  # Polyak averaging: each actor step moves the targets this share of the way
    policy_delay: int = 2  # critic updates per actor update
    target_noise: float = 0.2  # target policy smoothing: the noise's standard deviation ...
    noise_clip: float = 0.5  # ... clipped to this
    reward_clip: float = 10.0  # rewards are clipped to +-this


def smoothing_noise(shape: Sequence[int], options: TD3Options, device, rng: np.random.Generator | None = None,
                    dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Target policy smoothing's noise: Gaussian, ``target_noise`` wide, clipped to +-``noise_clip``; drawn from
    ``rng`` when given (an agent whose every draw comes from one numpy generator continues exactly once
    restored), else from torch's generator."""
    if rng is None:
        return (torch.randn(shape, device=device) * options.target_noise).clamp(-options.noise_clip,
                                                                                 options.noise_clip)
    noise = np.clip(rng.normal(0.0, options.target_noise, size=tuple(shape)), -options.noise_clip, options.noise_clip)
    return torch.as_tensor(noise, dtype=dtype, device=device)


def twin_min(values: Iterable[torch.Tensor]) -> torch.Tensor:
    """The smaller of the twin (target) critics' values, elementwise: TD3's guard against overestimation."""
    return torch.min(*values)


def bellman(r: torch.Tensor, done: torch.Tensor, q_next: torch.Tensor, gamma: float,
            alive: torch.Tensor | None = None) -> torch.Tensor:
    """The critics' target ``r + gamma (1 - done) q_next``, times ``alive`` when given (0 where the next state
    has no action left)."""
    discount = gamma * (1.0 - done)
    if alive is not None:
        discount = discount * alive
    return r + discount * q_next


def polyak(pairs: Iterable[tuple[nn.Module, nn.Module]], tau: float) -> None:
    """Move each (network, target network) pair's target ``tau`` of the way towards the network."""
    with torch.no_grad():
        for net, target in pairs:
            for p, pt in zip(net.parameters(), target.parameters()):
                pt.mul_(1.0 - tau).add_(p, alpha=tau)


def _step(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def update(options: TD3Options, updates: int, *, target: Callable[[], torch.Tensor],
           values: Callable[[], Sequence[torch.Tensor]], actor_loss: Callable[[], torch.Tensor],
           critic_optimizer: torch.optim.Optimizer, actor_optimizer: torch.optim.Optimizer,
           pairs: Iterable[tuple[nn.Module, nn.Module]]) -> int:
    """One TD3 update on a batch; ``updates``: the critic updates made before it; returns the count after it.

    The critics step towards ``target()`` (computed without gradients: the Bellman target over the twin target
    critics' minimum, ``bellman`` and ``twin_min``) by the summed squared errors of ``values()`` (each critic's
    value of the batch's actions); every ``policy_delay``-th update the actor steps on ``actor_loss()`` (read after
    the critics' step) and the target networks of ``pairs`` follow by Polyak averaging."""
    with torch.no_grad():
        y = target()
    _step(critic_optimizer, sum(((q - y) ** 2).mean() for q in values()))
    updates += 1
    if updates % options.policy_delay == 0:
        _step(actor_optimizer, actor_loss())
        polyak(pairs, options.tau)
    return updates
