"""The knob bench's text table (``advisor bench knobs``): per workload, the defaults, the rules seed, G* and its
interval, HiBO's validated recommendation, each optimizer's run, and the surrogate bench's summary."""

from __future__ import annotations


def table(doc: dict) -> str:
    """The bench's text table."""
    lines = []
    for w in doc["workloads"]:
        lo, hi = w["gstar_ci"]
        rules = f"{w['rules_gain']:+.1%}" if w["rules_gain"] is not None else "-"
        lines.append(f"\n{w['name']} ({w['objective']}): defaults {w['default_objective']:.1f}, rules config {rules} "
                     f"vs defaults; G* = {w['gstar']:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}) from "
                     f"{w['pooled_trials']} pooled trials")
        hv = w["hibo_validated_ci"]
        validated = f"{w['hibo_validated_gain']:+.1%}" if w["hibo_validated_gain"] is not None else "-"
        lines.append(f"  HiBO's recommendation validated: {validated}"
                     + (f" (95% CI {hv[0]:+.1%} .. {hv[1]:+.1%})" if hv else "")
                     + (f", regressed: {', '.join(w['hibo_regressed'])}" if w.get("hibo_regressed") else "")
                     + f" -> {w['hibo_recommends']}")
        lines.append(f"  {'optimizer':<14} {'trials':>6} {'failed':>6} {'best':>10} {'gain':>8} {'feasible':>8} "
                     f"{'of G*':>6} {'to 95%':>6} {'wall s':>7}")
        for r in w["runs"]:
            share = f"{r['share_of_gstar']:.0%}" if r["share_of_gstar"] is not None else "-"
            fine = f"{r['feasible_gain']:+.1%}" if r.get("feasible_gain") is not None else "-"
            lines.append(f"  {r['label']:<14} {r['trials']:>6} {r['failed']:>6} {r['best_objective'] or 0:>10.1f} "
                         f"{r['gain']:>+8.1%} {fine:>8} {share:>6} {r['trials_to_95'] or '-':>6} {r['wall_s']:>7.1f}")
    for w in doc.get("skipped") or []:
        lines.append(f"\n{w['name']}: skipped ({w['reason']})")
    sur = doc.get("surrogate") or {}
    for name, w in (sur.get("workloads") or {}).items():
        lines.append(f"\nSURROGATE {name} (per-statement random forests on {w['trained_on']} real trials; "
                     f"{w['seeds']} seeds x {w['trials']} trials): pooled best feasible gain "
                     f"{w['reference_gain']:+.1%}")
        lines.append(f"  {'optimizer':<14} {'of best':>7} {'min':>5} {'>=90%':>5} {'gain':>7} {'to 90%':>6} "
                     f"{'best regresses':>14} {'wall s':>7}")
        for label, s in w["optimizers"].items():
            lines.append(f"  {label:<14} {s['mean_share_of_reference']:>7.0%} {s['min_share_of_reference']:>5.0%} "
                         f"{s['reached_90pct']:>3}/{w['seeds']} {s['mean_feasible_gain']:>+7.1%} "
                         f"{s['mean_trials_to_90pct']:>6} {s['best_total_regresses']:>11}/{w['seeds']} "
                         f"{s['wall_s']:>7.0f}")
    lines.append(f"\nwall time {doc['wall_s']:.0f} s on {doc['machine']['cores']} cores, "
                 f"{doc['machine']['memory_gb']} GiB")
    return "\n".join(lines)
