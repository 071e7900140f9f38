"""LITune's TD3 agent (arXiv 2502.05001; ``optimizers.learned_index.litune`` drives it): a context encoder, an
actor and twin critics over continuous actions in the unit cube, and its replay buffer.

State: a GRU (the context encoder) reads the last ``context`` steps, each a vector of [valid flag, the step's
unit-cube parameters, log(reference ns/op / ns/op), log throughput, p99 and memory ratios to the reference's,
unsafe and failed flags, the structure statistics hashed into ``STATS`` buckets]; its last hidden state is joined
with the dataset + workload descriptor (``FEATURES`` numbers, signed log1p, padded or cut). Action: a point of
[0, 1]^d (a sigmoid head), decoded by the problem's space. Reward: log(reference ns/op / trial ns/op), clipped,
or ``unsafe_reward`` for an unsafe or failed trial (the reference is the default's outcome).

TD3's parts: twin critics with the minimum in the target, target networks (encoder included) with Polyak
averaging, clipped target-policy noise, delayed actor updates. The encoder learns through the critics' loss; the
actor reads it detached. Every random draw (exploration, batches, target noise) comes from one numpy generator
held by the caller, so a restored agent continues exactly.
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

from optimizers.torch_runtime import resolve_device

STATS = 8  # hashed buckets for the structure statistics (their names are the engine's)
FEATURES = 16  # descriptor numbers the agent reads
METRIC_KEYS = ("throughput_ops", "p99_ns", "memory_bytes", "unsafe", "cpu_ns_per_op")  # not hashed as statistics
# (the CPU time per operation is the objective, already in the state as its ratio to the reference's)


@dataclass(frozen=True)
class AgentOptions:
    context: int = 5  # steps the encoder reads
    hidden: int = 64
    encoder: int = 32
    gamma: float = 0.3
    lr_actor: float = 1e-3
    lr_critic: float = 2e-3
    tau: float = 0.02
    policy_delay: int = 2
    target_noise: float = 0.1
    noise_clip: float = 0.25
    batch: int = 64
    buffer: int = 4000
    reward_clip: float = 3.0
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


def _mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, out))


class Buffer:
    """Transitions (context, features, action, reward, next context, next features, done), a ring of float32."""

    FIELDS = ("ctx", "feats", "a", "r", "ctx2", "feats2", "done")

    def __init__(self, capacity: int, k: int, s: int, d: int):
        f = np.float32
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.ctx, self.ctx2 = np.zeros((capacity, k, s), f), np.zeros((capacity, k, s), f)
        self.feats, self.feats2 = np.zeros((capacity, FEATURES), f), np.zeros((capacity, FEATURES), f)
        self.a, self.r, self.done = np.zeros((capacity, d), f), np.zeros(capacity, f), np.zeros(capacity, f)

    def add(self, ctx, feats, a, r, ctx2, feats2, done) -> None:
        i = self.pos
        self.ctx[i], self.feats[i], self.a[i], self.r[i] = ctx, feats, a, r
        self.ctx2[i], self.feats2[i], self.done[i] = ctx2, feats2, float(done)
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int, rng: np.random.Generator, device, recent: int = 0) -> list[torch.Tensor]:
        """``n`` transitions drawn uniformly; with ``recent`` > 0, half of them from the last ``recent`` ones
        (online fine-tuning weighs what the current phase just showed)."""
        idx = rng.integers(0, self.size, size=n)
        if recent > 0:
            back = rng.integers(1, min(recent, self.size) + 1, size=n // 2)
            idx[: n // 2] = (self.pos - back) % self.capacity
        return [torch.as_tensor(getattr(self, f)[idx], device=device) for f in self.FIELDS]

    def to_blob(self) -> dict:
        return {"size": self.size, "pos": self.pos, "capacity": self.capacity,
                **{f: torch.from_numpy(getattr(self, f)[: self.size].copy()) for f in self.FIELDS}}

    def recent(self, n: int) -> "Buffer":
        """A buffer of capacity ``n`` holding the last ``n`` transitions of this one (oldest first)."""
        out = Buffer(n, *self.ctx.shape[1:], self.a.shape[1])
        order = [(self.pos - self.size + i) % self.capacity for i in range(self.size)][-n:]
        for i in order:
            out.add(*(getattr(self, f)[i] for f in self.FIELDS))
        return out

    def load_blob(self, blob: dict) -> None:
        self.size, self.pos = int(blob["size"]), int(blob["pos"])
        for f in self.FIELDS:
            getattr(self, f)[: self.size] = blob[f].numpy()


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
            self.actor = nn.Sequential(_mlp(o.encoder + FEATURES, o.hidden, d), nn.Sigmoid())
            self.critics = nn.ModuleList([_mlp(o.encoder + FEATURES + d, o.hidden, 1) for _ in range(2)])
        self.nets = nn.ModuleDict({"encoder": self.encoder, "actor": self.actor, "critics": self.critics})
        self.nets.to(self.device)
        self.targets = copy.deepcopy(self.nets)
        self.opt_actor = torch.optim.Adam(self.actor.parameters(), lr=o.lr_actor)
        self.opt_critic = torch.optim.Adam([*self.encoder.parameters(), *self.critics.parameters()], lr=o.lr_critic)
        self.buffer = Buffer(o.buffer, o.context, s, d)
        self.updates = 0

    def act(self, ctx: np.ndarray, feats: np.ndarray) -> np.ndarray:
        """The policy's point of the unit cube for one state (no noise)."""
        with torch.no_grad():
            c = torch.as_tensor(ctx, device=self.device).unsqueeze(0)
            f = torch.as_tensor(feats, device=self.device).unsqueeze(0)
            return self.actor(self.encoder(c, f)).squeeze(0).cpu().numpy().astype(float)

    def update(self, rng: np.random.Generator, recent: int = 0) -> None:
        """One TD3 step on a batch from the buffer (the actor and targets every ``policy_delay`` steps); ``recent``:
        see ``Buffer.sample``."""
        o = self.options
        if self.buffer.size < 2:
            return
        ctx, feats, a, r, ctx2, feats2, done = self.buffer.sample(o.batch, rng, self.device, recent)
        noise = torch.as_tensor(np.clip(rng.normal(0.0, o.target_noise, size=a.shape), -o.noise_clip, o.noise_clip),
                                dtype=a.dtype, device=self.device)
        with torch.no_grad():
            t = self.targets
            s2 = t["encoder"](ctx2, feats2)
            a2 = (t["actor"](s2) + noise).clamp(0.0, 1.0)
            q2 = torch.min(*(c(torch.cat([s2, a2], -1)).squeeze(-1) for c in t["critics"]))
            y = r + o.gamma * (1.0 - done) * q2
        s = self.encoder(ctx, feats)
        q = [c(torch.cat([s, a], -1)).squeeze(-1) for c in self.critics]
        loss = sum(((qi - y) ** 2).mean() for qi in q)
        self.opt_critic.zero_grad()
        loss.backward()
        self.opt_critic.step()
        self.updates += 1
        if self.updates % o.policy_delay:
            return
        s = s.detach()
        actor_loss = -self.critics[0](torch.cat([s, self.actor(s)], -1)).mean()
        self.opt_actor.zero_grad()
        actor_loss.backward()
        self.opt_actor.step()
        with torch.no_grad():
            for p, pt in zip(self.nets.parameters(), self.targets.parameters()):
                pt.mul_(1.0 - o.tau).add_(p, alpha=o.tau)

    # --- persistence: one blob of tensors (torch.save, weights_only loadable) ---------------------------------

    def to_blob(self, buffer: bool = True) -> dict:
        return {"d": self.d, "options": asdict(self.options), "nets": self.nets.state_dict(),
                "targets": self.targets.state_dict(), "opt_actor": self.opt_actor.state_dict(),
                "opt_critic": self.opt_critic.state_dict(), "updates": self.updates,
                "buffer": self.buffer.to_blob() if buffer else None}

    @classmethod
    def from_blob(cls, blob: dict, device: str = "auto") -> "Agent":
        agent = cls(int(blob["d"]), AgentOptions(**blob["options"]), device)
        agent.nets.load_state_dict(blob["nets"])
        agent.targets.load_state_dict(blob["targets"])
        agent.opt_actor.load_state_dict(blob["opt_actor"])
        agent.opt_critic.load_state_dict(blob["opt_critic"])
        agent.updates = int(blob["updates"])
        if blob.get("buffer"):
            capacity = max(int(blob["buffer"]["capacity"]), 1)
            agent.buffer = Buffer(capacity, *agent.buffer.ctx.shape[1:], agent.d)
            agent.buffer.load_blob(blob["buffer"])
        return agent
