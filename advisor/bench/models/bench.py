"""The shipped models against training per target, on schemas no model was trained on (``advisor bench models``).

For Aurora's rule policy: on each held-out generated schema (``optimizers.rewrites.search.pretrain.HELD_OUT``), its
generated statements are searched (greedily, as a run does) by three policies: the shipped one as it is; the
shipped one adapted with a run's default episodes on the schema's statements; and one trained from scratch on
them with ``scratch_episodes`` (what a first question cost before the policy shipped). Reported per schema: the
mean relative cost reached (the statement's estimated cost after the search over its cost as written: lower is
better) and the seconds spent training. Nothing is asserted; the table, JSON and PNG keep what was measured.
LITune's shipped models are compared the same way on held-out key sets (``advisor.bench.models.litune``), IA2's
shipped agent on held-out generated index workloads (``advisor.bench.models.ia2``).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.hardware import detect
from advisor.core.progress import Say, silent


@dataclass(frozen=True)
class ModelBenchOptions:
    schemas: tuple[int, ...] = (1001, 1002, 1003, 1004)
    statements: int = 10  # generated statements per held-out schema
    adapt: int = 8  # episodes of a run's adaptation (AuroraRewriter's default)
    scratch_episodes: int = 120  # a per-target training from scratch
    seed: int = 0
    out_dir: str = "bench-results/models"
    litune: bool = True  # LITune's shipped models too (``advisor.bench.models.litune``)
    litune_budget: int = 12  # trials per held-out key set
    litune_episodes: int = 60  # a per-target meta-training from scratch (LITune's default)
    ia2: bool = True  # IA2's shipped agent too (``advisor.bench.models.ia2``)
    ia2_scratch_episodes: int = 300  # a per-target training from scratch (IA2's default)


def _mean_rc(agent, problem, searches) -> float:
    costs = []
    for make in searches:
        result = agent.run(make())
        costs.append(result.cost / max(result.initial_cost, 1e-9))
    return statistics.fmean(costs) if costs else float("nan")


def run(o: ModelBenchOptions = ModelBenchOptions(), say: Say = silent) -> dict:
    from optimizers.rewrites.search.aurora import Aurora
    from optimizers.rewrites.search.pretrain import generated_problem, makers, shipped

    started = time.monotonic()
    rows = []
    from advisor.tuning.rewrites.shipped import dialects

    for k, s in enumerate(o.schemas):
        problem = generated_problem(s, dialects()[k % len(dialects())], statements=o.statements)
        lowered = list(problem.lowered.values())
        if not lowered:
            continue
        fixed = makers(problem, lowered, o.seed)  # the searches every policy is judged on
        say(f"schema {s}: {len(problem.schema)} tables, {len(lowered)} statements")
        found = shipped(seed=o.seed, device="cpu")
        if found is None:
            raise AdvisorError("no shipped policy: run `advisor train` first")
        as_shipped = _mean_rc(found[0], problem, fixed)
        t = time.monotonic()
        adapted = shipped(seed=o.seed, device="cpu")[0]
        adapted.train(makers(problem, lowered, o.seed + 1), o.adapt)
        adapt_s = time.monotonic() - t
        t = time.monotonic()
        scratch = Aurora(seed=o.seed, device="cpu")
        say(f"schema {s}: training a policy from scratch ({o.scratch_episodes} episodes)")
        scratch.train(makers(problem, lowered, o.seed + 2), o.scratch_episodes)
        scratch_s = time.monotonic() - t
        rows.append({"schema": s, "dialect": problem.dialect, "statements": len(lowered), "shipped_rc": as_shipped,
                     "adapted_rc": _mean_rc(adapted, problem, fixed), "adapt_s": adapt_s,
                     "scratch_rc": _mean_rc(scratch, problem, fixed), "scratch_s": scratch_s})
    litune = []
    if o.litune:
        from advisor.bench.models.litune import run as run_litune

        litune = run_litune(o.litune_budget, o.litune_episodes, o.seed, say)
    ia2 = []
    if o.ia2:
        from advisor.bench.models.ia2 import run as run_ia2

        ia2 = run_ia2(scratch_episodes=o.ia2_scratch_episodes, seed=o.seed, say=say)
    doc = {"machine": asdict(detect()), "options": asdict(o), "rows": rows, "litune": litune, "ia2": ia2,
           "wall_s": time.monotonic() - started}
    for key in ("shipped_rc", "adapted_rc", "scratch_rc", "adapt_s", "scratch_s"):
        doc[f"mean_{key}"] = statistics.fmean(r[key] for r in rows) if rows else None
    out = Path(o.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "models.json").write_text(json.dumps(doc, indent=2))
    plot(doc, out / "models.png")
    if ia2:
        from advisor.bench.models.ia2 import plot as plot_ia2

        plot_ia2(ia2, out / "models-ia2.png")
    return doc


def table(doc: dict) -> str:
    head = (f"{'schema':>6} {'stmts':>5}  {'shipped rc':>10} {'adapted rc':>10} {'adapt s':>7}  "
            f"{'scratch rc':>10} {'scratch s':>9}")
    lines = [head, "-" * len(head)]
    for r in doc["rows"]:
        lines.append(f"{r['schema']:>6} {r['statements']:>5}  {r['shipped_rc']:>10.3f} {r['adapted_rc']:>10.3f} "
                     f"{r['adapt_s']:>7.1f}  {r['scratch_rc']:>10.3f} {r['scratch_s']:>9.1f}")
    if doc["rows"]:
        lines.append(f"{'mean':>6} {'':>5}  {doc['mean_shipped_rc']:>10.3f} {doc['mean_adapted_rc']:>10.3f} "
                     f"{doc['mean_adapt_s']:>7.1f}  {doc['mean_scratch_rc']:>10.3f} {doc['mean_scratch_s']:>9.1f}")
    lines.append("\nrc: the statements' mean estimated cost after the search over their cost as written (lower is "
                 "better); s: seconds of training before the first answer")
    if doc.get("litune"):
        from advisor.bench.models.litune import table as litune_table

        lines.append("\n" + litune_table(doc["litune"]))
    if doc.get("ia2"):
        from advisor.bench.models.ia2 import table as ia2_table

        lines.append("\n" + ia2_table(doc["ia2"]))
    lines.append(f"wall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores")
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(doc["rows"]))
    for k, (key, label) in enumerate((("shipped_rc", "shipped"), ("adapted_rc", "shipped + adapted"),
                                      ("scratch_rc", "trained from scratch"))):
        ax.bar([x + 0.27 * k for x in xs], [r[key] for r in doc["rows"]], 0.27, label=label)
    ax.set_xticks([x + 0.27 for x in xs])
    ax.set_xticklabels([f"schema {r['schema']}" for r in doc["rows"]])
    ax.set_ylabel("mean relative cost (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
