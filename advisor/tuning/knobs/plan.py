"""The knob kind's plan: the options of a knob search (how many trials and seed configurations, how each trial
measures, which knobs and ranges the space holds, what it minimizes), each stated once (``plan.option``).

>>> KnobsPlan().trials, KnobsPlan.required()
(30, ())
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.inputs import RANGE_ITEM
from advisor.tuning.plan import Option, RunPlan, option, parallel_option, ray_option


@dataclass(frozen=True)
class KnobsPlan(RunPlan):
    kind: str = "knobs"
    trials: int = option(30, "trials of the knob search (baseline and seeds included)", (2, 10_000), "Trials",
                         form=True)
    seeds: int = option(3, "seed configurations (LLM or rules) tried first; 0 = none", (0, 20), "Seeds")
    repeats: int = option(3, "executions of each statement per trial (median)", (1, 100), "Repeats")
    include: tuple[str, ...] = option((), "knobs to add to the searched space", label="Include knobs")
    exclude: tuple[str, ...] = option((), "knobs to leave out of the searched space", label="Exclude knobs")
    range: tuple[str, ...] = option((), "narrow a knob's range: NAME=LOW:HIGH, e.g. work_mem=4MB:256MB",
                                    label="Ranges", pattern=RANGE_ITEM)
    allow_durability: bool = option(False, "also search the knobs that trade durability for speed (the engine's: "
                                    "fsync, synchronous_commit, full_page_writes on PostgreSQL)",
                                    label="Durability knobs")
    allow_unsafe: bool = option(False, "let include name knobs that change correctness (the engine's unsafe list, "
                                "e.g. autovacuum, session_replication_role, foreign_key_checks); never applied by a "
                                "schedule by itself", label="Unsafe knobs")
    objective: str = option("latency", "minimize weighted latency, or maximize throughput", label="Objective")
    parallel: int = parallel_option()
    ray: str | None = ray_option()


# what a knob run takes besides its plan on a command line: the server's hardware, when the target's is not known
INPUTS = (Option("memory_gb", "float", None, "server RAM for this run (default: stored with the target, else read "
                 "from the server)", (0.1, 1e6)),
          Option("cores", "int", None, "server cores for this run (default: as for --memory-gb)", (1, 100_000)),
          Option("storage", "text", None, "server storage kind: ssd, hdd or san"))
STORAGE = ("ssd", "hdd", "san")


def take(values: dict) -> dict:
    """The service's inputs of ``INPUTS``' values: the hardware given (``hardware``; None: the target's own)."""
    from advisor.core.hardware import resolve

    return {"hardware": resolve(values.get("memory_gb"), values.get("cores"), values.get("storage"))}
