"""The rewrite optimizers: one per search strategy over the same rules (``optimizers.rewrites.strategies``,
``optimizers.rewrites.aurora``)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import torch

from advisor.core.progress import Say
from optimizers.rewrites.aurora import Aurora
from optimizers.rewrites.base import RewriteOptimizer
from optimizers.rewrites.search import Search
from optimizers.rewrites.strategies import Result, greedy, random_order, saturate


class Saturate(RewriteOptimizer):
    name = "saturate"
    description = "every rule in turn, round after round, until nothing changes or the round cap (a baseline)"

    def _setup(self, rounds: int = 6) -> None:
        self.rounds = rounds

    def _search(self, search: Search) -> Result:
        return saturate(search, self.rounds)


class _Stepped(RewriteOptimizer):
    """A strategy bounded by a number of steps (rules run)."""

    def _setup(self, steps: int = 30) -> None:
        self.steps = steps


class Greedy(_Stepped):
    name = "greedy"
    description = "each step the rule that lowers the estimated cost most, until none does (a baseline)"

    def _search(self, search: Search) -> Result:
        return greedy(search, self.steps)


class RandomOrder(_Stepped):
    name = "random"
    description = "a seeded random rule each step (a baseline)"

    def _search(self, search: Search) -> Result:
        return random_order(search, self.steps, self.seed)


class AuroraRewriter(RewriteOptimizer):
    """Aurora: a PPO policy picks the next rule and when to stop; trained on the problem's statements by
    ``prepare`` (or on first ask), kept in the state so a restored optimizer answers the same."""

    name = "aurora"
    description = "Aurora: a learned policy (PPO) chooses the next rule and when to stop"

    def _setup(self, episodes: int = 200, device: str = "auto") -> None:
        self.episodes, self.device = episodes, device
        self.agent: Aurora | None = None
        self.training: dict | None = None

    def prepare(self, model_dir: Path | None, say: Say) -> dict | None:
        if self.agent is None:
            self._train(say)
        return self.training

    def _train(self, say: Say = lambda _m: None) -> None:
        self.agent = Aurora(seed=self.seed, device=self.device)
        makers = [lambda q=q: self.problem.search(q) for q in self.problem.lowered]
        self.training = self.agent.train(makers, self.episodes, say) if makers else {"episodes": 0}

    def _search(self, search: Search) -> Result:
        if self.agent is None:
            self._train()
        return self.agent.run(search)

    def _state(self) -> dict:
        if self.agent is None:
            return {"model": None}
        out = io.BytesIO()
        torch.save(self.agent.state_dict(), out)
        return {"model": base64.b64encode(out.getvalue()).decode()}

    def _restore(self, state: dict) -> None:
        if state.get("model"):
            self.agent = Aurora(seed=self.seed, device=self.device)
            blob = torch.load(io.BytesIO(base64.b64decode(state["model"])), map_location="cpu", weights_only=True)
            self.agent.load_state_dict(blob)
