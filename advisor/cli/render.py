"""Human-readable rendering of results for the CLI (rich). JSON output goes through ``codec`` instead."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from advisor.core.domain import KnobChange, Recommendation

if TYPE_CHECKING:  # the service pulls in the optimizers (torch): not needed to render, nor for `advisor --help`
    from advisor.service.service import IndexTuneResult, Observation, TuneResult


def _short(sql: str, n: int = 70) -> str:
    one = " ".join(sql.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def observation(console: Console, obs: Observation, top: int = 10) -> None:
    s = obs.snapshot
    console.print(f"[bold]{s.database}[/] on PostgreSQL {s.server_version}: {len(s.tables)} tables, "
                  f"{len(s.indexes)} indexes, {s.metrics.get('database_bytes', 0) / 1024**2:.1f} MB")
    w = obs.workload
    console.print(f"workload: {len(w.statements)} statements, {w.total_calls} calls, {w.total_ms / 1000:.2f} s "
                  f"total, kind [bold]{obs.workload_kind}[/], writes {w.write_share():.0%}")
    table = Table("calls", "total ms", "mean ms", "statement", title=f"top {top} statements by total time")
    for st in w.statements[:top]:
        table.add_row(str(st.calls), f"{st.total_ms:.1f}", f"{st.mean_ms:.2f}", _short(st.sql))
    console.print(table)


def recommendation(console: Console, rec: Recommendation, reasons: dict[str, str] | None = None) -> None:
    reasons = reasons or {}
    console.print(f"\n[bold]Recommendation {rec.id}[/] ({rec.kind}, by {rec.optimizer}): state [bold]{rec.state}[/]")
    table = Table("change", "reason")
    for c in rec.changes:
        label = f"{c.name} = {c.value}" if isinstance(c, KnobChange) else f"index on {c.table} ({', '.join(c.columns)})"
        table.add_row(label, reasons.get(getattr(c, "name", ""), ""))
    console.print(table)
    ev = rec.evidence
    if ev is not None:
        lo, hi = ev.gain_ci
        console.print(f"measured on a shadow: gain [bold]{ev.gain:+.1%}[/] (95% CI {lo:+.1%} .. {hi:+.1%}) over "
                      f"{ev.rounds} interleaved rounds; workload time per round, median: "
                      f"baseline {sorted(ev.baseline_totals_ms)[len(ev.baseline_totals_ms) // 2]:.0f} ms, "
                      f"candidate {sorted(ev.candidate_totals_ms)[len(ev.candidate_totals_ms) // 2]:.0f} ms")
        if ev.regressions:
            reg = Table("baseline ms", "candidate ms", "ratio", "statement", title="statements that regressed")
            for s in ev.regressions:
                reg.add_row(f"{s.baseline_ms:.1f}", f"{s.candidate_ms:.1f}", f"{s.ratio:.2f}", _short(s.sql))
            console.print(reg)
    console.print("[bold]to apply[/] (after approval):" + (" then restart the server" if rec.needs_restart else ""))
    for line in rec.apply_sql:
        console.print(f"  {line};", markup=False)
    console.print("[bold]to revert[/]:" + (" then restart the server" if rec.needs_restart else ""))
    for line in rec.revert_sql:
        console.print(f"  {line};", markup=False)


def trials(console: Console, result: TuneResult) -> None:
    if not result.trials:
        return
    table = Table("#", "source", "objective", "best so far", "status", title=f"tuning run {result.run_id}")
    best = float("inf")
    for t in result.trials:
        obj = t.result.objective
        if obj is not None and t.result.status == "measured":
            best = min(best, obj)
        table.add_row(str(t.number + 1), t.source, f"{obj:,.1f}" if obj is not None else "-",
                      f"{best:,.1f}" if best < float("inf") else "-",
                      t.result.status if t.result.status == "measured" else f"{t.result.status}: {_short(t.result.reason, 50)}")
    console.print(table)
    for f in result.findings:
        console.print(f"[bold]finding[/]: {f}")


def tune_result(console: Console, result: TuneResult) -> None:
    trials(console, result)
    if result.recommendation is None:
        console.print(result.message or "nothing to recommend")
        return
    recommendation(console, result.recommendation, result.reasons)
    if result.message:
        console.print(f"verdict: {result.message}")
    for sql, why in result.skipped:
        console.print(f"[yellow]not replayed[/]: {_short(sql)} ({why})")


def _mb(n) -> str:
    return "-" if n is None else f"{n / 1024**2:.1f}"


def index_result(console: Console, result: IndexTuneResult) -> None:
    w = result.whatif
    console.print(f"what-if: relative cost [bold]{w.get('relative_cost', 1.0):.3f}[/] of the current indexes' cost, "
                  f"{w.get('estimated_bytes', 0) / 1024**2:.1f} of {w.get('budget_bytes', 0) / 1024**2:.1f} MB, "
                  f"{w.get('candidates', 0)} candidates, {w.get('whatif_calls', 0)} what-if calls "
                  f"({w.get('cache_hits', 0)} cache hits), selection {w.get('selection_s', 0):.2f}s")
    if result.training:
        t = result.training
        console.print(f"IA2 model: {'reused' if t.get('reused') else 'trained'} ({t.get('episodes')} episodes, "
                      f"{t.get('seconds', 0):.0f}s on {t.get('device')})")
    rec = result.recommendation
    if rec is None:
        console.print(result.message or "no index to recommend")
        return
    table = Table("index", "columns", "estimated MB", "built MB", "statements", "verdict")
    for ix in rec.details.get("indexes", []):
        table.add_row(ix["index"], f"{ix['table']} ({', '.join(ix['columns'])})", _mb(ix["estimated_bytes"]),
                      _mb(ix["built_bytes"]), ", ".join(ix["statements"][:4]),
                      ("kept" if ix["kept"] else "dropped: ") + ("" if ix["kept"] else ix["reason"])
                      if ix["kept"] is not None else ix["reason"])
    console.print(table)
    recommendation(console, rec)
    console.print(f"verdict: {result.message}")
    for name in rec.details.get("unused_existing_indexes", []):
        console.print(f"[yellow]existing index never used by the workload[/]: {name}")


def _cost(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def index_explain(console: Console, rows: list[dict]) -> None:
    """The explanation table of an index run: one block per observed statement (``advisor.tuning.indexes.explain``):
    how it was bound, its what-if cost without new indexes and with the chosen set, and per candidate its cost
    alone, its fate and why."""
    if not rows:
        console.print("no statement to explain")
        return
    console.print(f"\n[bold]Why, per statement[/] ({len(rows)} observed statements)")
    for row in rows:
        head = Table.grid(padding=(0, 1))
        head.add_row("[bold]statement[/]", escape(f"{row['queryid']} ({row['status']})"))
        head.add_row("normalized", escape(_short(row["statement"] or "", 110)))
        if row.get("sql"):
            params = ", ".join(f"{k} = {v}" for k, v in row["params"].items()) or "none"
            head.add_row("bound", escape(_short(row["sql"], 110)))
            head.add_row("constants", escape(f"{_short(params, 110)} (from {row['source']}"
                                             + (f", {row['samples']} more samples)" if row.get("samples") else ")")))
        if row.get("cost_without") is not None:
            head.add_row("what-if cost", f"{_cost(row['cost_without'])} without new indexes, "
                                         f"{_cost(row['cost_chosen'])} with the chosen set (per call)")
        head.add_row("why", escape(row["why"]))
        if row.get("fallback"):
            head.add_row("fallback", escape(row["fallback"]))
        console.print(head)
        if row["candidates"]:
            table = Table("candidate", "MB", "cost with it alone", "gain", "fate", "reason")
            for c in row["candidates"]:
                table.add_row(escape(c["index"]), _mb(c["bytes"]), _cost(c["cost_with"]), f"{c['gain']:+.1%}",
                              c["fate"], escape(c["reason"]))
            console.print(table)
        if row.get("more_candidates"):
            console.print(f"  and {row['more_candidates']} more candidate(s) not costed here")


def recommendations(console: Console, recs: list[Recommendation]) -> None:
    table = Table("id", "kind", "optimizer", "state", "changes", "gain", "95% CI")
    for r in recs:
        ev = r.evidence
        table.add_row(r.id, r.kind, r.optimizer, r.state, str(len(r.changes)),
                      f"{ev.gain:+.1%}" if ev else "-", f"{ev.gain_ci[0]:+.1%} .. {ev.gain_ci[1]:+.1%}" if ev else "-")
    console.print(table)


def recommendation_page(console: Console, rec: Recommendation, history: list[dict], explain: bool = False) -> None:
    """``recommendations show``: the recommendation, its per-statement evidence, index details and history; with
    ``explain``, an index recommendation's explanation table."""
    recommendation(console, rec)
    ev = rec.evidence
    if ev is not None:
        table = Table("calls", "baseline ms", "candidate ms", "ratio", "95% CI", "regressed", "statement",
                      title="per statement (medians over rounds)")
        for s in ev.statements:
            table.add_row(f"{s.weight:.0f}", f"{s.baseline_ms:.2f}", f"{s.candidate_ms:.2f}", f"{s.ratio:.2f}",
                          f"{s.ratio_ci[0]:.2f} .. {s.ratio_ci[1]:.2f}", "yes" if s.regressed else "",
                          _short(s.sql, 60))
        console.print(table)
    for ix in rec.details.get("indexes", []):
        console.print(f"index {ix['index']}: estimated {_mb(ix['estimated_bytes'])}, built {_mb(ix['built_bytes'])}, "
                      f"{'kept' if ix['kept'] else 'dropped'} ({ix['reason']})", markup=False)
    if rec.details.get("fallback"):
        f = rec.details["fallback"]
        console.print(f"fallback: {f['from']}'s set was worse in what-if cost than {f['to']}'s; {f['to']}'s set is "
                      f"recommended (costs: " + ", ".join(f"{k} {v:,.1f}" for k, v in f["costs"].items()) + ")",
                      markup=False)
    if explain:
        if rec.details.get("explain"):
            index_explain(console, rec.details["explain"])
        else:
            console.print("this recommendation has no per-statement explanation (made before it was recorded, or "
                          "not an index recommendation)")
    if rec.applied:
        console.print(f"applied by {rec.applied['by']}; revert recorded: {'; '.join(rec.applied['revert_sql'])}",
                      markup=False)
    table = Table("when (UTC)", "who", "what", "note", title="history")
    for h in history:
        table.add_row(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(h["at"])), h["actor"], h["action"],
                      str(h["detail"].get("note", "")))
    console.print(table)
