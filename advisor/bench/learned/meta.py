"""LITune's meta-training for the learned-index bench: once per bench and index, on tasks that exclude every
evaluated cell, its model stored under the bench's model directory for the cells (and the drift) to load.

Held out: the training datasets are the synthetic sets the grid does not evaluate (x every mix the index can
run); when the grid evaluates every dataset, training uses other keys of them (a seed far from the bench's), and
the JSON says so ("held_out"). ``--meta-train-only`` times this step alone (seconds, device, episodes) and prints
it as JSON: the figure compared across CPU and CUDA. With ``shipped`` (``--litune-model shipped``) the cells use the
model ``advisor train`` shipped instead of one trained here, once its manifest shows that none of the grid's
datasets was among its training key sets (else the bench refuses, in one line): the same held-out protocol without
paying the training twice.
"""

from __future__ import annotations

from pathlib import Path

from advisor.core.params import ParamSpace
from advisor.core.progress import Say
from advisor.tuning.learned_index.pipeline import problem
from advisor.tuning.learned_index.training import TRAINING_KEYS, TRAINING_OPS, training_tasks
from connectors import factory
from optimizers import registry
from workloads.datasets.learned import keysets, mixes

FAR_SEED = 10_000  # training keys' seed when every dataset is evaluated (other keys of the same distributions)


def training_plan(options) -> tuple[tuple[str, ...], int, str]:
    """(training datasets, their seed, what is held out) for the bench's grid.

    >>> from types import SimpleNamespace
    >>> training_plan(SimpleNamespace(datasets=("normal", "zipf-clustered", "bursty")))[0]
    ('books', 'fb', 'osm', 'uniform', 'lognormal', 'piecewise', 'sequential', 'mixture')
    """
    unseen = tuple(d for d in keysets.SYNTHETIC if d not in options.datasets)
    if unseen:
        return unseen, 0, f"datasets held out of training: {', '.join(options.datasets)} (trained on " \
                           f"{', '.join(unseen)})"
    return keysets.SYNTHETIC, FAR_SEED, "every dataset is evaluated: training uses other keys of them " \
                                        f"(seed {FAR_SEED}), so only the keys are held out"


def meta_train(options, model_dir: Path, say: Say, indexes: tuple[str, ...]) -> dict:
    """Meta-train LITune for each of ``indexes`` and store the models under ``model_dir`` (or, with
    ``options.litune_model == "shipped"``, check the shipped ones: ``shipped_models``); per index: seconds, device,
    episodes, evaluations, updates, tasks, and what was held out."""
    if getattr(options, "litune_model", "trained") == "shipped":
        return shipped_models(options, model_dir, say, indexes)
    sets, seed, held_out = training_plan(options)
    out = {}
    for name in indexes:
        engine = factory.learned_index(name)
        prob = problem(ParamSpace(engine.parameters()), engine.name, (),
                       training=lambda e=engine: training_tasks(e, seed, sets=sets, mixes=mixes.MIXES,
                                                                n_keys=TRAINING_KEYS, n_ops=TRAINING_OPS))
        opt = registry.create("learned-index", "litune", prob, seed=seed, device=options.device,
                              episodes=options.episodes, retrain=True)
        training = opt.prepare(model_dir, say) or {}
        meta = training.get("meta", {})
        out[name] = {"seconds": training.get("seconds", 0.0), "device": training.get("device"),
                     "requested_device": options.device, "episodes": meta.get("episodes", 0),
                     "evaluations": meta.get("evaluations", 0), "updates": meta.get("updates", 0),
                     "unsafe": meta.get("unsafe", 0), "tasks": meta.get("tasks", []), "held_out": held_out,
                     "model": training.get("model")}
        say(f"LITune meta-trained for {name}: {out[name]['seconds']:.1f} s on {out[name]['device']}, "
            f"{out[name]['episodes']} episodes, {out[name]['evaluations']} evaluations")
    return out


def shipped_models(options, model_dir: Path, say: Say, indexes: tuple[str, ...]) -> dict:
    """The shipped model of each of ``indexes``, for the cells to load (a model stored under ``model_dir`` by an
    earlier run is removed, so it cannot stand in); InvalidInput when one is missing or was trained on a dataset the
    grid evaluates."""
    import json

    from advisor.core.errors import InvalidInput
    from optimizers.learned_index import litune_shipped

    out = {}
    for name in indexes:
        space = ParamSpace(factory.learned_index(name).parameters())
        path = litune_shipped.DIR / litune_shipped.file_name(name, space)
        try:
            manifest = json.loads(path.with_suffix(".json").read_text())
        except (OSError, ValueError):
            raise InvalidInput(f"no shipped LITune model for {name} ({path}): run `advisor train --kinds "
                               "learned-index`, or --litune-model trained") from None
        seen = sorted(set(options.datasets) & set(manifest.get("key_sets", [])))
        if seen:
            raise InvalidInput(f"the shipped LITune model for {name} was trained on {', '.join(seen)}, which the "
                               "grid evaluates: choose held-out datasets, or --litune-model trained")
        (Path(model_dir) / path.name).unlink(missing_ok=True)
        meta = manifest.get("meta", {})
        out[name] = {"seconds": meta.get("seconds", 0.0), "device": manifest.get("device"),
                     "requested_device": options.device, "episodes": meta.get("episodes", 0),
                     "evaluations": meta.get("evaluations", 0), "updates": meta.get("updates", 0),
                     "unsafe": meta.get("unsafe", 0), "tasks": meta.get("tasks", []), "model": str(path),
                     "held_out": f"the shipped model (advisor train, seed {manifest.get('seed')}), trained on "
                                 f"{', '.join(manifest.get('key_sets', []))}; evaluated on {', '.join(options.datasets)}"}
        say(f"LITune for {name}: the shipped model {path.name}, never trained on {', '.join(options.datasets)}")
    return out
