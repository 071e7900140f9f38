"""IA2 (arXiv 2404.05777): a TD3 actor-critic (``optimizers.indexes.td3``) that picks one index per step under
the remaining budget, with adaptive action masking (see ``optimizers.indexes.env``).

Training samples episodes from the target's templates with random frequencies and random budgets. A
recommendation is the greedy rollout of the policy plus ``samples`` rollouts that draw actions from the policy's
softmax, keeping the configuration with the lowest what-if cost (costs are cached, so shared prefixes are free).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from advisor.core.domain import IndexChange
from advisor.core.progress import Say
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes.td3 import TD3Agent, TD3Options, action_space_key, mix_sampler

__all__ = ["IA2", "TD3Agent", "TD3Options", "action_space_key", "mix_sampler"]


class IA2(IndexOptimizer):
    """IA2 over the problem's candidates. ``prepare(model_dir)`` loads the model trained for this candidate set
    from ``model_dir`` or trains one (``episodes`` on random mixes of ``templates``, the problem's queries by
    default, with budgets log-uniform in ``budgets``, bytes) and saves it there; ``ask`` without a prepared model
    trains one on the problem first. The state carries the trained weights, so a restored IA2 answers the same."""

    name = "ia2"
    description = "IA2: TD3 actor-critic with adaptive action masking over what-if costs"

    def _setup(self, agent: TD3Agent | None = None, episodes: int = 300, device: str = "auto", samples: int = 48,
               templates: Sequence[str] | None = None, budgets: tuple[int, int] | None = None,
               data_bytes: int = 0, reward: str = "relative", retrain: bool = False) -> None:
        self.agent, self.episodes, self.device, self.samples = agent, episodes, device, samples
        self.templates, self.budgets, self.data_bytes = templates, budgets, data_bytes
        self.reward, self.retrain = reward, retrain
        self.training: dict | None = None

    def prepare(self, model_dir: Path | None, say: Say) -> dict | None:
        if self._usable(self.agent):
            return self.training
        path = model_dir / f"ia2-{action_space_key(self.problem.candidates)}.pt" if model_dir is not None else None
        stored = self._stored_model(model_dir, path) if not self.retrain else None
        if stored is not None:
            self.agent = TD3Agent.load(stored[0], stored[1], self.device)
            say(f"IA2: using the model trained for this candidate set ({stored[0]})")
            self.training = {**self.agent.stats.to_dict(), "reused": True, "model": str(stored[0])}
            return self.training
        self._train(say)
        if path is not None:
            self.agent.save(path)
        self.training = {**self.agent.stats.to_dict(), "reused": False, "model": str(path) if path else None}
        return self.training

    def _stored_model(self, model_dir: Path | None, exact: Path | None):
        """(path, its candidates) of a stored model whose action space covers the problem's candidates: the one
        trained for exactly these, else the newest trained for more (another mix of the same templates)."""
        if exact is not None and exact.exists():
            return exact, self.problem.candidates
        if model_dir is None or not model_dir.is_dir():
            return None
        wanted = set(self.problem.candidates)
        for path in sorted(model_dir.glob("ia2-*.pt"), key=lambda p: p.stat().st_mtime, reverse=True):
            space = TD3Agent.action_space(path)
            if space is not None and wanted <= set(space):
                return path, space
        return None

    def _train(self, say: Say) -> None:
        problem = self.problem
        templates = list(self.templates or [q.queryid for q in problem.queries])
        budget = max(problem.budget_bytes, 1)
        lo = max(1, min(budget // 2, int(0.05 * self.data_bytes)))
        lo, hi = self.budgets or (lo, max(budget * 2, int(0.5 * self.data_bytes), lo + 1))
        self.agent = TD3Agent(problem.candidates, TD3Options(episodes=self.episodes, reward=self.reward), self.device,
                              self.seed)
        say(f"IA2: training on {len(templates)} statement templates, {self.episodes} episodes on {self.agent.device}")
        self.agent.train(mix_sampler(problem, templates, (lo, hi)), say=say)

    def _usable(self, agent: TD3Agent | None) -> bool:
        return agent is not None and set(self.problem.candidates) <= set(agent.candidates)

    def _select(self) -> list[IndexChange]:
        if not self._usable(self.agent):
            self._train(lambda _m: None)
        assert self.agent is not None
        return self.agent.rollout(self.problem, self.samples)

    def _state(self) -> dict:
        return {"model": self.agent.to_text() if self.agent is not None else None}

    def _restore(self, state: dict) -> None:
        if state.get("model"):
            self.agent = TD3Agent.from_text(state["model"], self.problem.candidates, self.device)
