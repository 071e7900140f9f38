"""Human-readable rendering of results for the CLI (rich). JSON output goes through ``codec`` instead."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from advisor.cli.closing import closing
from advisor.core import report as rp
from advisor.core.domain import DropIndexChange, IndexChange, KnobChange, QueryRewrite, Recommendation, state_word
from advisor.core.wording import ratio
from advisor.service.runs import kinds
from advisor.service.summary import author, held_back, observed, slowdown, summarize
from advisor.core.sqltext import one_line, shorten

if TYPE_CHECKING:  # the service pulls in the optimizers (torch): not needed to render, nor for `advisor --help`
    from advisor.service.service import Observation


TONES = {"good": "green", "bad": "red", "neutral": "default"}  # a summary's tone as rich colours


def observation(console: Console, obs: Observation, top: int = 10) -> None:
    s = obs.snapshot
    console.print(f"[bold]{s.database}[/] on {escape(s.server or s.server_version)}: {len(s.tables)} tables, "
                  f"{len(s.indexes)} indexes, {s.metrics.get('database_bytes', 0) / 1024**2:.1f} MB")
    w = obs.workload
    console.print(f"workload of {escape(observed(obs.snapshot_id, s.taken_at, w.total_calls, w.total_ms))}: "
                  f"{len(w.statements)} statements, kind [bold]{obs.workload_kind}[/], writes {w.write_share():.0%}")
    if not w.statements:
        console.print("no statement of the workload ran since the statement statistics began (or were last reset): "
                      "run the application's workload, then observe again", markup=False)
        return
    table = Table("calls", "total ms", "mean ms", "statement", title=f"top {top} statements by total time")
    for st in w.statements[:top]:
        table.add_row(str(st.calls), f"{st.total_ms:.1f}", f"{st.mean_ms:.2f}", escape(shorten(st.sql)))
    console.print(table)
    for st in (st for st in w.statements if st.merged):
        console.print(f"one statement, {1 + len(st.merged)} statement-statistics entries (ids {st.queryid}, "
                      f"{', '.join(st.merged)}: its parameters were bound as different types), counted together: "
                      f"{shorten(st.sql, 60)}", markup=False)


def change_label(c) -> str:
    """One change as a DBA reads it."""
    if isinstance(c, KnobChange):
        return f"{c.name} = {c.value}"
    if isinstance(c, IndexChange):
        return f"index on {c.label()}"
    if isinstance(c, DropIndexChange):
        return f"drop index {c.name} on {c.table}"
    if isinstance(c, QueryRewrite):
        return f"rewrite of `{shorten(c.original, 40)}`: {shorten(c.rewritten, 60)}"
    return str(c)


def knob_label(rec: Recommendation, c) -> str | None:
    """``work_mem: 4MB -> 64MB (71% of the gain)`` for a knob change whose recommendation recorded its current
    value (``details["knob_shares"]``); None otherwise."""
    row = next((k for k in (rec.details or {}).get("knob_shares", ()) if k.get("knob") == getattr(c, "name", None)),
               None)
    if not isinstance(c, KnobChange) or row is None:
        return None
    share = row.get("share")
    return (f"{c.name}: {row['current']} -> {row['proposed']}" + (" (needs a restart)" if row.get("restart") else "")
            + (f" ({share:.0%} of the gain)" if isinstance(share, float) and share == share else ""))


def recommendation(console: Console, rec: Recommendation, reasons: dict[str, str] | None = None,
                   predicted: float | None = None) -> None:
    """A recommendation: its changes, its headline numbers (``advisor.service.summary``: the same as the REST
    API's and the web page's), evidence and the SQL to apply and revert; a rejected one shows what was tried
    instead of SQL (there is nothing to apply), and every one lists what was not recommended and why.
    ``predicted``: the optimizer's predicted gain, shown as an estimate beside a measurement that stands."""
    reasons = reasons or {}
    head = summarize(rec, predicted)
    console.print(f"\n[bold]Recommendation {rec.id}[/] ({rec.kind}, {escape(head.author)}): state "
                  f"[bold]{state_word(rec.state)}[/]")
    rejected = rec.state == "rejected"
    if rejected:
        console.print("[bold]what was tried[/] (rejected: nothing to apply)")
    why = [reasons.get(getattr(c, "name", ""), "") for c in rec.changes]
    table = Table("change", *(["reason"] if any(why) else []))
    for c, reason in zip(rec.changes, why):
        table.add_row(escape(knob_label(rec, c) or change_label(c)), *([reason] if any(why) else []))
    console.print(table)
    ev = rec.evidence
    figures = head.figures
    console.print(f"[{TONES[head.tone]}]{escape(figures['line'])}[/]" if ev is not None else escape(figures["line"]))
    if head.predicted_gain is not None and ev is not None and not rejected:
        console.print(f"predicted before measuring: {figures['predicted']} ({head.predicted_basis})", markup=False)
    if head.helped:
        console.print("measured faster: " + ", ".join(f"{escape(shorten(m.sql or m.queryid, 40))} ({ratio(m.ratio)})"
                                                      for m in head.helped[:5])
                      + (f" and {len(head.helped) - 5} more" if len(head.helped) > 5 else ""))
    if ev is not None:
        for title, rows in (("statements that regressed", ev.regressions),
                            ("rare statements slower (too small a part of the workload to block)", ev.rare_slower)):
            if rows:
                reg = Table("baseline ms", "candidate ms", "ratio", "share of time", "statement", title=title)
                for s in rows:
                    reg.add_row(f"{s.baseline_ms:.1f}", f"{s.candidate_ms:.1f}", ratio(s.ratio), _share(s),
                                escape(shorten(s.sql)))
                console.print(reg)
    again = (rec.details or {}).get("bundle")
    if again:
        held = again.get("held")
        gain, (lo, hi) = again.get("atop_gain", again["alone_gain"]), again.get("atop_ci", again["alone_ci"])
        console.print(f"re-measured on a freshly built shadow (with the changes validated before it in the run): "
                      f"{gain:+.1%} ({lo:+.1%} .. {hi:+.1%})"
                      + (f", {held:.0%} of the validated gain held" if held is not None else ""))
    if (rec.details or {}).get("bundle_verdict"):
        console.print(f"measured with the run's other changes: {rec.details['bundle_verdict']}", markup=False)
    dropped(console, (rec.details or {}).get("dropped") or [])
    if rejected:
        if head.why_rejected:
            console.print(f"rejected: {head.why_rejected}", markup=False)
        return
    if not rec.apply_sql:  # handed over (a rewrite): nothing runs on the database
        return
    console.print("[bold]to apply[/] (after approval):" + (" then restart the server" if rec.needs_restart else ""))
    for line in rec.apply_sql:
        console.print(f"  {line};", markup=False)
    console.print("[bold]to revert[/]:" + (" then restart the server" if rec.needs_restart else ""))
    for line in rec.revert_sql:
        console.print(f"  {line};", markup=False)


def _share(s) -> str:
    return "-" if s.time_share is None else f"{s.time_share:.1%}"


def recommendations(console: Console, recs: list[Recommendation]) -> None:
    """The list: each recommendation's verdict and measured gain (``advisor.service.summary``); a gain is green
    only for one that stands, never for a rejected one."""
    if not recs:
        console.print("no recommendations")
        return
    for r in recs:  # a block each, its id first and whole: nothing cut at any width
        head = summarize(r)
        f = head.figures
        console.print(f"{r.id}  {escape(r.kind)}, {escape(author(r))}: [bold]{state_word(r.state)}[/], "
                      f"{len(r.changes)} change(s)", highlight=False)
        verdict = "" if head.verdict == state_word(r.state) else f", {head.verdict}"
        measured = (f"measured gain [{TONES[head.tone]}]{f['gain']}[/] (95% CI {f['gain_ci']}){verdict}"
                    if head.gain is not None else escape(f["line"]))
        console.print(f"  {measured}", highlight=False)  # colour says only the gain's tone
        if r.state == "rejected":
            console.print(f"  why: {escape(held_back(r))}", highlight=False)


def recommendation_page(console: Console, rec: Recommendation, history: list[dict], explain: bool = False,
                        predicted: float | None = None, full: bool = False) -> None:
    """``recommendations show``: the recommendation, its per-statement evidence, index details and history; with
    ``explain``, an index recommendation's explanation table; with ``full``, each statement's whole SQL."""
    recommendation(console, rec, predicted=predicted)
    ev = rec.evidence
    head = summarize(rec, predicted)
    symbol = head.symbol
    if ev is not None:
        if head.observed:
            console.print(f"calls from the {head.observed}", markup=False)
        table = Table("calls", "share of time", "baseline ms", "candidate ms", "ratio", "95% CI", "regressed",
                      "statement", title="per statement (medians over rounds)")
        for s in ev.statements:
            table.add_row(f"{s.weight:.0f}", _share(s), f"{s.baseline_ms:.2f}", f"{s.candidate_ms:.2f}",
                          ratio(s.ratio), f"{ratio(s.ratio_ci[0], times='')} .. {ratio(s.ratio_ci[1], times='')}" if not s.same_plan
                          else "same plan, timed once",
                          escape(slowdown(ev, s, symbol)),
                          escape(shorten(s.sql, 60)))
        console.print(table)
        if ev.measured:
            console.print(f"measured: {escape(ev.measured)}")
        if full:  # each on its own lines, never cut or wrapped by the table
            for i, s in enumerate(ev.statements):
                console.print(f"statement {i + 1} of the table (queryid {s.queryid}):\n  {one_line(s.sql)}",
                              markup=False, soft_wrap=True)
    for ix, sz in zip(rec.details.get("indexes", []), head.sizes):
        console.print(f"index {sz.index}: estimated {sz.estimated} (what-if), built {sz.built} (on the shadow), "
                      f"{'kept' if ix['kept'] else 'dropped'} ({ix['reason']})", markup=False)
    if head.fallback:
        console.print(f"fallback: {head.fallback}", markup=False)
    if explain:
        why = kinds.get(rec.kind).explain if rec.kind in kinds.names() else None
        if why is not None and rec.details.get("explain"):
            report(console, why(rec.details["explain"]))
        else:
            console.print("this recommendation has no per-statement explanation (made before it was recorded, or "
                          "not an index recommendation)")
    if rec.applied:
        console.print(f"applied by {rec.applied['by']}; revert recorded: {'; '.join(rec.applied['revert_sql'])}",
                      markup=False)
        watch_line(console, rec)
    table = Table("when (UTC)", "who", "what", "note", title="history")
    for h in history:
        table.add_row(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(h["at"])), h["actor"], state_word(h["action"]),
                      str(h["detail"].get("note", "")))
    console.print(table)


def watch_line(console: Console, rec: Recommendation) -> None:
    """The watch after the apply, in one line (``advisor.service.watch``)."""
    from advisor.service.watch import watch_of

    w = watch_of(rec)
    if w is None:
        console.print("not watched (applied before applies were watched)")
        return
    last = w.get("last") or {}
    figures = (f"; last check: {last['statements']} statement(s) judged, {ratio(last['ratio'])} their time before"
               if last.get("ratio") is not None else "; no watched statement judged yet" if w["state"] == "watching"
               else "")
    ends = time.strftime("%Y-%m-%d %H:%M", time.gmtime(w["ends_at"]))
    console.print(f"watch: {state_word(w['state'])} (window ends {ends} UTC, rolled back above {w['max_regression']:+.0%})"
                  f"{figures}" + (f"; {w['note']}" if w.get("note") else ""), markup=False)


def watches(console: Console, rows: list[dict]) -> None:
    """``recommendations watch``: one row per watch checked."""
    if not rows:
        console.print("no applied recommendation is under watch")
        return
    table = Table(title="watched applies")
    for name in ("recommendation", "kind", "state", "ratio", "judged", "window ends (UTC)"):
        table.add_column(name, no_wrap=True)
    table.add_column("note")
    for r in rows:
        table.add_row(r["id"], r["kind"], state_word(r["state"]), ratio(r["ratio"]),
                      str(r["statements"]), time.strftime("%Y-%m-%d %H:%M", time.gmtime(r["ends_at"])),
                      escape(shorten(r["note"] or "", 60)))
    console.print(table)


def dropped(console: Console, rows: list[dict]) -> None:
    """The "not recommended" table: each candidate tried and left out, and why (``advisor.tuning.recommend``)."""
    report(console, rp.Report(rp.dropped(rows)))


def report(console: Console, rep: rp.Report, *, result=None, demo: bool = False) -> None:
    """Draw what a kind's face says a result shows (``advisor.core.report``): lines, tables, name: value blocks,
    each recommendation (``recommendation``, as the run left it) and the last
    screen of a whole run (``closing``, of ``result``; ``demo``: the demo's servers are stopped by then)."""
    for block in rep.blocks:
        if isinstance(block, rp.Text):
            head = f"[{'yellow' if block.warn else 'bold'}]{escape(block.label)}[/]: " if block.label else ""
            text = f"[bold]{escape(block.text)}[/]" if block.strong and not head else escape(block.text)
            console.print(("\n" if block.strong else "") + head + text, highlight=False)
        elif isinstance(block, rp.Table):
            table = Table(*block.columns, title=block.title or None)
            for row in block.rows:
                table.add_row(*(escape(cell) for cell in row))
            console.print(table)
        elif isinstance(block, rp.Fields):
            grid = Table.grid(padding=(0, 1))
            for name, value in block.pairs:
                grid.add_row(f"[bold]{escape(name)}[/]", escape(value))
            console.print(grid)
        elif isinstance(block, rp.Recommendation):
            recommendation(console, block.rec, block.reasons or None)
        elif isinstance(block, rp.Closing) and result is not None:
            closing(console, result, demo=demo)
