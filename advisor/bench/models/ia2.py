"""IA2's shipped agent against training per target, on generated workloads it was not trained on (the IA2 part of
``advisor bench models``).

On each held-out workload (``advisor.tuning.indexes.shipped.HELD_OUT_SEEDS``: the training's schemas, workloads drawn
with seeds never trained on), three IA2s answer the same problem and budget: the shipped agent as it is (no
adaptation), the shipped agent adapted as a first run adapts it (``IA2``'s ``adapt_episodes``), and one trained from
scratch with ``scratch_episodes`` (what a first question cost before the agent shipped). Each starts with an empty
what-if cache (so none is timed on another's planner calls). Reported per workload: each one's what-if cost of
its own set (before the pipeline's fallback to the baselines) over Extend's (lower is better), its planner calls and
the seconds to its first recommendation (prepare and ask). Timings are measured on this machine: nothing is
asserted.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from advisor.bench.models import cell, text_table
from advisor.core.progress import Say, silent

VARIANTS = ("shipped", "adapted", "scratch")


def _answer(problem, options: dict, seed: int, say: Say) -> dict:
    """One IA2 on ``problem`` with a what-if cache of its own: its set, planner calls, seconds to the answer."""
    from optimizers import registry
    from optimizers.indexes.costing import CachedWhatIf

    own = replace(problem, whatif=CachedWhatIf(problem.whatif.planner))
    started = time.perf_counter()
    opt = registry.create("indexes", "ia2", own, seed=seed, device="cpu", **options)
    training = opt.prepare(None, say) or {}
    config = opt.ask(1)[0]
    return {"config": config, "s": round(time.perf_counter() - started, 1), "calls": own.whatif.calls,
            "episodes": training.get("episodes", 0), "started_from": training.get("started_from", "scratch")}


def run(adapt_episodes: int | None = None, scratch_episodes: int = 300, seed: int = 0, say: Say = silent,
        seeds: tuple[int, ...] | None = None) -> list[dict]:
    from optimizers.indexes import ia2
    from optimizers.indexes.baselines import Extend

    from advisor.tuning.indexes import shipped

    adapt = ia2.ADAPT_EPISODES if adapt_episodes is None else adapt_episodes
    options = {"shipped": {"adapt_episodes": 0}, "adapted": {"adapt_episodes": adapt},
               "scratch": {"retrain": True, "episodes": scratch_episodes}}
    rows = []
    with shipped.generated_problems(shipped.workloads(seeds or shipped.HELD_OUT_SEEDS), seed, say) as problems:
        for name, problem in problems:
            base = problem.cost() or 1.0
            extend = problem.cost(Extend(problem).ask(1)[0]) / base
            row = {"workload": name, "statements": len(problem.queries), "candidates": len(problem.candidates),
                   "extend_rc": round(extend, 4)}
            for label in VARIANTS:
                say(f"IA2 on {name}: {label}")
                got = _answer(problem, options[label], seed, say)
                rc = problem.cost(got["config"]) / base
                row.update({f"{label}_vs_extend": round(rc / extend, 4) if extend else None,
                            f"{label}_s": got["s"], f"{label}_calls": got["calls"],
                            f"{label}_episodes": got["episodes"]})
            say(f"IA2 on {name}: what-if cost over Extend's: shipped {row['shipped_vs_extend']}, adapted "
                f"{row['adapted_vs_extend']}, scratch {row['scratch_vs_extend']}")
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = (f"{'workload':>14} {'stmts':>5} {'cands':>5}  {'shipped':>8} {'s':>5}  {'adapted':>8} {'s':>5}  "
            f"{'scratch':>8} {'s':>5}")
    return text_table(head, [f"{r['workload']:>14} {r['statements']:>5} {r['candidates']:>5}  "
                             + "  ".join(f"{cell(r[f'{v}_vs_extend']):>8} {r[f'{v}_s']:>5.1f}" for v in VARIANTS)
                             for r in rows],
                      "\nIA2: what-if cost of its own set over Extend's (lower is better; the pipeline recommends "
                      "Extend's when it is lower); s: seconds to the first recommendation (training or adapting, "
                      "then the answer)")


def plot(rows: list[dict], path: Path) -> None:
    """Per held-out workload, each IA2's what-if cost over Extend's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows) + 2), 4))
    xs = range(len(rows))
    for k, label in enumerate(VARIANTS):
        ax.bar([x + 0.27 * k for x in xs], [r[f"{label}_vs_extend"] or 0 for r in rows], 0.27,
               label=f"{label} ({sum(r[f'{label}_s'] for r in rows) / max(1, len(rows)):.0f} s mean)")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks([x + 0.27 for x in xs])
    ax.set_xticklabels([r["workload"] for r in rows], rotation=20)
    ax.set_ylabel("IA2's what-if cost / Extend's")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
