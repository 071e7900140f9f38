"""Why, per statement: the explanation table of an index run (``advisor tune indexes --explain``, the JSON output,
the recommendation's ``details["explain"]`` and its web page).

One row per observed statement, including those that could not be bound, parsed, or were not among the heaviest:
its bound SQL and parameters (and where the constants came from), the candidates relevant to it with the
statement's what-if cost without and with each one alone, its cost under the chosen set, and each candidate's
fate: chosen, kept or dropped in validation (the verdict's reason), or not chosen and why. A statement for which
nothing was chosen says why, so a run never ends in a silent "nothing worth it".

Costs are per call, in planner cost units, from the problem's what-if coster (cached: the optimizers already
costed most single candidates). At most ``max_candidates`` candidates per statement are costed here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from advisor.core.domain import IndexChange
from advisor.core.sqltext import named
from advisor.tuning.recommend import Dropped
from optimizers.indexes.problem import IndexProblem, Query, relevant
from workloads.statements.binding import BoundStatement

MAX_CANDIDATES = 8  # candidates costed per statement (chosen ones first, then the narrowest)
MIN_GAIN = 0.01  # a candidate saving less than this share of the statement's cost is "below threshold"
MAX_NOT_CHOSEN = 15  # candidates of the selection listed as not recommended (each statement's best one)
_PARAM = re.compile(r"\$(\d+)")

Name = Callable[[IndexChange], str]


def _default_name(ix: IndexChange) -> str:
    return f"{ix.table}({', '.join(ix.columns)})"


def params_of(normalized: str, bound: str) -> dict[str, str]:
    """The constants that replaced ``$1, $2 ...`` in ``normalized`` to give ``bound`` ({} when they cannot be
    told apart)."""
    pieces = _PARAM.split(normalized)
    if len(pieces) == 1:
        return {}
    pattern, names = "", []
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            pattern += re.escape(piece)
        elif piece in names:
            pattern += f"(?P=p{piece})"
        else:
            names.append(piece)
            pattern += f"(?P<p{piece}>.+?)"
    m = re.fullmatch(pattern, bound, re.DOTALL)
    return {f"${n}": m.group(f"p{n}") for n in names} if m else {}


def explain(problem: IndexProblem, bound: Sequence[BoundStatement], chosen: Iterable[IndexChange], *,
            not_bound: Sequence[tuple[str, str, str]] = (), not_parsed: Sequence[tuple[str, str]] = (),
            left_out: Sequence[tuple[str, str]] = (), name: Name = _default_name,
            max_candidates: int = MAX_CANDIDATES, chooser: str = "the optimizer") -> list[dict]:
    """The rows (see the module docstring). ``not_bound``: (queryid, normalized SQL, why) of statements that could
    not be bound; ``not_parsed``: (queryid, why) of bound statements left out of the problem; ``left_out``:
    (queryid, normalized SQL) of statements beyond the heaviest ones. Must run while the what-if session is open."""
    chosen = tuple(chosen)
    by_id = {q.queryid: q for q in problem.queries}
    why_parsed = dict(not_parsed)
    rows: list[dict] = []
    for st in bound:
        row = {"queryid": st.queryid, "statement": st.normalized, "sql": st.sql, "source": st.source,
               "params": params_of(st.normalized, st.sql), "samples": len(st.samples), "weight": st.weight,
               "candidates": [], "more_candidates": 0}
        q = by_id.get(st.queryid)
        if q is None:
            rows.append({**row, "status": "not parsed",
                         "why": f"left out of index selection: {why_parsed.get(st.queryid, 'not parsed')}"})
            continue
        rows.append({**row, **_costed(problem, q, chosen, name, max_candidates, chooser)})
    for qid, normalized, why in not_bound:
        rows.append({"queryid": qid, "statement": normalized, "sql": None, "source": None, "params": {},
                     "samples": 0, "weight": None, "candidates": [], "more_candidates": 0, "status": "not bound",
                     "why": f"could not be bound to constants, so it was not costed: {why}"})
    for qid, normalized in left_out:
        rows.append({"queryid": qid, "statement": normalized, "sql": None, "source": None, "params": {},
                     "samples": 0, "weight": None, "candidates": [], "more_candidates": 0, "status": "left out",
                     "why": "not among the heaviest statements by total time (raise max_statements to include it)"})
    return rows


def _costed(problem: IndexProblem, q: Query, chosen: tuple[IndexChange, ...], name: Name, limit: int,
            chooser: str) -> dict:
    w = problem.whatif
    mine = relevant(q, chosen)
    without = w.cost(q, frozenset()).total
    with_chosen = w.cost(q, mine).total
    cands = [c for c in problem.candidates if q.queryid in c.queries and c.table in q.tables]
    cands.sort(key=lambda c: (c.index not in mine, c.width, c.index.table, c.index.columns))
    shown, more = cands[:limit], max(0, len(cands) - limit)
    used = problem.size(chosen)
    out = []
    for c in shown:
        ix = c.index
        alone = w.cost(q, frozenset({ix})).total
        size = w.size(ix)
        entry = {"index": name(ix), "label": ix.label(), "table": f"{ix.schema}.{ix.table}",
                 "columns": list(ix.columns),
                 "bytes": size, "cost_with": alone, "gain": (without - alone) / without if without > 0 else 0.0}
        if ix in mine:
            entry.update(fate="chosen", reason=f"chosen by {chooser}")
        else:
            entry.update(fate="not chosen", reason=_why_not(problem, q, ix, mine, chosen, without, alone, size,
                                                            used, name))
        out.append(entry)
    if not cands:
        why = _no_candidate(problem, q)
    elif with_chosen < without:
        helping = [e["index"] for e in out if e["fate"] == "chosen" and e["cost_with"] < without]
        why = (f"the chosen set takes its what-if cost from {without:,.1f} to {with_chosen:,.1f} per call "
               f"({_pct(without, with_chosen)})" + (f", through {', '.join(helping)}" if helping else ""))
    else:
        best = min([e for e in out if e["fate"] != "chosen"] or out, key=lambda e: e["cost_with"])
        why = (f"no index chosen for it; its best candidate {best['index']} would take its cost from "
               f"{without:,.1f} to {best['cost_with']:,.1f} ({_pct(without, best['cost_with'])}): {best['reason']}")
    return {"status": "costed", "why": why, "cost_without": without, "cost_chosen": with_chosen,
            "candidates": out, "more_candidates": more}


def _why_not(problem: IndexProblem, q: Query, ix: IndexChange, mine, chosen, without: float, alone: float,
             size: int, used: int, name: Name) -> str:
    budget = problem.budget_bytes
    gain = without - alone
    if gain <= 0:
        return "no what-if benefit: the planner would not use it for this statement"
    if gain < MIN_GAIN * without:
        return f"benefit below threshold: saves {gain / without:.2%} of the statement's cost (< {MIN_GAIN:.0%})"
    for other in mine:
        if other.table == ix.table and other.columns[:len(ix.columns)] == ix.columns:
            return f"another candidate of the same table covers it: {name(other)} (it is a prefix of it)"
    same = [o for o in mine if (o.schema, o.table) == (ix.schema, ix.table)]
    if same and problem.whatif.cost(q, relevant(q, chosen)).total <= alone:
        return f"another candidate of the same table gave more: {', '.join(map(name, same))}"
    if size > budget:
        return f"over budget: {_mb(size)} alone, the budget is {_mb(budget)}"
    if used + size > budget:
        return f"over budget: {_mb(size)} does not fit beside the chosen {_mb(used)} of {_mb(budget)}"
    upkeep = problem.upkeep.get((ix.schema, ix.table), 0.0)
    if upkeep and q.weight * gain <= upkeep:
        return (f"its maintenance on a written table ({upkeep:,.0f} cost units) outweighs its benefit "
                f"({q.weight * gain:,.0f})")
    return "lost in selection: other indexes gave the workload more benefit within the budget"


def _no_candidate(problem: IndexProblem, q: Query) -> str:
    """Why a statement got no candidate, column by column: its table is too small to index (with its rows), or an
    existing index already leads with the column (named).

    >>> from optimizers.indexes.problem import ColumnUse
    >>> p = IndexProblem((), (), 0, None, (("q", ColumnUse(("public", "t"), "id", "equality")),
    ...                  ("q", ColumnUse(("public", "k"), "v", "join"))), small=((("public", "k"), 12.0),),
    ...                  existing=((("public", "t"), ("id",), "t_pkey"),))
    >>> _no_candidate(p, Query("q", "", 1.0, frozenset()))
    'no candidate index: t.id already leads the existing index t_pkey; k is a small table (12 rows, under the 1,000 a candidate needs)'
    """
    uses = [u for qid, u in problem.uses if qid == q.queryid]
    if not uses:
        return "no candidate index: it compares, joins, groups or orders by no column an index could serve"
    small, led, why = dict(problem.small), {}, []
    for table, columns, name in problem.existing:
        led.setdefault((table, columns[0]), name)
    for u in uses:
        if u.table in small:
            line = f"{u.table[1]} is a small table ({small[u.table]:,.0f} rows, under the 1,000 a candidate needs)"
        elif (u.table, u.column) in led:
            line = f"{u.table[1]}.{u.column} already leads the existing index {led[(u.table, u.column)]}"
        else:
            continue
        if line not in why:
            why.append(line)
    return "no candidate index: " + ("; ".join(why) if why else
                                     "no index on the columns it uses would be narrower than the ones there are")


def add_verdicts(rows: list[dict], verdicts: Iterable, name: Name = _default_name) -> list[dict]:
    """``rows`` with each chosen candidate's validation verdict (kept, or dropped and why), and each candidate
    validation tried in place of a dropped one (``index_repair``)."""
    by_name = {name(v.index): v for v in verdicts}
    for row in rows:
        for c in row["candidates"]:
            v = by_name.get(c["index"])
            if v is None or (c["fate"] != "chosen" and v.in_place_of is None):
                continue
            c["fate"] = "kept" if v.kept else "dropped in validation"
            c["reason"] = f"kept in validation: {v.reason}" if v.kept else f"dropped in validation: {v.reason}"
    return rows


def not_recommended(rows: Sequence[dict], verdicts: Iterable = (), drops: Iterable = (),
                    max_selection: int = MAX_NOT_CHOSEN) -> list[Dropped]:
    """What an index run tried and does not recommend, and why (``advisor.tuning.recommend.Dropped``): each index
    validation dropped (``verdicts``: ``IndexVerdict``; regressed which statement by how much, no measurable
    benefit, over the budget once built, no plan uses it), each existing index whose drop was refused (``drops``:
    ``DropVerdict``), then from the selection (``rows``, after ``add_verdicts``), per statement its best candidate
    not chosen with the reason (over budget, below threshold, another index covers it ...), at most
    ``max_selection`` of them, each index once."""
    out = [Dropped(v.index.label(), "index", f"dropped in validation: {v.reason}") for v in verdicts if not v.kept]
    out += [Dropped(f"drop index {v.drop.name}", "drop_index", f"the index stays: {v.reason}")
            for v in drops if not v.kept]
    seen = {d.change for d in out}
    picked = 0
    for row in rows:
        left = [c for c in row.get("candidates", ()) if c["fate"] == "not chosen"]
        if not left or picked >= max_selection:
            continue
        best = min(left, key=lambda c: c["cost_with"])
        label = best.get("label") or best["index"]
        if label in seen:
            continue
        seen.add(label)
        picked += 1
        alone = f", alone it would save {best['gain']:.0%} of its what-if cost" if best["gain"] > 0 else ""
        who = named(row.get("statement"), row["queryid"])
        out.append(Dropped(label, "index", f"not chosen ({who}{alone}): {best['reason']}"))
    return out


def note_fallback(rows: list[dict], fallback: dict) -> list[dict]:
    """``rows`` with the fallback (the optimizer's set replaced by a baseline's) said on every costed row."""
    costs = fallback.get("costs", {})
    line = (f"{fallback['from']}'s set (what-if cost {costs.get(fallback['from'], 0):,.1f}) was worse than "
            f"{fallback['to']}'s ({costs.get(fallback['to'], 0):,.1f}); {fallback['to']}'s set was taken in its "
            "place")
    for row in rows:
        if row["status"] == "costed":
            row["fallback"] = line
    return rows


def _pct(before: float, after: float) -> str:
    return f"{(after - before) / before:+.1%}" if before > 0 else "n/a"


def _mb(n: float) -> str:
    return f"{n / 1024 ** 2:.1f} MB"
