"""What an index run shows a person and a program (the kind's faces, as data): ``report`` (the what-if line, the
model's line, the table of its indexes with their two sizes, its recommendation, the verdict), ``per_statement`` (why, per
observed statement), ``document`` (its JSON), ``page`` (what its web page, ``page.html``, draws besides a stored
recommendation's details); and each index's sizes as every face prints them (``index_sizes``: the
estimate the selection counted against the budget, and the size built on the shadow). Faces draw these
(``advisor.core.report``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.core import report as r
from advisor.core.domain import Recommendation
from advisor.core.sqltext import shorten
from advisor.core.wording import size

PAGE = Path(__file__).with_name("page.html")  # its web page (``Kind.page``): the macros of its slots

SIZE_LABELS = {"estimated": "estimated size (what-if, counted against the budget)",
               "built": "built size (on the shadow)"}


@dataclass(frozen=True)
class IndexSize:
    """An index's sizes as every face prints them (``size``): ``estimated`` (what-if, as the selection counted it
    against the budget) and ``built`` (on the shadow; ``-`` when it was not built)."""

    index: str
    estimated: str
    built: str


def index_sizes(rec: Recommendation) -> tuple[IndexSize, ...]:
    """Each index of an index recommendation (``details["indexes"]``) with its two sizes: the estimate the
    selection counted against the budget (``calibrated_bytes``; details from before it: ``estimated_bytes``) and
    the size built on the shadow.

    >>> from types import SimpleNamespace as R
    >>> index_sizes(R(details={"indexes": [{"index": "i", "estimated_bytes": 5221908, "calibrated_bytes": 1897000,
    ...                                     "built_bytes": 1892352}]}))
    (IndexSize(index='i', estimated='1.81 MB', built='1.80 MB'),)
    """
    rows = [ix for ix in (rec.details or {}).get("indexes") or () if isinstance(ix, dict)]
    return tuple(IndexSize(str(ix.get("index", "")), size(ix.get("calibrated_bytes", ix.get("estimated_bytes"))),
                           size(ix.get("built_bytes"))) for ix in rows)


def _statements(ix: dict) -> str:
    """The statements an index was measured to help (all it serves, for details from before ``helped``), by their
    SQL (by queryid where its details predate the SQL)."""
    sql = dict(zip(ix.get("statements") or [], ix.get("statements_sql") or []))
    ids = ix["helped"] if "helped" in ix else (ix.get("statements") or [] if ix.get("kept") else [])
    texts = [sql.get(q) or q for q in ids]
    return "; ".join(shorten(t, 40) for t in texts[:3]) + (f" and {len(texts) - 3} more" if len(texts) > 3 else "")


def report(result, explain: bool = False) -> r.Report:
    """An index run (``IndexTuneResult``): the what-if line, the model's, then its recommendation (each index with
    its sizes and verdict) or why there is none; with ``explain``, why, per statement (``per_statement``)."""
    shown = _report(result)
    return shown + per_statement(list(result.explain)) if explain else shown


def _report(result) -> r.Report:
    w = result.whatif
    blocks: list = [r.Text(f"what-if: relative cost {w.get('relative_cost', 1.0):.3f} of the current indexes' cost, "
                           f"estimated {size(w.get('estimated_bytes', 0))} of a {size(w.get('budget_bytes', 0))} "
                           f"budget, {w.get('candidates', 0)} candidates, {w.get('whatif_calls', 0)} what-if calls "
                           f"({w.get('cache_hits', 0)} cache hits), selection {w.get('selection_s', 0):.2f}s")]
    if result.training:
        t = result.training
        how = "reused" if t.get("reused") else "shipped, adapted" if t.get("started_from") else "trained"
        blocks.append(r.Text(f"IA2 model: {how} ({t.get('episodes')} episodes, {t.get('seconds', 0):.0f}s on "
                             f"{t.get('device')})"))
    rec = result.recommendation
    if rec is None:
        return r.Report((*blocks, r.Text(result.message or "no index to recommend"), *r.dropped(result.dropped)))
    rows = tuple((ix["index"], f"{ix['table']} ({', '.join(ix['columns'])})", sz.estimated, sz.built,
                  _statements(ix), ("kept" if ix["kept"] else "dropped: " + ix["reason"]) if ix["kept"] is not None
                  else ix["reason"])
                 for ix, sz in zip(rec.details.get("indexes", []), index_sizes(rec)))
    blocks += [r.Table(("index", "columns", "estimated (what-if)", "built (shadow)", "statements helped", "verdict"),
                       rows),
               r.Recommendation(rec), r.Text(f"verdict: {result.message}")]
    blocks += [r.Text(name, label="existing index never used by the workload",
                      warn=True)
               for name in rec.details.get("unused_existing_indexes", [])]
    return r.Report(tuple(blocks))


def _cost(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def per_statement(rows: list[dict]) -> r.Report:
    """Why, per observed statement (``advisor.tuning.indexes.explain``): how it was bound, its what-if cost
    without new indexes and with the chosen set, and per candidate its cost alone, its fate and why."""
    if not rows:
        return r.Report((r.Text("no statement to explain"),))
    blocks: list = [r.Text(f"Why, per statement ({len(rows)} observed statements)", strong=True)]
    for row in rows:
        pairs = [("statement", f"{shorten(row['statement'] or '', 110)} ({row['status']})"),
                 ("queryid", str(row["queryid"]))]
        if row.get("sql"):
            params = ", ".join(f"{k} = {v}" for k, v in row["params"].items()) or "none"
            pairs += [("bound", shorten(row["sql"], 110)),
                      ("constants", f"{shorten(params, 110)} (from {row['source']}"
                                    + (f", {row['samples']} more samples)" if row.get("samples") else ")"))]
        if row.get("cost_without") is not None:
            pairs.append(("what-if cost", f"{_cost(row['cost_without'])} without new indexes, "
                                          f"{_cost(row['cost_chosen'])} with the chosen set (per call)"))
        pairs.append(("why", row["why"]))
        if row.get("fallback"):
            pairs.append(("fallback", row["fallback"]))
        blocks.append(r.Fields(tuple(pairs)))
        if row["candidates"]:
            blocks.append(r.Table(("candidate", "size (what-if)", "cost with it alone", "gain", "fate", "reason"),
                                  tuple((c["index"], size(c["bytes"]), _cost(c["cost_with"]), f"{c['gain']:+.1%}",
                                         c["fate"], c["reason"]) for c in row["candidates"])))
        if row.get("more_candidates"):
            blocks.append(r.Text(f"  and {row['more_candidates']} more candidate(s) not costed here"))
    return r.Report(tuple(blocks))


def document(result) -> dict:
    """An index run's JSON (the CLI's ``--json``): its recommendation (a face expands it with its headline
    numbers), the optimizer's set, the what-if figures, the training, what was not parsed, the explanation, the
    fallback and what was dropped."""
    texts = {row["queryid"]: row["statement"] for row in result.explain}
    return {"recommendation": result.recommendation, "message": result.message,
            "chosen": [{"table": f"{ix.schema}.{ix.table}", "columns": list(ix.columns)} for ix in result.chosen],
            "whatif": result.whatif, "training": result.training,
            "not_parsed": [{"queryid": q, "sql": texts.get(q), "reason": why} for q, why in result.skipped],
            "explain": list(result.explain), "fallback": result.fallback, "dropped": list(result.dropped)}


def page(rec: Recommendation) -> dict:
    """What its page draws besides a recommendation's details: what each of an index's two sizes is."""
    return {"size_labels": SIZE_LABELS}
