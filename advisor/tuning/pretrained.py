"""The models that ship with the package, trained ahead of time (``advisor train``): for each kind with one, how
it is trained from a seed and where its files go. Aurora's rule policy (``optimizers.rewrites.pretrain``) and
LITune's meta-trained models, one per learned index (``optimizers.learned_index.litune_shipped``, trained on the
generated key sets x mixes of ``LITUNE_SETS`` x ``LITUNE_MIXES``) and IA2's agent (``optimizers.indexes.ia2_shipped``,
trained across generated index workloads by ``advisor.tuning.indexes.shipped``, bit for bit from its seed on the
CPU: its rewards are what-if costs).

Aurora's policy is reproduced bit for bit from its seed on the CPU (its rewards are estimated costs). LITune's
seed fixes its tasks, exploration and initial weights, but its rewards are timed (thread CPU ns per operation on
this machine, the manifest's ``reward``; LITune refuses a model whose manifest names another unit, as those
shipped before it said so, rewarded on wall-time ns per operation), so retraining gives the same weights only for
the same measurements: equal in kind, not in bits."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent

LITUNE_SETS = ("books", "fb", "osm", "uniform")  # generated key sets LITune's shipped models train on
LITUNE_MIXES = ("read-only", "read-heavy", "balanced", "write-heavy")
LITUNE_KEYS = 20_000
LITUNE_STEPS = 8


def _rewrites(seed: int, episodes: int | None, out: Path | None, device: str, say: Say) -> dict:
    from optimizers.rewrites import pretrain

    path = out / pretrain.SHIPPED.name if out else pretrain.SHIPPED
    started = time.monotonic()
    agent, stats = pretrain.train_policy(dialects(), episodes=episodes or 240, seed=seed, device=device, say=say)
    stats["seconds"] = round(time.monotonic() - started, 1)
    pretrain.save(agent, stats, path)
    return {"model": str(path), **stats,
            "summary": f"Aurora's policy: {path} ({stats['episodes']} episodes on {stats['statements']} statements "
                       f"of {len(stats['schemas'])} generated schemas, seed {seed}, {stats['seconds']:.0f} s)"}


def litune_tasks(engine, seed: int, sets=LITUNE_SETS, n_keys: int = LITUNE_KEYS) -> list:
    """The meta-training tasks of ``engine``: generated key sets (seeds from ``seed``) x the mixes it can run."""
    from advisor.tuning.learned.training import training_tasks

    return training_tasks(engine, seed, sets=sets, mixes=LITUNE_MIXES, n_keys=n_keys, n_ops=n_keys)


def _learned(seed: int, episodes: int | None, out: Path | None, device: str, say: Say) -> dict:
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
        agent, stats, prior = litune_shipped.meta_trained(space, tasks, episodes or 60, LITUNE_STEPS, seed, device,
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


def _indexes(seed: int, episodes: int | None, out: Path | None, device: str, say: Say) -> dict:
    from advisor.tuning.indexes import shipped

    return shipped.train(seed, episodes, out, device, say)


TRAINERS = {"rewrites": _rewrites, "learned-index": _learned, "indexes": _indexes}
KINDS = tuple(TRAINERS)


def train_shipped(kinds: tuple[str, ...] = KINDS, seed: int = 0, episodes: int | None = None,
                  out: Path | None = None, device: str = "cpu", say: Say = silent) -> dict:
    """Train each kind's shipped model from ``seed`` (``episodes``: each kind's own default when None) and write
    its files (into the package, or ``out``); what was trained, per kind (with a one-line ``summary``)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise AdvisorError(f"no shipped model for {', '.join(unknown)}: the kinds with one are {', '.join(KINDS)}")
    return {kind: TRAINERS[kind](seed, episodes, out, device, say) for kind in kinds}


def dialects() -> tuple[str, ...]:
    """The SQL dialects of the engines the advisor runs (what the shipped rewrite policy trains in)."""
    from connectors import factory

    return tuple(sorted({engine.connector.dialect for engine in factory.ENGINES.values()}))
