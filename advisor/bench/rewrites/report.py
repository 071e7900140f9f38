"""What ``advisor bench rewrite`` reports from its rows (``advisor.bench.rewrites.bench``): the issue's targets
(``summary``: wrong or invalid outputs, the TPC-H speedup, statements slower than written, the suite against
sqlglot, the median rewrite time, Aurora against capped saturation), the printed table and the PNG plot. The
thresholds (``SLOWER``, ``MIN_ABS_MS``) are shared with the generated-statement bench (``corpus``)."""

from __future__ import annotations

import statistics
from pathlib import Path

STRATEGIES = ("aurora", "saturate", "greedy", "random")
SLOWER = 1.05  # a rewrite this much slower than its original counts against the rewriter,
MIN_ABS_MS = 1.0  # ... when also at least this much slower (the evidence model's floor for a regression)
TPCH_TARGET = 1.5  # total TPC-H latency: original / ours
MEDIAN_MS_TARGET = 300.0


def summary(doc: dict) -> dict:
    """The issue's targets from the rows: wrong or invalid outputs, TPC-H total speedup, statements slower than
    written, the suite's total against sqlglot's, the median rewrite time, and Aurora against capped saturation."""
    rows = doc["statements"]
    ours_bad = [r["name"] for r in rows if r["ours_verdict"] not in (None, "equivalent")]
    peer_wrong = [r["name"] for r in rows if (r["sqlglot_verdict"] or "").startswith("wrong")]
    peer_invalid = [r["name"] for r in rows if (r["sqlglot_verdict"] or "").startswith("invalid") or r["sqlglot_error"]]

    def total(group: str, key: str) -> float | None:
        values = [r[key] if r[key] is not None else r["original_lat_ms"] for r in rows if r["group"] == group]
        return sum(values) if all(v is not None for v in values) else None

    tpch_orig, tpch_ours = total("tpch", "original_lat_ms"), total("tpch", "ours_lat_ms")
    suite_ours, suite_peer = total("suite", "ours_lat_ms"), total("suite", "sqlglot_lat_ms")
    slower = [r["name"] for r in rows if r["rewritten"] and r["ours_lat_ms"] and r["original_lat_ms"]
              and r["ours_lat_ms"] > SLOWER * r["original_lat_ms"]
              and r["ours_lat_ms"] - r["original_lat_ms"] >= MIN_ABS_MS]
    within_noise = [r["name"] for r in rows if r["rewritten"] and r["ours_lat_ms"] and r["original_lat_ms"]
                    and r["ours_lat_ms"] > SLOWER * r["original_lat_ms"] and r["name"] not in slower]
    subset = [r for r in rows if r["name"] in doc["strategies"]]
    median_ms = statistics.median(r["lower_ms"] + r["rewrite_ms"] for r in subset) if subset else None
    reached, planned, ratios, improved = [], [], [], 0
    for name, by in doc["strategies"].items():
        sat, rl = by.get("saturate"), by.get("aurora")
        if not (sat and rl and sat["relative_cost"] < 1):
            continue
        improved += 1
        if rl["relative_cost"] <= sat["relative_cost"] * (1 + 1e-9):
            reached.append(name)
        if rl["planner_cost"] is not None and sat["planner_cost"] is not None \
                and rl["planner_cost"] <= sat["planner_cost"] * 1.001:
            planned.append(name)
        ratios.append((rl["nodes"], sat["nodes"]))
    return {
        "ours_wrong_or_invalid": ours_bad, "sqlglot_wrong": peer_wrong, "sqlglot_invalid_or_failed": peer_invalid,
        "sqlglot_renamed_columns": [r["name"] for r in rows if r.get("sqlglot_renamed")],
        "tpch_total_ms": {"original": tpch_orig, "ours": tpch_ours},
        "tpch_speedup": tpch_orig / tpch_ours if tpch_orig and tpch_ours else None,
        "slower_than_original": slower,
        "slower_by_under_1_ms": within_noise,
        "suite_total_ms": {"ours": suite_ours,
                           "sqlglot (wrong or invalid outputs counted as the original)": suite_peer},
        "median_rewrite_ms": median_ms,
        "aurora_reached_saturation_best": f"{len(reached)} of {improved} (estimated cost)",
        "aurora_reached_saturation_plan": f"{len(planned)} of {improved} (the planner's cost of the SQL extracted)",
        "aurora_nodes_over_saturation": sum(a for a, _ in ratios) / max(sum(b for _, b in ratios), 1),
        "targets": {
            "zero wrong or invalid (ours)": not ours_bad,
            f"TPC-H total >= {TPCH_TARGET}x": bool(tpch_orig and tpch_ours and tpch_orig / tpch_ours >= TPCH_TARGET),
            "no statement > 5% (and >= 1 ms) slower": not slower,
            "suite at least as fast as sqlglot": bool(suite_ours is not None and suite_peer is not None
                                                      and suite_ours <= suite_peer),
            f"median rewrite < {MEDIAN_MS_TARGET:g} ms": median_ms is not None and median_ms < MEDIAN_MS_TARGET,
            "Aurora reaches saturation's plan with <= half its nodes": bool(
                improved and len(planned) == improved
                and sum(a for a, _ in ratios) <= 0.5 * sum(b for _, b in ratios)),
        },
    }


def _ms(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def statement_lines(rows: list[dict], width: int = 22) -> list[str]:
    """The table's header and one line per statement: its latencies (ms) as written, with our answer and with
    sqlglot's, the speedups, the rewrite's ms, both verdicts and our rules."""
    lines = [f"  {'statement':{width}} {'original ms':>11} {'ours ms':>9} {'x':>6} {'sqlglot ms':>10} {'x':>6} "
             f"{'rewrite ms':>10}  ours / sqlglot verdict; rules"]
    for r in rows:
        orig = r["original_lat_ms"]
        ours_x = f"{orig / r['ours_lat_ms']:.2f}" if orig and r["ours_lat_ms"] else "-"
        peer_x = f"{orig / r['sqlglot_lat_ms']:.2f}" if orig and r["sqlglot_lat_ms"] else "-"
        ours_v = "rewritten" if r["rewritten"] else (r["reason"] or "-")[:40]
        if r["ours_verdict"] not in (None, "equivalent"):
            ours_v = r["ours_verdict"][:40]
        peer_v = (r["sqlglot_verdict"] or r["sqlglot_error"] or "-")[:40]
        lines.append(f"  {r['name']:{width}} {_ms(orig):>11} {_ms(r['ours_lat_ms']):>9} {ours_x:>6} "
                     f"{_ms(r['sqlglot_lat_ms']):>10} {peer_x:>6} {r['rewrite_ms']:10.1f}  {ours_v} / {peer_v}; "
                     f"{','.join(r['rules'])}")
    return lines


def table(doc: dict) -> str:
    o = doc["options"]
    lines = [f"rewrite bench on {o['engine']}: TPC-H scale {o['scale']:g}, optimizer "
             f"{o['optimizer']}, {o['rounds']} interleaved rounds, statement timeout {o['statement_timeout_ms']} ms",
             *statement_lines(doc["statements"])]
    lines += [f"  {r['name']:22} skipped: {r['reason']}" for r in doc.get("skipped", [])]
    lines.append(f"\n  {'search (same node budget)':26} " + " ".join(f"{s + ' RC/nodes':>18}" for s in STRATEGIES))
    for name, by in doc["strategies"].items():
        lines.append(f"  {name:26} " + " ".join(
            f"{by[s]['relative_cost']:>11.4f}/{by[s]['nodes']:<6d}" if s in by else f"{'-':>18}" for s in STRATEGIES))
    s = doc["summary"]
    lines.append("")
    for key in ("tpch_total_ms", "tpch_speedup", "suite_total_ms", "median_rewrite_ms", "ours_wrong_or_invalid",
                "sqlglot_wrong", "sqlglot_invalid_or_failed", "sqlglot_renamed_columns", "slower_than_original",
                "slower_by_under_1_ms",
                "aurora_reached_saturation_best", "aurora_reached_saturation_plan",
                "aurora_nodes_over_saturation"):
        lines.append(f"  {key}: {s[key]}")
    for key, met in s["targets"].items():
        lines.append(f"  target {key}: {'met' if met else 'NOT met'}")
    lines.append(f"\nwall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores")
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    speedup_bars(ax, doc["statements"])
    for s, color in zip(STRATEGIES, ("tab:red", "tab:blue", "tab:green", "tab:gray")):
        pts = [(by[s]["nodes"], by[s]["relative_cost"]) for by in doc["strategies"].values() if s in by]
        bx.scatter([p[0] for p in pts], [max(p[1], 1e-6) for p in pts], s=12, color=color, label=s)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("e-nodes")
    bx.set_ylabel("estimated cost / original")
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def speedup_bars(ax, rows: list[dict]) -> None:
    """Per statement, ours and sqlglot's speedup over the original as bars (0: wrong, invalid or not timed)."""
    xs = range(len(rows))
    for k, (who, color) in enumerate((("ours", "tab:red"), ("sqlglot", "tab:gray"))):
        ys = [r["original_lat_ms"] / r[f"{who}_lat_ms"] if r["original_lat_ms"] and r[f"{who}_lat_ms"] else 0
              for r in rows]
        ax.bar([x + (k - 0.5) * 0.4 for x in xs], ys, width=0.4, color=color, label=who)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xticks(list(xs), [r["name"] for r in rows], rotation=75, fontsize=7 if len(rows) < 60 else 4)
    ax.set_ylabel("speedup over the original (0: wrong, invalid or not timed)")
    ax.legend()
