"""Aurora (arXiv 2407.12794): a learned policy chooses which rule to run next on a statement's e-graph, and when
to stop, under the node budget. The state: the graph's size against the budget, the steps taken, the best cost
so far against the initial one and its last change, per rule the matches of its last run and how often it ran,
and the statement's shape (tables, subqueries). The policy is a small MLP trained with PPO (clipped surrogate,
a value baseline) in PyTorch, on CUDA when present (its trunk, masking and saved state from the shared RL core,
``optimizers.rl``; PPO learns on-policy, from each batch of episodes once, so it keeps no replay buffer); the reward of
a step is the relative cost it removed minus a price on the nodes it added, so the policy learns to reach the best
plan with few nodes.

>>> from optimizers.rewrites.sql.lower import lower
>>> low = lower("SELECT 1 FROM t JOIN u ON t.a = u.c WHERE t.b > 1", {"t": {"a": "int", "b": "int"},
...             "u": {"c": "int"}}, dialect="postgres")
>>> make = lambda: Search(low, {"t": 1e5, "u": 1e5}, lambda a: 1e-5 if len(a.refs) > 1 else 0.1)
>>> agent = Aurora(seed=0)
>>> stats = agent.train([make], episodes=8)
>>> result = agent.run(make())
>>> result.cost <= result.initial_cost and stats["episodes"] == 8
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from optimizers.rewrites.rules import RULES
from optimizers.rewrites.search.egraph import Search
from optimizers.rewrites.search.strategies import Result, _result
from optimizers.rl import persistence
from optimizers.rl.networks import masked, trunk
from optimizers.torch_runtime import one_thread, resolve_device

MAX_STEPS = 24
NODE_PRICE = 0.2  # reward lost per budget's worth of nodes added
STEP_PRICE = 0.002  # reward lost per rule run (an idle step is not free)


def _masked_softmax(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    z = np.where(allowed, logits, -np.inf)
    z = np.exp(z - z[allowed].max())
    return z / z.sum()


@dataclass(frozen=True)
class AuroraOptions:
    max_steps: int = MAX_STEPS
    node_price: float = NODE_PRICE
    lr: float = 3e-3
    clip: float = 0.2
    epochs: int = 4
    batch: int = 8  # episodes per update
    hidden: int = 64
    entropy: float = 0.01  # bonus for the policy's entropy (keeps it exploring early on)


def features(search: Search, counts: np.ndarray, last: np.ndarray, steps: int, max_steps: int,
             trend: float, stale: np.ndarray) -> np.ndarray:
    n = len(counts)
    low = search.lowered
    subqueries = sum(1 for a in low.atoms if a.sub is not None)
    head = [math.log1p(search.nodes()) / math.log1p(search.node_budget), steps / max_steps,
            math.log10(max(search.cost(), 1) / max(search.initial_cost, 1)) / 6.0, trend,
            len(low.tables) / 10.0, subqueries / 5.0]
    return np.concatenate([np.asarray(head, dtype=np.float32), np.log1p(last[:n]).astype(np.float32) / 5.0,
                           (counts[:n] / max(steps, 1)).astype(np.float32), stale[:n].astype(np.float32)])


class Policy(nn.Module):
    def __init__(self, inputs: int, actions: int, hidden: int):
        super().__init__()
        self.body = trunk(inputs, hidden, nn.Tanh)
        self.pi, self.v = nn.Linear(hidden, actions), nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x)
        return self.pi(h), self.v(h).squeeze(-1)


class Aurora:
    """The agent. ``train(makers)`` runs PPO over statements (each maker builds a fresh ``Search``); ``run``
    searches one statement with the greedy policy. Actions: one per rule of ``RULES``, and stop (the last); a rule
    left out in a statement's dialect (not among ``search.rules``) is masked."""

    def __init__(self, options: AuroraOptions = AuroraOptions(), seed: int = 0, device: str = "auto"):
        self.options, self.seed = options, seed
        self.device = resolve_device(device)
        torch.manual_seed(seed)
        self.rules = RULES
        self.inputs = 6 + 3 * len(self.rules)
        self.policy = Policy(self.inputs, len(self.rules) + 1, options.hidden).to(self.device)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=options.lr)
        self.rng = np.random.default_rng(seed)

    def _mask(self, stale: np.ndarray, step: int) -> np.ndarray:
        """The actions allowed now (adaptive action masking): a rule that ran without changing the graph stays
        masked until another rule changes it (it would match nothing new); stop is masked at the first step."""
        allowed = np.append(~stale, step > 0)
        if not allowed[:-1].any():
            allowed[-1] = True  # every rule is at a fixed point: only stopping is left
        return allowed

    def _episode(self, search: Search, greedy: bool) -> list[tuple[np.ndarray, int, float, float, np.ndarray]]:
        o = self.options
        n = len(self.rules)
        counts, last, stale = np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool)
        absent = np.array([rule not in search.rules for rule in self.rules])  # left out in the statement's dialect
        out, trend = [], 0.0
        for step in range(o.max_steps):
            x = features(search, counts, last, step, o.max_steps, trend, stale)
            allowed = self._mask(stale | absent, step)
            with torch.no_grad():
                logits, _ = self.policy(torch.as_tensor(x, device=self.device))
                probs = _masked_softmax(logits.cpu().numpy().astype(np.float64), allowed)
            action = int(np.argmax(probs)) if greedy else int(self.rng.choice(n + 1, p=probs))
            if action == n:
                out.append((x, action, 0.0, float(np.log(probs[action])), allowed))
                break
            before_cost, before_nodes = search.cost(), search.nodes()
            s = search.run(self.rules[action])
            counts[action] += 1
            last[action] = s.matches
            changed = s.nodes != before_nodes or s.cost != before_cost
            if changed:
                stale[:] = False
            stale[action] = not changed
            gain = (before_cost - s.cost) / max(search.initial_cost, 1)
            trend = math.copysign(math.log1p(abs(gain) * 100) / 5.0, gain)
            reward = gain * 10 - o.node_price * (s.nodes - before_nodes) / search.node_budget - STEP_PRICE
            out.append((x, action, reward, float(np.log(probs[action])), allowed))
        return out

    def train(self, makers: Sequence[Callable[[], Search]], episodes: int = 200,
              say: Callable[[str], None] = lambda _m: None) -> dict:
        """PPO over ``episodes`` searches of the statements ``makers`` build, in turn; returns the statistics."""
        with one_thread():
            return self._train(makers, episodes, say)

    def _train(self, makers, episodes: int, say) -> dict:
        o = self.options
        batch: list = []
        finals: list[float] = []
        for ep in range(episodes):
            search = makers[ep % len(makers)]()
            traj = self._episode(search, greedy=False)
            ret, rets = 0.0, []
            for _, _, r, _, _ in reversed(traj):
                ret += r
                rets.append(ret)
            batch.extend((x, a, g, lp, m) for (x, a, _, lp, m), g in zip(traj, reversed(rets)))
            finals.append(search.cost() / max(search.initial_cost, 1))
            if (ep + 1) % o.batch == 0 or ep + 1 == episodes:
                self._update(batch)
                batch = []
            if (ep + 1) % 25 == 0:
                say(f"Aurora training: episode {ep + 1}/{episodes}, mean relative cost {np.mean(finals[-25:]):.3f}")
        return {"episodes": episodes, "device": str(self.device), "final_rc": float(np.mean(finals[-25:]))}

    def _update(self, batch) -> None:
        o = self.options
        x = torch.as_tensor(np.stack([b[0] for b in batch]), device=self.device)
        a = torch.as_tensor([b[1] for b in batch], device=self.device)
        g = torch.as_tensor([b[2] for b in batch], dtype=torch.float32, device=self.device)
        old = torch.as_tensor([b[3] for b in batch], dtype=torch.float32, device=self.device)
        allowed = torch.as_tensor(np.stack([b[4] for b in batch]), device=self.device)
        for _ in range(o.epochs):
            logits, v = self.policy(x)
            logits = masked(logits, allowed)
            logp_all = torch.log_softmax(logits, -1)
            logp = logp_all.gather(1, a[:, None]).squeeze(1)
            adv = (g - v).detach()
            adv = (adv - adv.mean()) / (adv.std() + 1e-6) if len(adv) > 1 else adv
            ratio = torch.exp(logp - old)
            surrogate = torch.min(ratio * adv, torch.clamp(ratio, 1 - o.clip, 1 + o.clip) * adv)
            entropy = -(torch.exp(logp_all) * logp_all.masked_fill(~allowed, 0.0)).sum(-1).mean()
            loss = -surrogate.mean() + 0.5 * ((g - v) ** 2).mean() - o.entropy * entropy
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def run(self, search: Search) -> Result:
        self._episode(search, greedy=True)
        return _result("aurora", search)

    def state_dict(self) -> dict:
        return {"rules": [r.name for r in self.rules], **persistence.weights(policy=self.policy)}

    def load_state_dict(self, state: dict) -> None:
        if state["rules"] != [r.name for r in self.rules]:
            raise ValueError("the stored policy was trained for another rule list: train again")
        persistence.restore(state, policy=self.policy)
