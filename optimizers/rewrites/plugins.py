"""The rewrite optimizers: one per search strategy over the same rules (``optimizers.rewrites.search.strategies``,
``optimizers.rewrites.search.aurora``). Aurora's module and PyTorch are imported when Aurora first needs them
(``_torch``): every CLI call lists the optimizers, and PyTorch alone takes a second to import."""

from __future__ import annotations

import base64
import io
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from advisor.core.progress import Say
from optimizers.rewrites.base import RewriteOptimizer
if TYPE_CHECKING:
    from optimizers.rewrites.search.aurora import Aurora
    from optimizers.rewrites.search.egraph import Search
    from optimizers.rewrites.search.strategies import Result


def _strategies():
    """``optimizers.rewrites.search.strategies``, imported when a search first runs (it loads egglog: listing the
    optimizers, as every CLI call does, needs none of it)."""
    from optimizers.rewrites.search import strategies

    return strategies


def _torch():
    """(the Aurora class, the torch module), imported on first use."""
    import torch

    from optimizers.rewrites.search.aurora import Aurora

    return Aurora, torch


class Saturate(RewriteOptimizer):
    name = "saturate"
    description = "every rule in turn, round after round, until nothing changes or the round cap (a baseline)"

    def _setup(self, rounds: int = 6) -> None:
        self.rounds = rounds

    def _search(self, search: Search) -> Result:
        return _strategies().saturate(search, self.rounds)


class _Stepped(RewriteOptimizer):
    """A strategy bounded by a number of steps (rules run)."""

    def _setup(self, steps: int = 30) -> None:
        self.steps = steps


class Greedy(_Stepped):
    name = "greedy"
    description = "each step the rule that lowers the estimated cost most, until none does (a baseline)"

    def _search(self, search: Search) -> Result:
        return _strategies().greedy(search, self.steps)


class RandomOrder(_Stepped):
    name = "random"
    description = "a seeded random rule each step (a baseline)"

    def _search(self, search: Search) -> Result:
        return _strategies().random_order(search, self.steps, self.seed)


class AuroraRewriter(RewriteOptimizer):
    """Aurora: a PPO policy picks the next rule and when to stop. ``prepare(model_dir)`` loads the policy stored
    there (``aurora.pt``, trained for the same rule list); else it starts from the policy shipped with the package
    (``optimizers.rewrites.search.pretrain``: trained ahead on generated schemas) and adapts it with ``adapt`` episodes
    on the problem's own statements; only without a shipped policy (or with ``retrain``) does it train one from
    scratch for ``episodes`` on the problem's statements (unless ``own`` is False) and ``corpus`` statements
    generated from its schema (``optimizers.rewrites.search.corpus``), each episode under row estimates scaled at random
    per table (so the policy learns shapes, not one set of statistics). It stores what it made; the policy is kept
    in the state so a restored optimizer answers the same."""

    name = "aurora"
    description = "Aurora: a learned policy (PPO) chooses the next rule and when to stop"
    MODEL = "aurora.pt"

    def _setup(self, episodes: int = 300, device: str = "auto", retrain: bool = False, corpus: int = 40,
               own: bool = True, adapt: int = 8) -> None:
        self.episodes, self.device, self.retrain, self.adapt = episodes, device, retrain, adapt
        self.corpus, self.own = corpus, own  # generated training statements; train on the problem's own too
        self.agent: Aurora | None = None
        self.training: dict | None = None

    def prepare(self, model_dir: Path | None, say: Say) -> dict | None:
        if self.agent is not None:
            return self.training
        path = model_dir / self.MODEL if model_dir is not None else None
        Aurora, torch = _torch()
        if path is not None and path.exists() and not self.retrain:
            try:
                self.agent = Aurora(seed=self.seed, device=self.device)
                blob = torch.load(path, map_location="cpu", weights_only=True)
                self.agent.load_state_dict(blob["state"])
                self.training = {**blob.get("training", {}), "reused": True, "model": str(path)}
                say(f"Aurora: using the stored policy ({path})")
                return self.training
            except (ValueError, KeyError, RuntimeError, OSError, pickle.UnpicklingError) as e:
                say(f"Aurora: the stored policy cannot be used ({e}); training again")
                self.agent = None
        if self.retrain or self._from_shipped(say) is None:
            self._train(say)
        if path is not None and self.agent is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"state": self.agent.state_dict(), "training": self.training}, path)
        self.training = {**(self.training or {}), "reused": False, "model": str(path) if path else None}
        return self.training

    def _from_shipped(self, say: Say) -> dict | None:
        """The shipped policy, adapted with ``adapt`` episodes on the problem's own statements; None without one."""
        from optimizers.rewrites.search.pretrain import makers, shipped

        found = shipped(seed=self.seed, device=self.device)
        if found is None:
            return None
        self.agent, trained = found
        own = makers(self.problem, list(self.problem.lowered.values()), self.seed) if self.own else []
        say(f"Aurora: starting from the shipped policy (trained on {len(trained.get('schemas', []))} generated "
            f"schemas); adapting it with {self.adapt if own else 0} episode(s) on this workload")
        adapted = self.agent.train(own, self.adapt, say) if own and self.adapt else {"episodes": 0}
        self.training = {"shipped": True, "pretrained": trained, "episodes": adapted["episodes"],
                         "device": adapted.get("device", str(self.agent.device))}
        return self.training

    def _train(self, say: Say = lambda _m: None) -> None:
        self.agent = _torch()[0](seed=self.seed, device=self.device)
        rng = np.random.default_rng(self.seed)
        problem = self.problem

        def maker(low):
            def make() -> Search:
                rows = {t: n * float(10 ** rng.uniform(-1, 1)) for t, n in problem.rows.items()}
                return problem.search_of(low, rows)
            return make

        generated = problem.training_statements(self.corpus, self.seed)
        own = list(problem.lowered.values()) if self.own else []
        makers = [maker(low) for low in own + generated]
        say(f"Aurora: training on {len(own)} statement(s) of the workload and {len(generated)} generated from the "
            f"schema, {self.episodes} episodes")
        self.training = self.agent.train(makers, self.episodes, say) if makers else {"episodes": 0}

    def _search(self, search: Search) -> Result:
        if self.agent is None:
            self._train()
        return self.agent.run(search)

    def _state(self) -> dict:
        if self.agent is None:
            return {"model": None}
        out = io.BytesIO()
        _torch()[1].save(self.agent.state_dict(), out)
        return {"model": base64.b64encode(out.getvalue()).decode()}

    def _restore(self, state: dict) -> None:
        if state.get("model"):
            Aurora, torch = _torch()
            self.agent = Aurora(seed=self.seed, device=self.device)
            blob = torch.load(io.BytesIO(base64.b64decode(state["model"])), map_location="cpu", weights_only=True)
            self.agent.load_state_dict(blob)
