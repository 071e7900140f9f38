"""The scale bench's table (``table``) and plot (``plot``: the best gain against wall-clock time per workload, one
line per seed and parallelism; trials per hour measured and projected against workers)."""

from __future__ import annotations

from pathlib import Path


def table(doc: dict) -> str:
    lines = [f"{'workload':<18} {'parallel':>8} {'wall s':>8} {'trials/h':>9} {'best gain':>10} {'reach':>7} "
             f"{'per seed':>20}"]
    for r in doc["rows"]:
        reach = "never" if r["reach_mean_curve"] is None else f"{r['reach_mean_curve']:.2f}"
        each = ",".join("never" if x is None else f"{x:.2f}" for x in r["reach_each"])
        lines.append(f"{r['workload']:<18} {r['parallel']:>8} {r['wall_s']:>8.1f} {r['trials_per_hour']:>9.0f} "
                     f"{r['best_gain']:>+10.1%} {reach:>7} {each:>20}")
    t = doc.get("target")
    if t:
        worst = "n/a (the mean never reached the serial best)" if t["reach_ratio_worst"] is None \
            else f"{t['reach_ratio_worst']:.2f}x at worst, {t['reach_ratio_mean']:.2f}x mean"
        lines.append(f"2 clones reach the serial best (mean over seeds) in {worst} of its wall time (target <= "
                     f"{t['target']}x); whole runs {t['wall_ratio_mean']:.2f}x; final gain no worse: "
                     f"{'yes' if t['quality_no_worse'] else 'no'}; {'met' if t['met'] else 'not met'}")
    p = doc["projection"]
    if p["rows"]:
        lines.append(f"projected ({p['rows'][0]['trials']} trials; a trial {p['trial_s_median']} s, an ask "
                     f"{p['ask_s']} s, a clone {p['clone_s']} s): " + ", ".join(
                         f"{r['workers']} workers {r['trials_per_hour']:,.0f} trials/h" for r in p["rows"]))
    lines += [f"note: {n}" for n in doc.get("notes", [])]
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["workload"] for r in doc["runs"]))
    fig, axes = plt.subplots(1, len(names) + 1, figsize=(5 * (len(names) + 1), 4), squeeze=False)
    colors = {1: "tab:blue", 2: "tab:orange"}
    for ax, name in zip(axes[0], names):
        for run in (r for r in doc["runs"] if r["workload"] == name):
            best, xs, ys = 0.0, [], []
            for t in run["trials"]:
                if t["status"] == "measured" and run["baseline"] and t["objective"] is not None:
                    best = max(best, 1.0 - t["objective"] / run["baseline"])
                xs.append(t["ended_s"])
                ys.append(best)
            ax.step(xs, ys, where="post", color=colors.get(run["parallel"], "tab:green"), alpha=0.7,
                    label=f"x{run['parallel']}" if run["seed"] == doc["options"]["seeds"][0] else None)
        ax.set_title(name)
        ax.set_xlabel("wall-clock s")
        ax.set_ylabel("best gain over the baseline")
        ax.legend()
    ax = axes[0][-1]
    measured = {}
    for r in doc["rows"]:
        measured.setdefault(r["parallel"], []).append(r["trials_per_hour"])
    ax.plot(list(measured), [sum(v) / len(v) for v in measured.values()], "o-", label="measured (mean of workloads)")
    proj = doc["projection"]["rows"]
    if proj:
        ax.plot([r["workers"] for r in proj], [r["trials_per_hour"] for r in proj], "s--", label="projected")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers")
    ax.set_ylabel("trials per hour")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
