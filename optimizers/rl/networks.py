"""The networks the agents are made of: a trunk of fully connected layers, the multilayer perceptron (trunk and a
linear head) that every actor and critic here is, and masking of invalid actions' scores.

The layouts are what the shipped models' weights are keyed by (``0``, ``2``, ``4`` for an MLP's linear layers):
changing them breaks ``optimizers/pretrained/*.pt``.

>>> import torch
>>> net = mlp(3, 8, 2)
>>> [name for name, _ in net.named_parameters()]
['0.weight', '0.bias', '2.weight', '2.bias', '4.weight', '4.bias']
>>> net(torch.zeros(5, 3)).shape
torch.Size([5, 2])
>>> masked(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([True, False, True])).tolist()
[1.0, -1000000000.0, 3.0]
"""

from __future__ import annotations

import torch
from torch import nn

INVALID = -1e9  # the score of an action that may not be taken (finite: a softmax over it stays defined)


def trunk(inp: int, hidden: int, activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Two fully connected layers of ``hidden`` units, each followed by ``activation`` (a shared body for heads)."""
    return nn.Sequential(nn.Linear(inp, hidden), activation(), nn.Linear(hidden, hidden), activation())


def mlp(inp: int, hidden: int, out: int, activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """``trunk`` and a linear layer of ``out`` units, as one ``nn.Sequential`` (layers 0 to 4)."""
    return nn.Sequential(*trunk(inp, hidden, activation), nn.Linear(hidden, out))


def masked(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``scores`` with those where ``mask`` is False set to ``INVALID``."""
    return scores.masked_fill(~mask, INVALID)
