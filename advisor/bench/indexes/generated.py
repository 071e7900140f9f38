"""What the generated workloads of ``advisor bench indexes`` add up to: IA2 against the best peer on each, and over all.

Per workload ``gen-<schema>.s<seed>`` (``sources``): IA2's real runtime (its set, or its set within the best
peer's storage when its own took more: ``ia2@<peer>``) over the best peer's (the lowest runtime among Supabase-style
single columns, all foreign keys, Extend and the exact ILP), the statements its set made >10% slower, whether the
pipeline's fallback recommended a baseline's set instead of IA2's own, and IA2's own set's what-if cost against the
ILP's on the same problem (the pipeline checks IA2's set against Extend's, Dexter's and a time-limited ILP's: the
DRL advisor earning its place). Over all: the median and worst ratio, the statements slower, the fallback
rate, the share of workloads where IA2's own set is within 2% of the ILP, and the ratio measured head to head
(``head_to_head``: both sets in the same rounds); beside them the same ratios for IA2's
pipeline without the correction step (``ia2-uncorrected``, same run) and how often a set chosen again on corrected
costs was taken.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median

PREFIX = "gen-"
TARGETS = {"median_ratio": 1.0, "worst_ratio": 1.2, "own_within_2pct_share": 0.8}
UNCORRECTED = "ia2-uncorrected"  # IA2's pipeline without the correction step, in the same run
ILP_TOLERANCE = 1.02


def summary(workloads: dict[str, dict]) -> dict | None:
    """Over the generated workloads among ``workloads`` (name: the bench's result for it); None without any."""
    rows = [_row(name, w) for name, w in workloads.items() if name.startswith(PREFIX)]
    if not rows:
        return None
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None and r["ratio"] == r["ratio"]]  # NaN: not measured
    before = [r["uncorrected_ratio"] for r in rows if r["uncorrected_ratio"] is not None]
    duels = [r["head_to_head"] for r in rows if r["head_to_head"] is not None]
    vs_ilp = [r["own_vs_ilp"] for r in rows if r["own_vs_ilp"] is not None]
    within = [v <= ILP_TOLERANCE for v in vs_ilp]
    out = {"workloads": rows,
           "median_ratio": round(median(ratios), 3) if ratios else None,
           "worst_ratio": round(max(ratios), 3) if ratios else None,
           "uncorrected_median_ratio": round(median(before), 3) if before else None,
           "uncorrected_worst_ratio": round(max(before), 3) if before else None,
           # the same ratio measured head to head, both sets in the same rounds (``head_to_head``)
           "head_to_head_median": round(median(duels), 3) if duels else None,
           "head_to_head_worst": round(max(duels), 3) if duels else None,
           "rechosen": sum(r["correction"] == "rechosen" for r in rows),
           # whose set the pipeline recommended for IA2: its own, the baseline's it fell back to, or the set the
           # correction step took (the optimizer's or a baseline's, chosen on corrected costs)
           "recommended_from": _counts(r["rechosen_from"] or r["fallback"] or "ia2" for r in rows),
           "slower_statements": sum(r["slower"] for r in rows),
           "fallback_rate": round(sum(bool(r["fallback"]) for r in rows) / len(rows), 3),
           "own_within_2pct_share": round(sum(within) / len(within), 3) if within else None}
    out["targets"] = {
        "median_ratio_at_most_1": _met(out["median_ratio"], TARGETS["median_ratio"]),
        "worst_ratio_at_most_1.2": _met(out["worst_ratio"], TARGETS["worst_ratio"]),
        "no_statement_10pct_slower": out["slower_statements"] == 0,
        "own_set_within_2pct_of_ilp_on_80pct": None if out["own_within_2pct_share"] is None
        else out["own_within_2pct_share"] >= TARGETS["own_within_2pct_share"],
        "head_to_head_median_at_most_1": _met(out["head_to_head_median"], TARGETS["median_ratio"]),
        "head_to_head_worst_at_most_1.2": _met(out["head_to_head_worst"], TARGETS["worst_ratio"])}
    return out


def _counts(names) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in names:
        out[n] = out.get(n, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _met(value: float | None, limit: float) -> bool | None:
    return None if value is None else value <= limit


def _row(name: str, w: dict) -> dict:
    runs = {r["advisor"]: r for r in w["advisors"]}
    ia2 = runs.get("ia2")
    vs = w.get("targets", {}).get("vs_best_peer")
    ratio = None
    if vs and vs["runtime"][1] > 0 and vs["runtime"][0] == vs["runtime"][0]:
        ratio = round(vs["runtime"][0] / vs["runtime"][1], 3)
    mine = runs.get(vs["ia2"]) if vs else ia2
    checked = (ia2 or {}).get("baselines", {})  # on the pipeline's own problem, so the costs compare exactly
    own, exact = checked.get("ia2"), checked.get("ilp")
    plain, peer = runs.get(UNCORRECTED), runs.get(vs["peer"]) if vs else None
    before = None
    if plain and peer and peer["relative_runtime"] > 0 and plain["relative_runtime"] == plain["relative_runtime"]:
        before = round(plain["relative_runtime"] / peer["relative_runtime"], 3)
    return {"workload": name, "statements": w["statements"], "peer": vs["peer"] if vs else None,
            "ia2": vs["ia2"] if vs else None, "ratio": ratio,
            "runtime": vs["runtime"] if vs else None, "storage_mb": vs["storage_mb"] if vs else None,
            "slower": len(set((ia2 or {}).get("slower", [])) | set((mine or {}).get("slower", []))),
            "fallback": (ia2 or {}).get("fallback", ""),
            "uncorrected_ratio": before, "correction": (ia2 or {}).get("correction", ""),
            "rechosen_from": (ia2 or {}).get("rechosen_from", ""),
            "head_to_head": (w.get("head_to_head") or {}).get("ratio"),
            "own_vs_ilp": round(own / exact, 4) if own is not None and exact else None}


def lines(s: dict) -> list[str]:
    """The table's part for the generated workloads."""
    out = ["\ngenerated workloads: IA2 against the best peer (runtime ratio at no more storage; < 1 is IA2 faster)",
           f"  {'workload':18} {'stmts':>5} {'best peer':>10} {'IA2 as':>14} {'ratio':>6} {'MB IA2/peer':>13} "
           f"{'>10% slower':>11} {'fallback':>8} {'own/ILP RC':>10} {'uncorrected':>11} {'correction':>10}"]
    for r in s["workloads"]:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        mb = "-" if r["storage_mb"] is None else f"{r['storage_mb'][0]:.1f}/{r['storage_mb'][1]:.1f}"
        ilp = "-" if r["own_vs_ilp"] is None else f"{r['own_vs_ilp']:.3f}"
        out.append(f"  {r['workload']:18} {r['statements']:5d} {r['peer'] or '-':>10} {r['ia2'] or '-':>14} "
                   f"{ratio:>6} {mb:>13} {r['slower']:11d} {r['fallback'] or 'no':>8} {ilp:>10} "
                   f"{'-' if r.get('uncorrected_ratio') is None else format(r['uncorrected_ratio'], '.3f'):>11} "
                   f"{r.get('correction') or '-':>10}")
    out.append(f"  median ratio {s['median_ratio']}, worst {s['worst_ratio']}; statements >10% slower "
               f"{s['slower_statements']}; fallback rate {s['fallback_rate']:.0%}; IA2's own set within 2% of the "
               f"ILP's what-if cost on {_pct(s['own_within_2pct_share'])} of the workloads")
    if s.get("recommended_from"):
        out.append("  the set recommended came from: " + ", ".join(f"{n} {c}/{len(s['workloads'])}"
                                                                for n, c in s["recommended_from"].items()))
    if s.get("head_to_head_median") is not None:
        out.append(f"  head to head (IA2's set and the peer's in the same rounds): median {s['head_to_head_median']}, "
                   f"worst {s['head_to_head_worst']}; per workload: " + ", ".join(
                       f"{r['workload']} {r['head_to_head']:.3f}" for r in s["workloads"] if r["head_to_head"]))
    if s.get("uncorrected_median_ratio") is not None:
        out.append(f"  without the correction step (same run): median ratio {s['uncorrected_median_ratio']}, worst "
                   f"{s['uncorrected_worst_ratio']}; a set chosen again on corrected costs was taken on "
                   f"{s['rechosen']} workload(s)")
    for key, met in s["targets"].items():
        out.append(f"  target {key}: {({True: 'met', False: 'NOT met', None: 'n/a'})[met]}")
    return out


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0%}"


def plot(s: dict, path: Path) -> None:
    """IA2's runtime over the best peer's, per generated workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in s["workloads"] if r["ratio"] is not None]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(rows) + 2), 4.5))
    xs = range(len(rows))
    ax.bar(xs, [r["ratio"] for r in rows], color=["tab:red" if r["ratio"] > 1 else "tab:green" for r in rows])
    for x, r in zip(xs, rows):
        ax.annotate(r["peer"], (x, r["ratio"]), ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(TARGETS["worst_ratio"], color="gray", lw=0.8, ls="--")
    ax.set_xticks(list(xs), [r["workload"] for r in rows], rotation=40, ha="right")
    ax.set_ylabel("IA2 runtime / best peer's (same storage or less)")
    ax.set_title(f"generated workloads: median {s['median_ratio']}, worst {s['worst_ratio']}")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
