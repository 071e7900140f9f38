"""The knob bench's text table (``advisor bench knobs``): per workload (and engine), the defaults, the rules seed, G*
and its interval, the validated recommendations, each optimizer's run (every seed), the summary over seeds and
engines of the generated workloads, the surrogate bench's summary, and what the time limit cut."""

from __future__ import annotations

from advisor.bench.knobs import generated


def table(doc: dict) -> str:
    """The bench's text table."""
    lines = []
    for w in doc["workloads"]:
        lo, hi = w["gstar_ci"]
        rules = f"{w['rules_gain']:+.1%}" if w["rules_gain"] is not None else "-"
        lines.append(f"\n{w['name']} on {w.get('engine', 'postgres')} ({w['objective']}, {w.get('statements', '?')} "
                     f"statements): defaults {w['default_objective']:.1f}, rules config {rules} vs defaults; "
                     f"G* = {w['gstar']:+.1%} (95% CI {lo:+.1%} .. {hi:+.1%}) from {w['pooled_trials']} pooled trials")
        for v in w.get("validated") or []:
            ci = f" (95% CI {v['ci'][0]:+.1%} .. {v['ci'][1]:+.1%})" if v["ci"] else ""
            gain = f"{v['gain']:+.1%}" if v["gain"] is not None else "-"
            lines.append(f"  validated {v['label']} seed {v['seed']}: {len(v['knobs'])} knob(s) {gain}{ci}"
                         + (f", regressed: {', '.join(v['regressed'])}" if v["regressed"] else "")
                         + f" -> {'ACCEPTED' if v['accepted'] else 'not accepted'}: {v['verdict']}")
            if v["knobs"]:
                lines.append("    " + ", ".join(f"{k} = {val}" for k, val in v["knobs"].items()))
        if not w.get("validated"):
            lines.append(f"  HiBO's recommendation: {w['hibo_recommends']}")
        lines.append(f"  {'optimizer':<14} {'seed':>4} {'trials':>6} {'failed':>6} {'best':>10} {'gain':>8} "
                     f"{'feasible':>8} {'of G*':>6} {'to 95%':>6} {'wall s':>7}  pick re-measured (95% CI)")
        for r in w["runs"]:
            share = f"{r['share_of_gstar']:.0%}" if r["share_of_gstar"] is not None else "-"
            fine = f"{r['feasible_gain']:+.1%}" if r.get("feasible_gain") is not None else "-"
            lines.append(f"  {r['label']:<14} {r.get('seed', 0):>4} {r['trials']:>6} {r['failed']:>6} "
                         f"{r['best_objective'] or 0:>10.1f} {r['gain']:>+8.1%} {fine:>8} {share:>6} "
                         f"{r['trials_to_95'] or '-':>6} {r['wall_s']:>7.1f}  {_again(r)}")
    for w in doc.get("skipped") or []:
        lines.append(f"\n{w['name']}{' on ' + w['engine'] if w.get('engine') else ''}: skipped ({w['reason']})")
    over = generated.summary([w for w in doc["workloads"] if generated.parse(w["name"])])
    if over:
        lines += generated.lines(over)
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
    m = doc["machine"]
    load = m.get("load") or {}
    if doc.get("cut"):
        lines.append(f"\nCUT by the time limit ({doc['options'].get('time_limit_s')} s), not measured:")
        lines += [f"  {c['name']} on {c['engine']}: {c['what']}" for c in doc["cut"]]
    if doc.get("partial"):
        lines.append("\nPARTIAL: the run was cut short; the workloads above are those it finished")
    lines.append(f"\nwall time {doc['wall_s']:.0f} s on {m['cores']} cores, {m['memory_gb']} GiB"
                 + (f", beside {m['cpu_hogs']} CPU hog(s)" if m.get("cpu_hogs") else "")
                 + (f"; load average {load.get('loadavg_start')} at the start, {load.get('loadavg_end')} at the end"
                    if load.get("loadavg_start") else ""))
    return "\n".join(lines)


def _again(run: dict) -> str:
    if run.get("remeasured_gain") is None:
        return "-"
    lo, hi = run["remeasured_ci"]
    return f"{run['remeasured_gain']:+.1%} ({lo:+.1%} .. {hi:+.1%})"
