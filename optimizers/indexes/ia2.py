"""IA2 (arXiv 2404.05777): a TD3 actor-critic (``optimizers.indexes.td3``) that picks one index per step under
the remaining budget, with adaptive action masking (see ``optimizers.indexes.env``).

Training samples episodes from the target's templates with random frequencies and random budgets, a share
(``held_out``) of episodes on mixes unlike the workload: some statements left out, frequencies skewed over four
orders of magnitude, budgets from a quarter of the lowest to twice the highest, and a share (``own_mix``) on the
target's own mix and budget. After training, the greedy policy
is checked on a few such mixes against Extend (``training["held_out"]``); the recommendation path
(``advisor.tuning.indexes.choice.propose``) falls back to the baselines' set whenever that is cheaper. A
recommendation is the greedy rollout of the policy plus ``samples`` rollouts that draw actions from the policy's
softmax and a beam decoding of the policy (``beam``: the policy's few best actions per step, the cheapest partial
configurations kept), keeping the configuration with the lowest what-if cost (costs are cached, so shared prefixes
are free).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from advisor.core.domain import IndexChange
from advisor.core.progress import Say
from optimizers.indexes.base import IndexOptimizer
from optimizers.indexes import beam
from optimizers.indexes.baselines import Extend
from optimizers.indexes.mixes import training_sampler
from optimizers.indexes.problem import IndexProblem

if TYPE_CHECKING:
    from optimizers.indexes.td3 import TD3Agent

__all__ = ["IA2"]

HELD_OUT_CHECKS = 3  # mixes unlike the workload the trained policy is compared with Extend on, at most
# planner calls after which no further mix is checked (each mix has a new budget, so Extend plans many new
# configurations: on 33 JOB joins three mixes took 72 s)
HELD_OUT_CALLS = 2_000
# steps after which no further sampled rollout starts (each step plans a new configuration; 48 samples of up to
# 32 steps and the fallback took 90 s on 33 JOB joins): about 6 samples there, all 48 on small workloads
SAMPLE_STEPS = 200
# planner calls training may make (what-if costs not cached yet; 0: no bound): what bounds the advice time on big
# joins (JOB at SF 0.3: ~7 ms a call, ~14 ms with the TD3 updates; 10,000 took 141 s of a 254 s advice). Episodes
# end early when it is spent, and the stats say so; so does the check on unlike mixes, which is then left out.
WHATIF_BUDGET = 6_000
# share of training episodes on the target's own mix and budget (the one the recommendation is asked for): on the
# app workload 0 / 0.2 / 0.4 of them brought IA2's own set from 1.13x to 1.11x and 1.06x Extend's what-if cost
OWN_MIX = 0.3
# starting from the shipped model (``optimizers.indexes.ia2_shipped``), the episodes and planner calls spent adapting
# it to the target: a small share of a training from scratch, on the same mixes, exploring less
ADAPT_EPISODES = 40
ADAPT_WHATIF_BUDGET = 1_000
ADAPT_EXPLORE = 0.3
# beam decoding of the policy (``optimizers.indexes.beam``): partial configurations kept per step (0: off), each
# grown by the policy's 6 best actions; the cheapest of the greedy rollout, the samples and the beam is IA2's set.
# On 40 TPC-H instances (SF 0.05, 8 mixes x 5 budgets) IA2's set came within 2% of the ILP's what-if cost on 80%
# (62-68% without the beam; a beam of 3 x 4: 70%)
BEAM = 6


def _td3():
    """``optimizers.indexes.td3``, imported when IA2 first needs it: it loads PyTorch, a second that every CLI call
    would otherwise pay (the registry lists IA2)."""
    from optimizers.indexes import td3

    return td3


class IA2(IndexOptimizer):
    """IA2 over the problem's candidates. ``prepare(model_dir)`` loads the model trained for this candidate set
    from ``model_dir`` or trains one (``episodes`` on random mixes of ``templates``, the problem's queries by
    default, with budgets log-uniform in ``budgets``, bytes) and saves it there; ``ask`` without a prepared model
    trains one on the problem first. The state carries the trained weights, so a restored IA2 answers the same."""

    name = "ia2"
    checked_against_baselines = True
    description = "IA2: TD3 actor-critic with adaptive action masking over what-if costs"

    def _setup(self, agent: TD3Agent | None = None, episodes: int = 300, device: str = "auto", samples: int = 48,
               templates: Sequence[str] | None = None, budgets: tuple[int, int] | None = None,
               data_bytes: int = 0, reward: str = "relative", retrain: bool = False, held_out: float = 0.3,
               whatif_budget: int = WHATIF_BUDGET, own_mix: float = OWN_MIX, shipped: bool = True,
               adapt_episodes: int = ADAPT_EPISODES, adapt_whatif_budget: int = ADAPT_WHATIF_BUDGET,
               beam: int = BEAM) -> None:
        self.agent, self.episodes, self.device, self.samples = agent, episodes, device, samples
        self.beam = max(0, int(beam))
        # ``episodes`` bounds any training of this run, adapting the shipped model included (`--episodes 15`)
        self.shipped, self.adapt_episodes = shipped, max(0, min(int(adapt_episodes), int(episodes)))
        self.adapt_whatif_budget = max(0, int(adapt_whatif_budget))
        self.whatif_budget = max(0, int(whatif_budget))
        self.held_out = min(max(float(held_out), 0.0), 1.0)
        self.own_mix = min(max(float(own_mix), 0.0), 1.0 - self.held_out)
        self.templates, self.budgets, self.data_bytes = templates, budgets, data_bytes
        self.reward, self.retrain = reward, retrain
        self.training: dict | None = None

    def prepare(self, model_dir: Path | None, say: Say) -> dict | None:
        if self._usable(self.agent):
            return self.training
        path = model_dir / f"ia2-{_td3().action_space_key(self.problem.candidates)}.pt" if model_dir is not None \
            else None
        stored = self._stored_model(model_dir, path) if not self.retrain else None
        if stored is not None:
            self.agent = _td3().TD3Agent.load(stored[0], stored[1], self.device)
            say(f"IA2: using the model trained for this candidate set ({stored[0]})")
            self.training = {**self.agent.stats.to_dict(), "reused": True, "model": str(stored[0])}
            return self.training
        adapted = self._adapt_shipped(say) if self.shipped and not self.retrain else None
        unlike = self._train(say) if adapted is None else None
        if path is not None:
            self.agent.save(path)
        self.training = {**self.agent.stats.to_dict(), "reused": False, "model": str(path) if path else None,
                         **(adapted or {"held_out": self._check_unlike(unlike, say)})}
        return self.training

    def _adapt_shipped(self, say: Say) -> dict | None:
        """Start from the shipped model and adapt it to the target for ``adapt_episodes`` episodes (at most
        ``adapt_whatif_budget`` planner calls) on the mixes a training from scratch uses; what the training dict
        adds (``started_from``, the shipped model's manifest), or None when no model is shipped."""
        from dataclasses import replace

        from optimizers.indexes import ia2_shipped

        found = ia2_shipped.shipped(self.problem.candidates, self.device, self.seed)
        if found is None:
            return None
        if found[0].options.reward != self.reward:  # trained for another reward: no starting point
            return None
        self.agent, manifest = found
        self.agent.options = replace(self.agent.options, explore_start=min(ADAPT_EXPLORE,
                                                                           self.agent.options.explore_start))
        say(f"IA2: starting from the shipped model ({ia2_shipped.summary(manifest)}) and adapting for "
            f"{self.adapt_episodes} episodes on {self.agent.device}")
        kept = {}
        if self.adapt_episodes:
            kept = self._adapt(say)
        return {"started_from": "shipped", "shipped": manifest, "adapt_episodes": self.adapt_episodes, **kept,
                "held_out": {"share": self.held_out, "checks": 0, "skipped": "adapted from the shipped model"}}

    def _adapt(self, say: Say) -> dict:
        """Adapt the agent on the target's mixes; the shipped weights stay when the adapted policy's greedy set for
        the target's own mix costs more than theirs (a few episodes can unlearn what many taught). The shipped
        policy's set is costed first, which plans the target's features (each candidate's benefit alone, what any
        answer needs): the adaptation's what-if budget is for the configurations it tries beyond them."""
        import copy

        agent, problem = self.agent, self.problem
        before = copy.deepcopy({"actor": agent.actor.state_dict(), "critics": agent.critics.state_dict()})
        base = problem.cost() or 1.0
        shipped_rc = problem.cost(agent.rollout(problem)) / base
        sample, _ = self._samplers()
        agent.train(sample, self.adapt_episodes, say=say, calls=lambda: problem.whatif.calls,
                    max_calls=self.adapt_whatif_budget)
        adapted_rc = problem.cost(agent.rollout(problem)) / base
        greedy = {"shipped": round(shipped_rc, 4), "adapted": round(adapted_rc, 4)}
        if adapted_rc <= shipped_rc + 1e-9:
            return {"kept": "adapted", "greedy_rc": greedy}
        for net, part in ((agent.actor, "actor"), (agent.critics, "critics")):
            net.load_state_dict(before[part])
        for net, target in ((agent.actor, agent.actor_t), (agent.critics, agent.critics_t)):
            target.load_state_dict(net.state_dict())
        say(f"IA2: the adapted policy's set costs {adapted_rc:.3f} of the workload's cost, the shipped one's "
            f"{shipped_rc:.3f}: keeping the shipped weights")
        return {"kept": "shipped", "greedy_rc": greedy}

    def _samplers(self):
        """(training mixes, mixes unlike the workload) of the target, as ``mixes.training_sampler`` draws them."""
        problem = self.problem
        templates = list(self.templates or [q.queryid for q in problem.queries])
        budget = max(problem.budget_bytes, 1)
        lo = max(1, min(budget // 2, int(0.05 * self.data_bytes)))
        budgets = self.budgets or (lo, max(budget * 2, int(0.5 * self.data_bytes), lo + 1))
        return training_sampler(problem, templates, budgets, self.own_mix, self.held_out)

    def _stored_model(self, model_dir: Path | None, exact: Path | None):
        """(path, its candidates) of a stored model whose action space covers the problem's candidates: the one
        trained for exactly these, else the newest trained for more (another mix of the same templates)."""
        if exact is not None and exact.exists():
            return exact, self.problem.candidates
        if model_dir is None or not model_dir.is_dir():
            return None
        wanted = set(self.problem.candidates)
        for path in sorted(model_dir.glob("ia2-*.pt"), key=lambda p: p.stat().st_mtime, reverse=True):
            space = _td3().TD3Agent.action_space(path)
            if space is not None and wanted <= set(space):
                return path, space
        return None

    def _train(self, say: Say) -> Callable[[np.random.Generator], IndexProblem]:
        """Train the agent from scratch; returns the sampler of mixes unlike the workload (for ``_check_unlike``)."""
        problem, td3 = self.problem, _td3()
        self.agent = td3.TD3Agent(problem.candidates, td3.IA2Options(episodes=self.episodes, reward=self.reward),
                                  self.device, self.seed)
        templates = self.templates or problem.queries
        say(f"IA2: training on {len(templates)} statement templates, {self.episodes} episodes on {self.agent.device}")
        sample, unlike = self._samplers()
        self.agent.train(sample, say=say, calls=lambda: problem.whatif.calls, max_calls=self.whatif_budget)
        return unlike

    def _check_unlike(self, unlike: Callable[[np.random.Generator], IndexProblem], say: Say) -> dict:
        """The greedy policy against Extend on up to ``HELD_OUT_CHECKS`` mixes unlike the workload, no further
        mix once ``HELD_OUT_CALLS`` planner calls are spent (relative what-if costs; seeded apart from training);
        none when training was stopped by its what-if budget (each mix costs Extend's search anew: 36 s for one on 33
        JOB joins)."""
        if self.agent.stats.stopped_by == "what-if budget":
            say("IA2: not checked on mixes unlike the workload: training spent the what-if budget")
            return {"share": self.held_out, "checks": 0, "skipped": "training spent the what-if budget"}
        rng = np.random.default_rng(self.seed + 7919)
        ia2, extend = [], []
        calls0 = self.problem.whatif.calls
        for _ in range(HELD_OUT_CHECKS):
            if ia2 and self.problem.whatif.calls - calls0 >= HELD_OUT_CALLS:
                break
            p = unlike(rng)
            base = p.cost() or 1.0
            ia2.append(p.cost(self.agent.rollout(p, 0)) / base)
            extend.append(p.cost(Extend(p).ask(1)[0]) / base)
        worse = sum(a > e + 1e-9 for a, e in zip(ia2, extend))
        say(f"IA2: on {len(ia2)} mix(es) unlike the workload, mean relative cost {np.mean(ia2):.3f} "
            f"(Extend {np.mean(extend):.3f}); worse than Extend on {worse}")
        return {"share": self.held_out, "checks": len(ia2), "ia2_rc": [round(x, 4) for x in ia2],
                "extend_rc": [round(x, 4) for x in extend], "worse_than_extend": int(worse)}

    def _usable(self, agent: TD3Agent | None) -> bool:
        return agent is not None and set(self.problem.candidates) <= set(agent.candidates)

    def _select(self) -> list[IndexChange]:
        if not self._usable(self.agent) and (not self.shipped or self.retrain or
                                             self._adapt_shipped(lambda _m: None) is None):
            self._train(lambda _m: None)
        assert self.agent is not None
        config = self.agent.rollout(self.problem, self.samples, max_steps=SAMPLE_STEPS)
        if self.beam:
            _cost, decoded = beam.decode(self.agent, self.problem, width=self.beam)
            if self.problem.cost(decoded) < self.problem.cost(config) - 1e-9:
                config = decoded
        return config

    def _state(self) -> dict:
        return {"model": self.agent.to_text() if self.agent is not None else None}

    def _restore(self, state: dict) -> None:
        if state.get("model"):
            self.agent = _td3().TD3Agent.from_text(state["model"], self.problem.candidates, self.device)
