"""The whole run's plan: which kinds it runs (``kinds``) and its parts' options it takes, each borrowed from the
part's own plan (default and meaning stated there once; the index budget not required: a whole run derives one
from the target's size when none is given).

>>> AllPlan().trials, AllPlan().budget_mb, AllPlan.required()
(30, None, ())
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.tuning.indexes.plan import IndexesPlan
from advisor.tuning.knobs.plan import KnobsPlan
from advisor.tuning.plan import RunPlan, borrowed, option
from advisor.tuning.rewrites.plan import RewritesPlan


PARTS = (IndexesPlan, RewritesPlan, KnobsPlan)  # the kinds a whole run runs, in this order, by their plans
ORDER = tuple(part.kind for part in PARTS)  # their names (a plan class's ``kind`` default is its kind's name)


@dataclass(frozen=True)
class AllPlan(RunPlan):
    kind: str = "all"
    kinds: tuple[str, ...] = option((), "what a whole run tunes, in this order: indexes, rewrites, knobs (default: "
                                    "all three)", label="Kinds", form=True)
    trials: int = borrowed(KnobsPlan, "trials")
    seeds: int = borrowed(KnobsPlan, "seeds")
    repeats: int = borrowed(KnobsPlan, "repeats")
    budget_mb: float | None = borrowed(IndexesPlan, "budget_mb")
    episodes: int = borrowed(IndexesPlan, "episodes")
    samples: int = borrowed(IndexesPlan, "samples")
    max_statements: int = borrowed(RewritesPlan, "max_statements")
