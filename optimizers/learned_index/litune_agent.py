"""LITune's TD3 agent (arXiv 2502.05001; ``optimizers.learned_index.litune`` drives it): a context encoder, an
actor and twin critics over continuous actions in the unit cube, and its replay buffer.

State: a GRU (the context encoder) reads the last ``context`` steps, each a vector of [valid flag, the step's
unit-cube parameters, log(reference ns/op / ns/op), log throughput, p99 and memory ratios to the reference's,
unsafe and failed flags, the structure statistics hashed into ``STATS`` buckets]; its last hidden state is joined
with the dataset + workload descriptor (``FEATURES`` numbers, signed log1p, padded or cut). Action: a point of
[0, 1]^d (a sigmoid head), decoded by the problem's space. Reward: log(reference ns/op / trial ns/op), clipped,
or ``unsafe_reward`` for an unsafe or failed trial (the reference is the default's outcome).

TD3's parts (the shared RL core's, ``optimizers.rl``): twin critics with the minimum in the target, target
networks (encoder included) with Polyak averaging, clipped target-policy noise, delayed actor updates. The encoder
learns through the critics' loss; the actor reads it detached. Every random draw (exploration, batches, target
noise) comes from one numpy generator held by the caller, so a restored agent continues exactly.
"""

from __future__ import annotations

import copy
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from optimizers.rl import persistence
from optimizers.rl import td3 as rl
from optimizers.rl.networks import mlp
from optimizers.rl.replay import ReplayBuffer
from optimizers.torch_runtime import resolve_device

STATS = 8  # hashed buckets for the structure statistics (their names are the engine's)
FEATURES = 24  # descriptor numbers the agent reads (the key set's shape and the mix: 18 today)
METRIC_KEYS = ("throughput_ops", "p99_ns", "memory_bytes", "unsafe", "cpu_ns_per_op")  # not hashed as statistics
# (the CPU time per operation is the objective, already in the state as its ratio to the reference's)


@dataclass(frozen=True)
class AgentOptions(rl.TD3Options):
    """TD3's shared hyper-parameters with LITune's defaults, and LITune's own: the context encoder, the unsafe
    reward."""

    gamma: float = 0.3
    lr_actor: float = 1e-3
    lr_critic: float = 2e-3
    tau: float = 0.02
    target_noise: float = 0.1
    noise_clip: float = 0.25
    buffer: int = 4000
    reward_clip: float = 3.0
    context: int = 5  # steps the encoder reads
    encoder: int = 32  # the encoder's hidden state
    unsafe_reward: float = -2.0


def step_dim(d: int) -> int:
    return 1 + d + 6 + STATS


def _slog(v: float) -> float:
    return math.copysign(math.log1p(abs(v)), v)


def _ratio(a, b) -> float:
    if a is None or b is None or not (float(a) > 0 and float(b) > 0):
        return 0.0
    return float(np.clip(math.log(float(a) / float(b)), -5.0, 5.0))


def feature_vector(features: Sequence[float]) -> np.ndarray:
    out = np.zeros(FEATURES, np.float32)
    vals = [_slog(float(f)) if math.isfinite(float(f)) else 0.0 for f in features][:FEATURES]
    out[: len(vals)] = vals
    return out


def reward(step: Mapping, reference: Mapping | None, options: AgentOptions) -> float:
    """The reward of a told step (a dict: x, objective, status, unsafe, metrics) against the reference's."""
    if step["unsafe"] or step["objective"] is None:
        return options.unsafe_reward
    ref = (reference or {}).get("objective")
    return float(np.clip(_ratio(ref, step["objective"]), -options.reward_clip, options.reward_clip))


def step_vector(step: Mapping, reference: Mapping | None, d: int) -> np.ndarray:
    ref = reference or {}
    rm, m = ref.get("metrics") or {}, step.get("metrics") or {}
    v = np.zeros(step_dim(d), np.float32)
    v[0] = 1.0
    v[1 : 1 + d] = step["x"]
    v[1 + d : 1 + d + 6] = [
        0.0 if step["objective"] is None else _ratio(ref.get("objective"), step["objective"]),
        _ratio(m.get("throughput_ops"), rm.get("throughput_ops")),
        _ratio(m.get("p99_ns"), rm.get("p99_ns")),
        _ratio(m.get("memory_bytes"), rm.get("memory_bytes")),
        float(step["unsafe"]), float(step["status"] == "failed")]
    for name, value in m.items():
        if name not in METRIC_KEYS and math.isfinite(float(value)):
            v[1 + d + 6 + zlib.crc32(name.encode()) % STATS] += _slog(float(value)) / 10.0
    return v


def context(steps: Sequence[Mapping], reference: Mapping | None, d: int, k: int) -> np.ndarray:
    """The last ``k`` steps as a [k, step_dim] array, zero rows (valid flag 0) in front when fewer."""
    out = np.zeros((k, step_dim(d)), np.float32)
    last = list(steps)[-k:]
    for i, s in enumerate(last):
        out[k - len(last) + i] = step_vector(s, reference, d)
    return out


class Encoder(nn.Module):
    def __init__(self, inp: int, out: int):
        super().__init__()
        self.gru = nn.GRU(inp, out, batch_first=True)

    def forward(self, ctx: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        self.gru.flatten_parameters()  # a deep-copied or loaded GRU is not one chunk on CUDA (cuDNN warns, copies)
        _, h = self.gru(ctx)
        return torch.cat([h[-1], feats], dim=-1)


def new_buffer(capacity: int, k: int, d: int) -> ReplayBuffer:
    """A replay buffer of ``capacity`` transitions (context, features, action, reward, next context, next features,
    done) for contexts of ``k`` steps over ``d`` parameters."""
    ctx, feats = ((k, step_dim(d)), np.float32), ((FEATURES,), np.float32)
    return ReplayBuffer(capacity, {"ctx": ctx, "feats": feats, "a": ((d,), np.float32), "r": ((), np.float32),
                                   "ctx2": ctx, "feats2": feats, "done": ((), np.float32)})


class Agent:
    """The networks and their optimizers, for a space of ``d`` parameters."""

    def __init__(self, d: int, options: AgentOptions = AgentOptions(), device: str = "auto", seed: int = 0):
        self.d, self.options = d, options
        self.device = resolve_device(device)
        o = options
        s = step_dim(d)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.encoder = Encoder(s, o.encoder)
            self.actor = nn.Sequential(mlp(o.encoder + FEATURES, o.hidden, d), nn.Sigmoid())
            self.critics = nn.ModuleList([mlp(o.encoder + FEATURES + d, o.hidden, 1) for _ in range(2)])
        self.nets = nn.ModuleDict({"encoder": self.encoder, "actor": self.actor, "critics": self.critics})
        self.nets.to(self.device)
        self.targets = copy.deepcopy(self.nets)
        self.opt_actor = torch.optim.Adam(self.actor.parameters(), lr=o.lr_actor)
        self.opt_critic = torch.optim.Adam([*self.encoder.parameters(), *self.critics.parameters()], lr=o.lr_critic)
        self.buffer = new_buffer(o.buffer, o.context, d)
        self.updates = 0

    def act(self, ctx: np.ndarray, feats: np.ndarray) -> np.ndarray:
        """The policy's point of the unit cube for one state (no noise)."""
        with torch.no_grad():
            c = torch.as_tensor(ctx, device=self.device).unsqueeze(0)
            f = torch.as_tensor(feats, device=self.device).unsqueeze(0)
            return self.actor(self.encoder(c, f)).squeeze(0).cpu().numpy().astype(float)

    def value(self, ctx: np.ndarray, feats: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The critics' predicted value (the smaller of the twin critics, as TD3's target takes it) of each row of
        ``actions`` (points of the unit cube) taken in one state: the learned surrogate LITune ranks its candidate
        proposals by."""
        with torch.no_grad():
            c = torch.as_tensor(ctx, device=self.device).unsqueeze(0)
            f = torch.as_tensor(feats, device=self.device).unsqueeze(0)
            a = torch.as_tensor(np.asarray(actions, np.float32), device=self.device)
            s = self.encoder(c, f).expand(len(a), -1)
            q = rl.twin_min(critic(torch.cat([s, a], -1)).squeeze(-1) for critic in self.critics)
            return q.cpu().numpy().astype(float)

    def update(self, rng: np.random.Generator, recent: int = 0) -> None:
        """One TD3 update (``optimizers.rl.td3.update``) on a batch from the buffer (the actor and targets every
        ``policy_delay`` updates); ``recent``: see ``ReplayBuffer.sample``."""
        o = self.options
        if self.buffer.size < 2:
            return
        ctx, feats, a, r, ctx2, feats2, done = self.buffer.sample(o.batch, rng, self.device, recent)
        noise = rl.smoothing_noise(a.shape, o, self.device, rng, a.dtype)

        def target() -> torch.Tensor:
            t = self.targets
            s2 = t["encoder"](ctx2, feats2)
            a2 = (t["actor"](s2) + noise).clamp(0.0, 1.0)
            return rl.bellman(r, done, rl.twin_min(c(torch.cat([s2, a2], -1)).squeeze(-1) for c in t["critics"]),
                              o.gamma)

        s = self.encoder(ctx, feats)
        state = s.detach()  # the actor reads the encoder without teaching it
        self.updates = rl.update(
            o, self.updates, target=target,
            values=lambda: [c(torch.cat([s, a], -1)).squeeze(-1) for c in self.critics],
            actor_loss=lambda: -self.critics[0](torch.cat([state, self.actor(state)], -1)).mean(),
            critic_optimizer=self.opt_critic, actor_optimizer=self.opt_actor, pairs=((self.nets, self.targets),))

    def clone(self, ctx: np.ndarray, feats: np.ndarray, targets: np.ndarray, steps: int,
              rng: np.random.Generator) -> float:
        """Behaviour cloning onto the best configurations meta-training found (TD3+BC's term, Fujimoto and Gu
        2021, as a phase of its own): ``steps`` Adam steps of the actor's mean squared distance to ``targets``
        from states (``ctx``, ``feats``: one row each), on batches drawn with ``rng``; the encoder is read
        detached, as the actor always reads it. Returns the last batch's loss."""
        loss = torch.zeros(())
        if not len(targets):
            return 0.0
        c, f, t = (torch.as_tensor(np.asarray(v, np.float32), device=self.device) for v in (ctx, feats, targets))
        for _ in range(steps):
            idx = torch.as_tensor(rng.integers(0, len(t), size=min(self.options.batch, len(t))), device=self.device)
            with torch.no_grad():
                state = self.encoder(c[idx], f[idx])
            loss = ((self.actor(state) - t[idx]) ** 2).mean()
            self.opt_actor.zero_grad()
            loss.backward()
            self.opt_actor.step()
        return float(loss.detach())

    # --- persistence: one blob of tensors (torch.save, weights_only loadable) ---------------------------------

    def to_blob(self, buffer: bool = True) -> dict:
        return {"d": self.d, "options": asdict(self.options),
                **persistence.weights(nets=self.nets, targets=self.targets),
                "opt_actor": self.opt_actor.state_dict(), "opt_critic": self.opt_critic.state_dict(),
                "updates": self.updates, "buffer": self.buffer.to_blob() if buffer else None}

    @classmethod
    def from_blob(cls, blob: dict, device: str = "auto") -> "Agent":
        agent = cls(int(blob["d"]), AgentOptions(**blob["options"]), device)
        persistence.restore(blob, nets=agent.nets, targets=agent.targets)
        agent.opt_actor.load_state_dict(blob["opt_actor"])
        agent.opt_critic.load_state_dict(blob["opt_critic"])
        agent.updates = int(blob["updates"])
        if blob.get("buffer"):
            capacity = max(int(blob["buffer"]["capacity"]), 1)
            agent.buffer = new_buffer(capacity, agent.options.context, agent.d)
            agent.buffer.load_blob(blob["buffer"])
        return agent
