"""LITune (arXiv 2502.05001) behind the one optimizer contract: a TD3 agent with a context encoder
(``litune_agent``), meta-trained offline across datasets and workloads (``litune_meta``), exploring safely
(``litune_safety``) and adapting online (the O2 mode).

* ``prepare(model_dir, say)`` loads the model stored for this index and space (``litune-<index>-<space key>.pt``
  under ``model_dir``), else the one shipped with the package for them (``litune_shipped``, made by ``advisor
  train``), else (or with ``retrain``) meta-trains one on ``problem.training()`` and stores it; a model whose
  manifest's ``reward`` is not the objective's unit (``problem.OBJECTIVE``; one without the field was rewarded on
  wall time) is refused with a line saying so, and the next one is tried; without training
  tasks the agent starts untrained (it then searches locally around the best safe point until its own tells have trained
  it). ``ask`` without ``prepare`` uses the untrained agent.
* ``ask``: LITune's first proposal of a phase is its reference (the defaults; after ``online`` the incumbent),
  whose outcome every reward is relative to. A meta-trained agent then proposes its policy's own point for the
  descriptor (the key set's shape and the mix), noise-free: meta-training cloned the actor onto the best
  configuration of each training task, so this is where tasks of that shape did best. Its next ``portfolio``
  proposals are the best configurations of the meta-training tasks nearest in descriptor (kept with the model,
  ``elites``), a warm start learned across key families and mixes: of the ``pool`` nearest tasks' not yet told, the
  one the critic (meta-trained, fine-tuned online) rates highest in the current state. Then the policy's point for
  the current state (the last steps and the descriptor) plus Gaussian exploration noise decaying with safe evidence
  (narrower once meta-trained: ``noise_trained``), or with ``local_share`` a point near the best safe one, clipped
  to the trust region
  around the best safe point; a point the unsafe-region model predicts unsafe is drawn again with more noise,
  and after ``TRIES`` draws the proposal falls back to a small perturbation of the best safe point. A meta-trained
  agent draws ``candidates`` such points and proposes the one its critic rates highest (the critic as the learned
  surrogate, as BO's acquisition ranks candidates); an untrained one proposes its first. Points told in this phase
  are not proposed again.
* ``tell``: the step enters the history, the unsafe-region model and the replay buffer (the last
  ``online_buffer`` meta-training transitions stay in it), then ``updates_per_tell`` TD3 updates fine-tune the
  agent. Unsafe: a failed trial, ``metrics["unsafe"]``, or memory above ``problem.memory_limit_bytes``; an
  infeasible trial (parameters the engine refuses together) is penalized and avoided like an unsafe one.
* O2 online mode: ``online(features)`` starts a new phase when the data or the mix drifted (``features`` is the
  new phase's descriptor): weights, buffer, unsafe region and trust in the space are kept; the next ask
  re-measures the incumbent as the new phase's reference and tuning goes on from there, without retraining.
* ``state()`` holds the agent (weights, optimizer moments, buffer: base64 of ``torch.save``), the generator's
  state and the history, so a restored LITune asks exactly what the original would have.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from advisor.core.progress import Say
from optimizers.base import Config
from optimizers.learned_index.litune_shipped import file_name
from optimizers.learned_index.problem import EARLIER, OBJECTIVE, LearnedIndexOptimizer

TRIES = 8  # draws of a proposal before the fallback to the best safe point
PRIOR = 1000  # meta-training visits kept as the unsafe-region model's prior (the latest)
RECENT = 32  # online updates draw half of each batch from this many latest transitions


def _parts():
    """The agent's modules, imported when first needed: they load PyTorch, which listing optimizers should not."""
    from optimizers.learned_index import litune_agent, litune_meta

    return litune_agent, litune_meta


class LITune(LearnedIndexOptimizer):
    name = "litune"
    description = ("LITune: TD3 with a context encoder, meta-trained across datasets and workloads, safe exploration "
                   "(unsafe-region model, trust region), online adaptation under drift")

    def _setup(self, episodes: int = 300, steps: int = 8, device: str = "auto", retrain: bool = False,
               updates_per_tell: int = 4, noise: float = 0.15, noise_end: float = 0.04, trust: float = 0.15,
               trust_trained: float = 0.5, full_after: int = 12, radius: float = 0.12, online_buffer: int = 512,
               online_warmup: int = 8, local_share: float = 0.3, noise_trained: float = 0.06,
               portfolio: int = 4, pool: int = 8, candidates: int = 16) -> None:
        self.episodes, self.episode_steps, self.device, self.retrain = int(episodes), int(steps), device, retrain
        self.updates_per_tell, self.noise, self.noise_end = int(updates_per_tell), float(noise), float(noise_end)
        self.trust, self.trust_trained, self.full_after = float(trust), float(trust_trained), int(full_after)
        self.radius, self.online_buffer, self.online_warmup = float(radius), int(online_buffer), int(online_warmup)
        self.local_share, self.noise_trained, self.portfolio = float(local_share), float(noise_trained), int(portfolio)
        self.pool, self.candidates = max(int(pool), 1), max(int(candidates), 1)
        self.elites: list = []  # [descriptor, best x] of each meta-training task (the portfolio's candidates)
        self.agent = None
        self.rng = np.random.default_rng(self.seed)
        self.features = tuple(float(f) for f in self.problem.features)
        self.steps: list[dict] = []  # every told step, in order, each with its "phase"
        self.phase = 0
        self.reference: dict | None = None  # the phase's reference step
        self.anchor: dict[str, str] = {}  # the config the phase's reference measures (defaults, then the incumbent)
        self.trained = False
        self.training: dict | None = None
        self.last: dict[str, str] = {}  # how the last proposal was made, for explain()
        self.prior: list[list] = []  # [x, unsafe] visited in meta-training: the unsafe-region model's prior
        self._classifier = (-1, None)  # (labels it was fitted on, the classifier): derived, refitted on demand

    # --- preparing: load or meta-train ----------------------------------------------------------------------

    def model_path(self, model_dir: Path) -> Path:
        return Path(model_dir) / file_name(self.problem.index, self.problem.space)

    def prepare(self, model_dir: Path | None, say: Say) -> dict | None:
        """Load the model stored for this target (``model_dir``), else the one shipped for this index and space,
        else meta-train one (and store it under ``model_dir``); ``retrain`` meta-trains from scratch whatever
        exists. A loaded model adapts to the target online, by the updates after each tell."""
        if self.trained:
            return self.training
        from optimizers.learned_index import litune_shipped

        agent_mod, _ = _parts()
        path = self.model_path(model_dir) if model_dir is not None else None
        start = time.perf_counter()
        refused = []  # models found but rewarded on another unit than the objective's
        shipped_path = litune_shipped.DIR / file_name(self.problem.index, self.problem.space)
        for where, shipped in ((path, False), (shipped_path, True)):
            if self.retrain or where is None:
                continue
            found = litune_shipped.load(where, self.device)
            if found is None:
                continue
            agent, blob = found
            manifest = blob.get("manifest", {})
            reward = manifest.get("reward", EARLIER)  # a model trained before the objective was CPU time
            if reward != OBJECTIVE:
                refused.append(str(where))
                say(f"LITune: not using the {'shipped ' if shipped else ''}model {where}: it was rewarded on "
                    f"{reward}, this run measures {OBJECTIVE} (`advisor train --kinds learned-index` retrains "
                    "the shipped ones)")
                continue
            self.agent, self.prior, self.trained = agent, [list(v) for v in blob.get("prior", [])], True
            self.elites = list(blob["meta"].get("elites", []))
            self.training = {"trained": False, "loaded": True, "shipped": shipped, "model": str(where),
                             "device": str(self.agent.device), "seconds": round(time.perf_counter() - start, 3),
                             "meta": blob["meta"], "manifest": manifest, "reward": reward, "refused": refused}
            say(f"LITune: using the {'shipped model' if shipped else 'model'} meta-trained for "
                f"{self.problem.index} ({where}, rewarded on {reward}); it adapts to this target as it is "
                "told trials (retrain: meta-train one from scratch instead)")
            return self.training
        tasks = list(self.problem.training()) if self.problem.training is not None else []
        if not tasks or self.episodes < 1:
            self.agent = agent_mod.Agent(self.problem.space.dim, agent_mod.AgentOptions(), self.device, self.seed)
            self.training = {"trained": False, "loaded": False, "device": str(self.agent.device), "seconds": 0.0,
                             "reason": "no training tasks: the agent starts untrained and learns from its tells",
                             "refused": refused}
            say("LITune: no training tasks, starting untrained")
            return self.training
        say(f"LITune: meta-training on {len(tasks)} task(s), {self.episodes} episodes of {self.episode_steps} trials")
        self.agent, stats, self.prior = litune_shipped.meta_trained(
            self.problem.space, tasks, self.episodes, self.episode_steps, self.seed, self.device, say,
            self.problem.memory_limit_bytes, keep=self.online_buffer, prior=PRIOR)
        self.trained, self.elites = True, list(stats.elites)
        if path is not None:
            litune_shipped.save(self.agent, stats, self.prior, path,
                                {"index": self.problem.index, "seed": self.seed, "episodes": self.episodes,
                                 "steps": self.episode_steps, "tasks": stats.tasks, "reward": OBJECTIVE})
        self.training = {"trained": True, "loaded": False, "shipped": False, "model": str(path) if path else None,
                         "device": stats.device, "seconds": round(stats.seconds, 3), "meta": stats.to_dict(),
                         "reward": OBJECTIVE, "refused": refused}
        return self.training

    def _agent(self):
        if self.agent is None:
            agent_mod, _ = _parts()
            self.agent = agent_mod.Agent(self.problem.space.dim, agent_mod.AgentOptions(), self.device, self.seed)
        return self.agent

    # --- O2: online adaptation ------------------------------------------------------------------------------

    def online(self, features: Sequence[float]) -> None:
        """A new phase (the data or the mix drifted; ``features`` describes it): keep the agent, its buffer, the
        unsafe region and the trust gathered, re-measure the incumbent as the new reference, and go on tuning."""
        best = self._best()
        self.anchor = dict(best["config"]) if best is not None else dict(self.anchor)
        self.features = tuple(float(f) for f in features)
        self.phase += 1
        self.reference = None

    # --- asking ---------------------------------------------------------------------------------------------

    def _phase_steps(self) -> list[dict]:
        return [s for s in self.steps if s["phase"] == self.phase]

    def _best(self) -> dict | None:
        safe = [s for s in self._phase_steps() if not s["unsafe"] and s["objective"] is not None]
        return min(safe, key=lambda s: s["objective"]) if safe else None

    batches = True

    def _ask(self, n: int, current: Config | None, pending: tuple[Config, ...] = ()) -> list[Config]:
        space = self.problem.space
        told = self._phase_steps()
        # running trials count as visited: a batch (parallel trials) never proposes one of them again
        running = {json.dumps(space.decode(space.encode(self.problem.config(c))), sort_keys=True) for c in pending}
        reference = space.full(self.anchor)
        if (self.reference is None and not any(s["config"] == reference for s in told)
                and json.dumps(space.decode(space.encode(reference)), sort_keys=True) not in running):
            self.last = {"*": "the phase's reference (rewards are relative to it)"}
            return [tuple(space.changes(reference))]
        from optimizers.torch_runtime import one_thread

        out = []
        with one_thread():  # small models and the unsafe-region fit: many threads only contend (10x slower here)
            for _ in range(n):
                x = self._propose(running)
                running.add(json.dumps(space.decode(x), sort_keys=True))
                out.append(tuple(space.changes(space.decode(x))))
        return out

    def _propose(self, running: set[str] = frozenset()) -> np.ndarray:
        agent_mod, _ = _parts()
        from optimizers.learned_index.litune_safety import TrustRegion

        space, agent, d = self.problem.space, self._agent(), self.problem.space.dim
        unsafe = self._region()
        best = self._best()
        center = np.asarray(best["x"] if best is not None else space.encode(space.full(self.anchor)))
        safe = sum(1 for s in self.steps if not s["unsafe"] and s["objective"] is not None)
        trust = TrustRegion(self.trust_trained if self.trained else self.trust, self.full_after)
        seen = {json.dumps(s["config"], sort_keys=True) for s in self._phase_steps()} | set(running)
        progress = min(1.0, safe / self.full_after)
        start = self.noise_trained if self.trained else self.noise  # a meta-trained point needs only refining
        sigma = start + (min(self.noise_end, start) - start) * progress
        learned = self.trained or agent.buffer.size >= self.online_warmup
        told = len(self._phase_steps()) - 1  # besides the reference
        if self.trained and 1 <= told <= self.portfolio:
            pool = [x for x in self._nearest_elites()[: self.pool]
                    if not unsafe(x) and json.dumps(space.decode(x), sort_keys=True) not in seen]
            if pool:
                self.last = {"*": "portfolio: the best configuration of a meta-training task of like shape, the one "
                                  "the critic rates highest among the nearest tasks'"}
                return self._ranked(pool)
        first = self.trained and told <= 0  # the meta-trained policy's own point, noise-free
        local = not first and (not learned or self.rng.random() < self.local_share)
        if local:
            base = center
        else:
            ctx = agent_mod.context(self._phase_steps(), self.reference, d, agent.options.context)
            base = agent.act(ctx, agent_mod.feature_vector(self.features))
            x = space.encode(space.decode(base))
            if first and not unsafe(x) and json.dumps(space.decode(x), sort_keys=True) not in seen:
                self.last = {"*": "policy: the meta-trained point for this key set's shape and mix"}
                return x
        drawn: list[np.ndarray] = []  # with a meta-trained critic, several draws ranked by it (one otherwise)
        want = self.candidates if self.trained else 1
        for attempt in range(2 * TRIES + want):
            rejected = attempt - len(drawn)  # the spread widens with rejected draws only, as with one draw
            fallback = not drawn and rejected >= TRIES
            scale = 0.05 if fallback else sigma * (1 + min(rejected, TRIES) / 2)
            x = (center if fallback else base) + self.rng.normal(0.0, scale, d)
            x = space.encode(space.decode(trust.clip(x, center, safe)))
            if unsafe(x) or json.dumps(space.decode(x), sort_keys=True) in seen:
                continue
            self.last = {"*": "fallback: near the best safe point" if fallback else
                         "local: near the best safe point" if local else "policy"}
            if fallback:
                return x
            drawn.append(x)
            if len(drawn) >= want:
                break
        if drawn:
            if len(drawn) > 1:
                self.last = {"*": self.last["*"] + f" (the critic's pick of {len(drawn)} draws)"}
            return self._ranked(drawn)
        self.last = {"*": "fallback: the best safe point's neighbourhood is exhausted; a random safe-predicted point"}
        for _ in range(4 * TRIES):
            x = space.encode(space.decode(self.rng.random(d)))
            if not unsafe(x):
                return x
        return x

    def _ranked(self, xs: list[np.ndarray]) -> np.ndarray:
        """The point of ``xs`` the critic predicts the highest reward for in the current state (the first of
        equals); the first one when there is only one."""
        if len(xs) == 1:
            return xs[0]
        agent_mod, _ = _parts()
        agent = self._agent()
        ctx = agent_mod.context(self._phase_steps(), self.reference, self.problem.space.dim, agent.options.context)
        q = agent.value(ctx, agent_mod.feature_vector(self.features), np.asarray(xs))
        return xs[int(np.argmax(q))]

    def _nearest_elites(self) -> list[np.ndarray]:
        """The meta-training tasks' best configurations, nearest task first: distance between descriptors, each
        number scaled by its spread over the tasks."""
        if not self.elites:
            return []
        agent_mod, _ = _parts()
        space = self.problem.space
        feats = np.asarray([e[0] for e in self.elites], dtype=float)
        spread = feats.std(axis=0) + 1e-6
        here = agent_mod.feature_vector(self.features)
        order = np.argsort(np.abs((feats - here) / spread).sum(axis=1), kind="stable")
        return [space.encode(space.decode(np.asarray(self.elites[i][1], dtype=float))) for i in order
                if len(self.elites[i][1]) == space.dim]

    def _region(self):
        """The veto: the k-NN over this run's visits, or the classifier over the prior and this run's visits."""
        from optimizers.learned_index.litune_safety import UnsafeClassifier, UnsafeRegion

        region = UnsafeRegion(self.radius)
        for s in self.steps:
            region.add(s["x"], s["avoid"])
        labelled = self.prior + [[s["x"], s["avoid"]] for s in self.steps]
        if self._classifier[0] != len(labelled):
            self._classifier = (len(labelled), UnsafeClassifier([x for x, _ in labelled], [u for _, u in labelled],
                                                                seed=self.seed))
        classifier = self._classifier[1]
        return lambda x: region.unsafe(x) or classifier.probability(x) > 0.5

    # --- telling --------------------------------------------------------------------------------------------

    def _tell(self, config: Config, outcome) -> None:
        agent_mod, meta = _parts()
        space, agent = self.problem.space, self._agent()
        full = space.full(self.problem.config(config))
        x = space.encode(full)
        step = {**meta.make_step(x, outcome, self.problem.memory_limit_bytes, full), "phase": self.phase}
        before = self._phase_steps()
        self.steps.append(step)
        if self.reference is None and full == space.full(self.anchor):
            if step["objective"] is not None:
                self.reference = step
            return
        k, d, feats = agent.options.context, space.dim, agent_mod.feature_vector(self.features)
        agent.buffer.add(agent_mod.context(before, self.reference, d, k), feats, x,
                         agent_mod.reward(step, self.reference, agent.options),
                         agent_mod.context(before + [step], self.reference, d, k), feats, False)
        from optimizers.torch_runtime import cpu_threads

        with cpu_threads(agent.device):
            for _ in range(self.updates_per_tell):
                agent.update(self.rng, RECENT)

    # --- hooks and state ------------------------------------------------------------------------------------

    def explain(self) -> dict[str, str]:
        return dict(self.last)

    def report(self) -> dict:
        return {"phase": self.phase, "evaluations": len(self.steps),
                "unsafe_evaluations": sum(s["unsafe"] for s in self.steps), "trained": self.trained}

    def _state(self) -> dict:
        from optimizers.rl import persistence

        return {"agent": persistence.to_text(self.agent.to_blob()) if self.agent is not None else None,
                "rng": self.rng.bit_generator.state, "features": list(self.features), "steps": self.steps,
                "phase": self.phase, "reference": self.reference, "anchor": self.anchor, "trained": self.trained,
                "training": self.training, "last": self.last, "prior": self.prior,
                "elites": self.elites}

    def _restore(self, state: dict) -> None:
        agent_mod, _ = _parts()
        from optimizers.rl import persistence

        self.agent = agent_mod.Agent.from_blob(persistence.from_text(state["agent"]), self.device) if state.get("agent") \
            else None
        self.rng = np.random.default_rng(self.seed)
        self.rng.bit_generator.state = state["rng"]
        self.features = tuple(state["features"])
        self.steps = [dict(s) for s in state["steps"]]
        self.phase, self.reference, self.anchor = int(state["phase"]), state["reference"], dict(state["anchor"])
        self.trained, self.training, self.last = bool(state["trained"]), state["training"], dict(state["last"])
        self.prior = [list(v) for v in state.get("prior", [])]
        self.elites = list(state.get("elites", []))
        self._classifier = (-1, None)
