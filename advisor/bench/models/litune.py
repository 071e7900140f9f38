"""LITune's shipped models against meta-training per target, on key sets they were not trained on (the LITune
part of ``advisor bench models``).

For each learned index and each held-out key set (``HELD_OUT``: distributions and seeds outside the shipped
models' training, ``advisor.tuning.learned_index.shipped.LITUNE_SETS``), ``budget`` trials are asked and told by three
LITunes: the shipped model as it is (no updates after its tells), the shipped model adapting online (a run's
default), and one meta-trained from scratch with ``episodes`` on the house's training tasks (what a first question
cost before the models shipped; trained once per index, its seconds reported on each row). Reported per row: the
best safe ns/op found over the defaults' (lower is better) and the seconds spent training before the first trial.
Timings are measured on this machine: nothing is asserted.
"""

from __future__ import annotations

import time

from advisor.bench.models import cell, text_table
from advisor.core.progress import Say, silent

HELD_OUT = (("normal", 1001), ("bursty", 1002), ("zipf-clustered", 1003))  # (key set, seed): families
# never in the shipped models' training (``training.HELD_OUT_SETS``)
KEYS = 20_000


def _best_ratio(opt, target, budget: int) -> float | None:
    """Ask and tell ``budget`` trials; the best safe ns/op over the first (the defaults: LITune's reference)."""
    from advisor.tuning.learned_index.pipeline import evaluate

    seen = []
    for _ in range(budget):
        config = opt.ask(1)[0]
        outcome = evaluate(target, opt.problem.config(config))
        opt.tell(config, outcome)
        unsafe = (outcome.metrics or {}).get("unsafe", 0)
        seen.append(outcome.objective if outcome.status == "measured" and not unsafe else None)
    found = [v for v in seen[1:] if v is not None]
    return round(min(found) / seen[0], 4) if found and seen[0] else None


def run(budget: int = 12, episodes: int = 60, seed: int = 0, say: Say = silent) -> list[dict]:
    from connectors import factory
    from optimizers import registry
    from workloads.datasets.learned import keysets, mixes

    from advisor.core.params import ParamSpace
    from advisor.tuning.learned_index.pipeline import operations, problem
    from advisor.tuning.learned_index.target import HarnessTarget
    from advisor.tuning.learned_index.training import features, training_tasks

    rows = []
    for name in factory.learned_indexes():
        engine = factory.learned_index(name)
        space = ParamSpace(engine.parameters())
        mix = mixes.parse_mix("read-only" if engine.read_only else "balanced")
        say(f"LITune ({name}): meta-training from scratch ({episodes} episodes), as a first run did")
        scratch_s, scratch_blob = None, None
        for key_set, key_seed in HELD_OUT:
            keys = keysets.synthetic(key_set, KEYS, key_seed)
            initial, stream = mixes.workload(keys, mix, operations(len(keys), mix.insert), key_seed)
            target = HarnessTarget(engine, initial, [stream])
            prob = problem(space, engine.name, features(keys, mix),
                           training=lambda e=engine: training_tasks(e, seed))
            row = {"index": name, "keys": f"{key_set}/{key_seed}", "mix": "read-only" if engine.read_only
                   else "balanced", "budget": budget}
            for label, options in (("shipped", {"updates_per_tell": 0}), ("adapted", {})):
                opt = registry.create("learned-index", "litune", prob, seed=seed, device="cpu", **options)
                training = opt.prepare(None, say)
                row[f"{label}_ratio"] = _best_ratio(opt, target, budget) if training.get("shipped") else None
                row[f"{label}_s"] = training.get("seconds", 0.0)
            opt = registry.create("learned-index", "litune", prob, seed=seed, device="cpu", episodes=episodes,
                                  retrain=True)
            if scratch_blob is None:
                t = time.monotonic()
                opt.prepare(None, say)
                scratch_s, scratch_blob = time.monotonic() - t, opt.state()
            else:  # the same training (same tasks, same seed): reuse it rather than pay it twice
                opt.restore(scratch_blob)
            row["scratch_ratio"], row["scratch_s"] = _best_ratio(opt, target, budget), round(scratch_s, 1)
            say(f"LITune ({name}) on {row['keys']}: shipped {row['shipped_ratio']}, adapted {row['adapted_ratio']}, "
                f"scratch {row['scratch_ratio']} (best ns/op over the defaults')")
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = (f"{'index':>6} {'keys':>13} {'mix':>10}  {'shipped':>8} {'adapted':>8} {'load s':>6}  "
            f"{'scratch':>8} {'train s':>7}")
    return text_table(head, [f"{r['index']:>6} {r['keys']:>13} {r['mix']:>10}  {cell(r['shipped_ratio']):>8} "
                             f"{cell(r['adapted_ratio']):>8} {r['adapted_s']:>6.1f}  {cell(r['scratch_ratio']):>8} "
                             f"{r['scratch_s']:>7.1f}" for r in rows],
                      f"\nLITune: best safe ns/op in {rows[0]['budget'] if rows else 0} trials over the defaults' "
                      "(lower is better); s: seconds before the first trial (loading, or meta-training from scratch)")
