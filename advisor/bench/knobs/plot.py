"""The knob bench's plot: per workload, each run's best-so-far gain over the defaults against G*, and the
surrogate part's mean curves."""

from __future__ import annotations

from pathlib import Path

from advisor.bench.knobs.runs import WorkloadReport


def plot(reports: list[WorkloadReport], surrogate: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(f"{r.engine} {r.name}", r) for r in reports] + \
        [(f"SURROGATE {n}", w) for n, w in surrogate["workloads"].items()]
    if not panels:
        return
    cols = min(len(panels), 4)
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (title, item) in zip(axes.flat, panels):
        if isinstance(item, WorkloadReport):
            for run in item.runs:
                ax.plot(range(1, len(run.curve) + 1), [100 * g for g in run.curve],
                        label=run.label if run.seed == item.runs[0].seed else None,
                        color=_color(run.label), linewidth=2 if run.label == "hibo" else 1)
            ax.axhline(100 * item.gstar, color="black", linestyle="--", linewidth=1, label="G* (pooled best)")
            ax.set_ylabel("best-so-far gain over defaults (%)")
        else:
            for label, s in item["optimizers"].items():
                ax.plot(range(1, len(s["mean_curve"]) + 1), [100 * g for g in s["mean_curve"]], label=label,
                        color=_color(label), linewidth=2 if label == "hibo" else 1)
            ax.axhline(100 * item["reference_gain"], color="black", linestyle="--", linewidth=1,
                       label="pooled best feasible")
            ax.set_ylabel("mean best feasible gain (%)")
        ax.set_title(title)
        ax.set_xlabel("trial")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_COLORS = {"hibo": "tab:red", "hibo-unseeded": "tab:orange", "smac": "tab:blue", "gp": "tab:green",
           "tpe": "tab:purple", "random": "tab:gray"}


def _color(label: str) -> str:
    return _COLORS.get(label, "tab:brown")
