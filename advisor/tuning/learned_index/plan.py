"""The learned-index kind's plan: the keys and the operation mix (both required), the index, the search's
evaluations, narrowed parameter ranges and LITune's retraining, each stated once (``plan.option``).

>>> LearnedIndexPlan.required(), LearnedIndexPlan().index
(('keys', 'workload'), 'alex')
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.inputs import RANGE_ITEM
from advisor.tuning.plan import RunPlan, option


@dataclass(frozen=True)
class LearnedIndexPlan(RunPlan):
    kind: str = "learned-index"
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
