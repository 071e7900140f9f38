"""The index kind's plan: the storage budget (required), the widest index, and IA2's training options, each
stated once (``plan.option``).

>>> IndexesPlan.required(), IndexesPlan().episodes
(('budget_mb',), 300)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.tuning.plan import Option, RunPlan, option

BUDGET_MB_MAX = 10_000_000
MIN_BUDGET_MB = 16.0
BUDGET_SHARE = 0.25  # an index budget left unset: this share of the database's size (at least MIN_BUDGET_MB)


@dataclass(frozen=True)
class IndexesPlan(RunPlan):
    kind: str = "indexes"
    budget_mb: float | None = option(None, "MiB of new indexes", (0, BUDGET_MB_MAX), "Budget, MB", form=True,
                                     required=True)
    max_width: int = option(3, "columns per candidate index", (1, 3), "Index width")
    episodes: int = option(300, "IA2 training episodes from scratch (with retrain, or when no model is stored or "
                           "shipped)", (1, 100_000), "Episodes")
    samples: int = option(48, "IA2 rollouts sampled besides the greedy one", (0, 10_000), "Samples")
    retrain: bool = option(False, "train IA2's model again from scratch, even if this target has one or one is "
                           "shipped", label="Retrain")
    correct: bool = option(True, "after validation, choose again on what-if costs corrected by the times measured "
                           "(learned per statement and index shape), and validate a set they rate better before it "
                           "can replace the first", label="Correct by measured time")

    def sized_for(self, data_bytes: int) -> "IndexesPlan":
        """A budget left unset: ``BUDGET_SHARE`` of the database's size, at least ``MIN_BUDGET_MB``.

        >>> IndexesPlan().sized_for(2**30).budget_mb, IndexesPlan(budget_mb=5.0).sized_for(2**30).budget_mb
        (256.0, 5.0)
        """
        if self.budget_mb is not None:
            return self
        return replace(self, budget_mb=float(max(MIN_BUDGET_MB, round(BUDGET_SHARE * data_bytes / 2**20))))


# what an index run takes besides its plan on a command line, and what its report can show besides
INPUTS = (Option("device", "text", None, "IA2 training device: auto (CUDA when present), cpu, cuda (default: "
                 "ADVISOR_DEVICE)"),)
DISPLAYS = (Option("explain", "bool", False, "print, per observed statement, its bound constants, candidates, what-if "
                   "costs and why each candidate was or was not chosen"),)
