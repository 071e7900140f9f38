"""The TD3 agent behind IA2 (``optimizers.indexes.ia2``): actor and twin critics over per-candidate features,
training on sampled workload mixes, greedy and sampled rollouts, and saving the model; its networks, replay
buffer, update and persistence are the shared RL core's (``optimizers.rl``).

Actions are discrete (a candidate), so the actor scores every candidate from its features and the state, and
the action is the best-scoring *valid* candidate; the critic values a (state, action) pair from the global
features, the pooled features of the valid candidates and the chosen candidate's features. TD3's parts are all
there: twin critics with the minimum in the target, target networks with Polyak averaging, target-policy
smoothing (clipped noise on the target actor's scores) and a delayed actor update. The actor's gradient flows
through a masked softmax over its scores (the expected action's features), the usual relaxation for discrete
actions. Scoring per candidate makes the model independent of the number of candidates and lets it carry over
to workload mixes it was not trained on.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from advisor.core.domain import IndexChange
from advisor.core.progress import Say
from optimizers.indexes.env import CANDIDATE_FEATURES, GLOBAL_FEATURES, IndexEnv
from optimizers.indexes.problem import Candidate, IndexProblem
from optimizers.rl import persistence
from optimizers.rl import td3 as rl
from optimizers.rl.networks import INVALID, masked, mlp
from optimizers.rl.replay import ReplayBuffer
from optimizers.torch_runtime import cpu_threads, one_thread, resolve_device


@dataclass(frozen=True)
class IA2Options(rl.TD3Options):
    """TD3's shared hyper-parameters with IA2's defaults, and IA2's own: exploration, rewards, updates per step."""

    gamma: float = 0.9  # the shared hyper-parameters IA2 sets otherwise than TD3's defaults
    lr_critic: float = 1e-3
    tau: float = 0.01
    buffer: int = 8000
    reward_clip: float = 20.0
    episodes: int = 300
    temperature: float = 0.3  # of the actor's softmax over candidates, the expected action its gradient reads
    explore_start: float = 1.0  # chance of a random valid action, decaying linearly to explore_end
    explore_end: float = 0.05
    score_noise: float = 0.1  # Gaussian noise on the actor's scores when not acting at random
    updates_per_step: int = 2
    warmup_steps: int = 64
    reward_scale: float = 0.1
    # relative: the step's relative cost reduction, so an episode's return is its total reduction (measured better
    # here); per_storage: that reduction per unit of storage, IA2's own reward (it favours many small indexes)
    reward: str = "relative"


class Actor(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.net = mlp(CANDIDATE_FEATURES + GLOBAL_FEATURES, hidden, 1)

    def forward(self, g: torch.Tensor, phi: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Scores [batch, n] from global features [batch, G] and candidate features [batch, n, F]. With ``mask``
        [batch, n], only the valid candidates are scored (the rest get ``INVALID``, what every caller masks them to):
        most of a target's candidates are invalid in any one state, so this is most of the training's work saved."""
        gx = g.unsqueeze(1).expand(-1, phi.shape[1], -1)
        if mask is None:
            return self.net(torch.cat([phi, gx], dim=-1)).squeeze(-1)
        scores = torch.full(mask.shape, INVALID, dtype=phi.dtype, device=phi.device)
        return scores.masked_scatter(mask, self.net(torch.cat([phi[mask], gx[mask]], dim=-1)).squeeze(-1))


class Critic(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.net = mlp(GLOBAL_FEATURES + 3 * CANDIDATE_FEATURES, hidden, 1)

    def forward(self, g, pooled, action_phi) -> torch.Tensor:
        """Values [batch] from global features, the state's ``pool``ed candidate features and the action's."""
        return self.net(torch.cat([g, pooled, action_phi], dim=-1)).squeeze(-1)


def pool(phi: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The critic's view of the valid candidates of a state: their mean and peak features [2 F] (zeros and -1
    when none is valid). Computed once per transition, when it enters the replay buffer."""
    valid = phi[mask]
    if not len(valid):
        return np.concatenate([np.zeros(CANDIDATE_FEATURES), -np.ones(CANDIDATE_FEATURES)]).astype(np.float32)
    return np.concatenate([valid.mean(0), valid.max(0)]).astype(np.float32)


@dataclass
class TrainStats:
    episodes: int = 0
    steps: int = 0
    updates: int = 0
    seconds: float = 0.0
    device: str = "cpu"
    final_rc: list[float] = field(default_factory=list)  # relative cost at each episode's end
    whatif_calls: int = 0  # planner calls the training made (what-if costs not yet cached)
    # "episode limit", or "what-if budget" when the planner calls allowed were spent first (not "episodes": a value
    # equal to a key pickles as a back-reference in one blob and not in its restored copy, and the states differ)
    stopped_by: str = "episode limit"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["final_rc"] = [round(x, 4) for x in self.final_rc]
        return d


class TD3Agent:
    """The IA2 policy over a fixed list of candidates (the target's action space)."""

    def __init__(self, candidates: Sequence[Candidate], options: IA2Options = IA2Options(), device: str = "auto",
                 seed: int = 0):
        self.candidates = tuple(candidates)
        if options.reward not in ("per_storage", "relative"):
            raise ValueError(f"unknown IA2 reward {options.reward!r}: per_storage or relative")
        self.options = options
        self.device = resolve_device(device)
        self.seed = seed
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        h = options.hidden
        self.actor = Actor(h).to(self.device)
        self.critics = nn.ModuleList([Critic(h), Critic(h)]).to(self.device)
        self.actor_t = copy.deepcopy(self.actor)
        self.critics_t = copy.deepcopy(self.critics)
        self.opt_actor = torch.optim.Adam(self.actor.parameters(), lr=options.lr_actor)
        self.opt_critic = torch.optim.Adam(self.critics.parameters(), lr=options.lr_critic)
        self.env = IndexEnv(self.candidates)
        self.stats = TrainStats(device=str(self.device))
        self.sample_temperature = 1.0  # on standardized scores

    # --- acting ---------------------------------------------------------------------------------------------

    def _scores(self, g: np.ndarray, phi: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The actor's scores of the valid candidates (in the order of ``np.flatnonzero(mask)``)."""
        with torch.no_grad():
            gt = torch.as_tensor(g, device=self.device).unsqueeze(0)
            valid = torch.as_tensor(np.flatnonzero(mask), device=self.device)
            pt = torch.as_tensor(phi, device=self.device)[valid].unsqueeze(0)
            return self.actor(gt, pt).squeeze(0).cpu().numpy()

    def act(self, g: np.ndarray, phi: np.ndarray, mask: np.ndarray, explore: float = 0.0) -> int:
        valid = np.flatnonzero(mask)
        if explore > 0 and self.rng.random() < explore:
            return int(self.rng.choice(valid))
        scores = self._scores(g, phi, mask)
        if explore > 0:
            scores = scores + self.rng.normal(0.0, self.options.score_noise, size=len(mask))[valid]
        return int(valid[np.argmax(scores)])

    def rollout(self, problem: IndexProblem, samples: int = 0, max_steps: int = 0) -> list[IndexChange]:
        """The policy's configuration for ``problem``: greedy steps until no action is valid. With ``samples``,
        that many more episodes draw each action from the softmax of the policy's standardized scores over the
        valid candidates (temperature ``sample_temperature``), and the configuration with the lowest what-if cost wins;
        the draws are seeded, so the answer is reproducible. With ``max_steps`` > 0, no further sample starts once
        the sampled rollouts took that many steps (each step costs a configuration: a bound on planner calls that,
        unlike counting them, does not depend on what is cached, so the same state gives the same answer)."""
        env = self.env
        rng = np.random.default_rng(self.seed)
        best: tuple[float, list[IndexChange]] | None = None
        taken = 0
        with one_thread():
            for k in range(samples + 1):
                if k and max_steps > 0 and taken >= max_steps:
                    break
                env.reset(problem)
                mask = env.mask()
                while mask.any():
                    g, phi = env.features()
                    if k == 0:
                        action = self.act(g, phi, mask)
                    else:
                        valid = np.flatnonzero(mask)
                        z = self._scores(g, phi, mask)
                        z = (z - z.mean()) / (z.std() + 1e-6) / self.sample_temperature  # scale-free
                        p = np.exp(z - z.max())
                        action = int(rng.choice(valid, p=p / p.sum()))
                    env.step(action)
                    taken += 1 if k else 0
                    mask = env.mask()
                if best is None or env.cost < best[0] - 1e-9:
                    best = (env.cost, env.config())
        return best[1] if best else []

    # --- learning -------------------------------------------------------------------------------------------

    def train(self, sample: Callable[[np.random.Generator], IndexProblem], episodes: int | None = None,
              say: Say | None = None, calls: Callable[[], int] | None = None, max_calls: int = 0) -> TrainStats:
        """Run ``episodes`` episodes on problems drawn by ``sample(rng)``, learning as it goes. With ``calls`` (the
        planner calls made so far) and ``max_calls`` > 0, training also ends after the episode in which the calls
        made since the start reach ``max_calls``; exploration decays with whichever of episodes and calls is
        further along, so a budget cut still ends on the exploiting policy. Calls, not seconds, bound it: the same
        costs give the same model on any machine."""
        o = self.options
        episodes = episodes or o.episodes
        buffer = self.new_buffer()
        start = time.perf_counter()
        calls = calls or (lambda: 0)
        calls0 = calls()

        def progress(ep: int) -> float:
            spent = (calls() - calls0) / max_calls if max_calls > 0 else 0.0
            return max(ep / max(1, 0.8 * episodes), spent / 0.8)

        with cpu_threads(self.device):
            for ep in range(episodes):
                if max_calls > 0 and calls() - calls0 >= max_calls:
                    self.stats.stopped_by = "what-if budget"
                    if say:
                        say(f"IA2 training: what-if budget of {max_calls} planner calls spent after {ep} episodes")
                    break
                explore = o.explore_start + (o.explore_end - o.explore_start) * min(1.0, progress(ep))
                self.episode(sample(self.rng), explore, buffer)
                if say and (ep + 1) % max(1, episodes // 10) == 0:
                    recent = self.stats.final_rc[-max(1, episodes // 10):]
                    say(f"IA2 training: episode {ep + 1}/{episodes}, mean relative cost {np.mean(recent):.3f}, "
                        f"{time.perf_counter() - start:.0f}s")
        self.stats.seconds += time.perf_counter() - start
        self.stats.whatif_calls += calls() - calls0
        return self.stats

    def new_buffer(self) -> ReplayBuffer:
        """A replay buffer over this agent's candidates: per state its global features, the critic's ``pool``ed
        view, the candidates' features and the valid ones; the action (a candidate), the reward and whether done."""
        n, g, f, pooled = len(self.candidates), (GLOBAL_FEATURES,), (CANDIDATE_FEATURES,), (2 * CANDIDATE_FEATURES,)
        state = {"g": (g, np.float32), "pooled": (pooled, np.float32), "phi": ((n, *f), np.float32),
                 "mask": ((n,), bool)}
        return ReplayBuffer(self.options.buffer, {**state, "a": ((), np.int64), "r": ((), np.float32),
                                                  **{f"{k}2": v for k, v in state.items()}, "done": ((), np.float32)})

    def episode(self, problem: IndexProblem, explore: float, buffer: ReplayBuffer) -> None:
        """One training episode on ``problem``, acting with exploration ``explore`` and learning from ``buffer``
        (of this agent's candidates) as it goes."""
        o, env = self.options, self.env
        env.reset(problem)
        mask = env.mask()
        g, phi = env.features()
        while mask.any():
            a = self.act(g, phi, mask, explore)
            step = env.step(a)
            mask2 = env.mask()
            g2, phi2 = env.features()
            raw = step.reward if o.reward == "per_storage" else step.relative / o.reward_scale
            r = float(np.clip(raw, -o.reward_clip, o.reward_clip)) * o.reward_scale
            buffer.add(g, pool(phi, mask), phi, mask, a, r, g2, pool(phi2, mask2), phi2, mask2, step.done)
            self.stats.steps += 1
            if buffer.size >= o.warmup_steps:
                for _ in range(o.updates_per_step):
                    self._update(buffer)
            g, phi, mask = g2, phi2, mask2
        self.stats.episodes += 1
        self.stats.final_rc.append(env.cost / env.cost0 if env.cost0 else 1.0)

    def _update(self, buffer: ReplayBuffer) -> None:
        """One TD3 update (``optimizers.rl.td3.update``): the target's next action is the target actor's best valid
        candidate under smoothing noise, and the actor's loss values the expected action of its softmax."""
        o = self.options
        g, pooled, phi, mask, a, r, g2, pooled2, phi2, mask2, done = buffer.sample(o.batch, self.rng, self.device)
        rows = torch.arange(len(a), device=self.device)

        def target() -> torch.Tensor:
            noise = rl.smoothing_noise(mask2.shape, o, self.device)
            a2 = masked(self.actor_t(g2, phi2, mask2) + noise, mask2).argmax(1)
            q2 = rl.twin_min(c(g2, pooled2, phi2[rows, a2]) for c in self.critics_t)
            return rl.bellman(r, done, q2, o.gamma, alive=mask2.any(1).float())

        def actor_loss() -> torch.Tensor:
            weights = torch.softmax(self.actor(g, phi, mask) / o.temperature, dim=1)
            soft_action = (weights.unsqueeze(-1) * phi).sum(1)
            return -self.critics[0](g, pooled, soft_action).mean()

        self.stats.updates = rl.update(
            o, self.stats.updates, target=target, values=lambda: [c(g, pooled, phi[rows, a]) for c in self.critics],
            actor_loss=actor_loss, critic_optimizer=self.opt_critic, actor_optimizer=self.opt_actor,
            pairs=((self.actor, self.actor_t), (self.critics, self.critics_t)))

    # --- persistence ----------------------------------------------------------------------------------------

    def fingerprint(self) -> str:
        return action_space_key(self.candidates)

    def _blob(self, meta: dict | None = None) -> dict:
        return {**persistence.weights(actor=self.actor, critics=self.critics), "options": asdict(self.options),
                "key": self.fingerprint(), "stats": self.stats.to_dict(), "seed": self.seed,
                "candidates": [_plain(c) for c in self.candidates], "meta": meta or {}}

    def save(self, path: Path, meta: dict | None = None) -> None:
        persistence.save(self._blob(meta), path)

    def to_text(self) -> str:
        """The model as text (base64 of what ``save`` writes), for an optimizer's JSON state."""
        return persistence.to_text(self._blob())

    @classmethod
    def from_text(cls, text: str, candidates: Sequence[Candidate], device: str = "auto") -> "TD3Agent":
        return cls._from_blob(persistence.from_text(text), candidates, device, "the saved state")

    @classmethod
    def load(cls, path: Path, candidates: Sequence[Candidate], device: str = "auto") -> "TD3Agent":
        return cls._from_blob(persistence.load(path), candidates, device, f"model {path}")

    @staticmethod
    def action_space(path: Path) -> tuple[Candidate, ...] | None:
        """The candidates the model at ``path`` was trained over (None for a model saved without them)."""
        blob = persistence.load(path)
        return tuple(_candidate(c) for c in blob["candidates"]) if "candidates" in blob else None

    @classmethod
    def _from_blob(cls, blob: dict, candidates: Sequence[Candidate], device: str, where: str) -> "TD3Agent":
        if blob["key"] != action_space_key(candidates):
            raise ValueError(f"{where} was trained for another candidate set")
        agent = cls.from_weights(blob, candidates, device)
        agent.stats = TrainStats(**{**blob["stats"], "device": str(agent.device)})
        return agent

    def weights(self) -> dict:
        """The networks and options alone, bound to no candidate list (``from_weights`` binds them to one)."""
        return {**persistence.weights(actor=self.actor, critics=self.critics), "options": asdict(self.options),
                "seed": self.seed}

    @classmethod
    def from_weights(cls, weights: dict, candidates: Sequence[Candidate], device: str = "auto",
                     seed: int | None = None) -> "TD3Agent":
        """An agent over ``candidates`` with the networks of ``weights`` (``weights()``, or a saved model's blob),
        whatever candidates they were trained over: the actor scores each candidate from its own features and the
        state's, so one set of weights serves any schema. Target networks start equal to the weights."""
        agent = cls(candidates, IA2Options(**weights["options"]), device,
                    int(weights.get("seed", 0)) if seed is None else seed)
        persistence.restore(weights, actor=agent.actor, critics=agent.critics)
        persistence.restore(weights, actor=agent.actor_t, critics=agent.critics_t)
        return agent

    def bound(self, candidates: Sequence[Candidate]) -> "TD3Agent":
        """This agent over another candidate list, sharing its networks, optimizers, random generator and
        statistics: training one trains all (``optimizers.indexes.ia2_shipped`` trains one agent across schemas)."""
        other = copy.copy(self)
        other.candidates = tuple(candidates)
        other.env = IndexEnv(other.candidates)
        return other


def _variant(index: IndexChange) -> list:
    """An index's INCLUDE columns and predicate, for variants only (plain candidates keep their old form, so
    models saved before variants existed still match)."""
    return [list(index.include), index.where] if index.include or index.where else []


def _plain(c: Candidate) -> list:
    return [c.index.schema, c.index.table, list(c.index.columns), c.index.method, sorted(c.queries),
            *_variant(c.index)]


def _candidate(plain: list) -> Candidate:
    schema, table, columns, method, queries, *variant = plain
    include, where = variant if variant else ((), None)
    return Candidate(IndexChange(schema, table, tuple(columns), method, include=tuple(include), where=where),
                     frozenset(queries))


def action_space_key(candidates: Sequence[Candidate]) -> str:
    text = json.dumps([[c.index.schema, c.index.table, list(c.index.columns), c.index.method, *_variant(c.index)]
                       for c in candidates])
    return hashlib.sha1(text.encode()).hexdigest()[:16]
