"""LITune's shipped models, one per learned index, meta-trained ahead of time (``advisor train --kinds
learned-index``; ``optimizers.learned_index.litune_shipped``) on the generated key sets x mixes of ``LITUNE_SETS`` x
``LITUNE_MIXES`` (eight key families; ``training.HELD_OUT_SETS`` are left out, for the benches to measure on). Its seed fixes its tasks, exploration and initial weights, but its rewards are timed (thread CPU
ns per operation on this machine, the manifest's ``reward``; LITune refuses a model whose manifest names another
unit, as those shipped before it said so, rewarded on wall-time ns per operation), so retraining gives the same
weights only for the same measurements: equal in kind, not in bits."""

from __future__ import annotations

from pathlib import Path

from advisor.core.progress import Say

from advisor.tuning.learned_index.training import TRAINING_MIXES, TRAINING_SETS

LITUNE_SETS = TRAINING_SETS  # generated key sets LITune's shipped models train on
LITUNE_MIXES = TRAINING_MIXES
LITUNE_EPISODES = 300
LITUNE_KEYS = 20_000
LITUNE_STEPS = 8


def litune_tasks(engine, seed: int, sets=LITUNE_SETS, n_keys: int = LITUNE_KEYS) -> list:
    """The meta-training tasks of ``engine``: generated key sets (seeds from ``seed``) x the mixes it can run."""
    from advisor.tuning.learned_index.training import training_tasks

    return training_tasks(engine, seed, sets=sets, mixes=LITUNE_MIXES, n_keys=n_keys, n_ops=n_keys)


def train(seed: int, episodes: int | None, out: Path | None, device: str, say: Say) -> dict:
    from connectors import factory
    from optimizers.learned_index import litune_shipped

    from advisor.core.params import ParamSpace

    models = {}
    for name in factory.learned_indexes():
        engine = factory.learned_index(name)
        space = ParamSpace(engine.parameters())
        say(f"LITune ({name}): generating {len(LITUNE_SETS)} key sets of {LITUNE_KEYS:,} keys x "
            f"{len(LITUNE_MIXES)} mixes")
        tasks = litune_tasks(engine, seed)
        from optimizers.learned_index.problem import OBJECTIVE
        agent, stats, prior = litune_shipped.meta_trained(space, tasks, episodes or LITUNE_EPISODES, LITUNE_STEPS, seed, device,
                                                          say, keep=litune_shipped.KEEP, prior=litune_shipped.PRIOR)
        path = (out or litune_shipped.DIR) / litune_shipped.file_name(name, space)
        manifest = {"index": name, "seed": seed, "episodes": stats.episodes, "steps": LITUNE_STEPS,
                    "key_sets": list(LITUNE_SETS), "mixes": list(LITUNE_MIXES), "keys": LITUNE_KEYS,
                    "tasks": stats.tasks, "device": stats.device, "reward": OBJECTIVE}
        litune_shipped.save(agent, stats, prior, path, manifest, compact=True)
        models[name] = {"model": str(path), **manifest, "seconds": round(stats.seconds, 1)}
    lines = [f"LITune's model for {n}: {m['model']} ({m['episodes']} episodes on {len(m['tasks'])} generated key set "
             f"x mix tasks, seed {seed}, {m['seconds']:.0f} s)" for n, m in models.items()]
    return {"models": models, "summary": "\n".join(lines)}
