"""The learned-index kind's plan: the keys and the operation mix (both required), the search (its default and why,
``DEFAULT_OPTIMIZER``), the index, the search's evaluations, narrowed parameter ranges and LITune's retraining, each
stated once (``plan.option``).

>>> LearnedIndexPlan.required(), LearnedIndexPlan().index
(('keys', 'workload'), 'alex')
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.inputs import RANGE_ITEM
from advisor.tuning.plan import RunPlan, option, parallel_option, ray_option


# The kind's default search: the one the learned-index bench shows ahead (``advisor bench learned-index --datasets
# held-out --litune-model shipped``: key families no model was trained on; docs/learned-index.md has the table).
DEFAULT_OPTIMIZER = "litune"
WHY_DEFAULT = ("default litune: LITune's shipped model, meta-trained across eight key families x four mixes, was ahead "
               "on key families it never saw (normal, zipf-clustered, bursty; 12 cells, budget 16): 1.58x less CPU "
               "time per operation than the defaults (geometric mean, worst cell 1.34x), GP-BO 1.49x, HiBO 1.43x, "
               "TPE and random 1.41x, with 0 unsafe trials (GP-BO 20); it reaches GP-BO's best in 0.74x GP-BO's "
               "evaluations, not the 0.5x aimed at. A space narrowed by --range has no shipped model: LITune then "
               "meta-trains one first (minutes); hibo needs none")


@dataclass(frozen=True)
class LearnedIndexPlan(RunPlan):
    kind: str = "learned-index"
    optimizer: str | None = option(None, f"the search ({WHY_DEFAULT})", label="Optimizer")
    keys: str | None = option(None, "a learned index's keys: synthetic:NAME[:N], [schema.]table.column of the "
                              "target, or a file (one uint64 per line, or SOSD binary; at most 2,000,000 keys and 64 "
                              "MiB; over the API, the web UI and schedules only a file of the server's "
                              "ADVISOR_KEY_FILES_DIR)", label="Keys", form=True, required=True)
    workload: str | None = option(None, "a learned index's operation mix: read-only, read-heavy, balanced, "
                                  "write-heavy or lookup=0.7,insert=0.2,range=0.1", label="Workload mix", form=True,
                                  required=True)
    budget: int = option(20, "evaluations of the learned-index search (the defaults' included)", (2, 10_000),
                         "Evaluations", form=True)
    index: str = option("alex", "the learned index: alex (updatable, ALEX-like) or pgm (read-only)",
                        label="Learned index", form=True)
    range: tuple[str, ...] = option((), "narrow a learned index parameter's range: NAME=LOW:HIGH",
                                    label="Ranges", pattern=RANGE_ITEM)
    retrain: bool = option(False, "train LITune's agent again from scratch instead of starting from the stored or "
                           "shipped one", label="Retrain")
    parallel: int = parallel_option()
    ray: str | None = ray_option()
