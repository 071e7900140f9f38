"""Statements are shown by their SQL, not by pg_stat_statements' queryid: on the recommendation page (the verdict,
the per-statement evidence, the statements an index serves, the table of why), shortened to a line with the whole
text a hover away, and in the CLI's ``recommendations show`` (whole with ``--full``)."""

from __future__ import annotations

import html
import re

from advisor.cli.main import main
from advisor.core.domain import Applied, IndexChange
from advisor.core.sqltext import shorten
from advisor.tuning.evidence import ArmRound, compare
from advisor.tuning.recommend import recommend, verdict_note
from tests.web.logins import log_in

QID = "-8950316177081021396"  # the hash a DBA does not know
SLOW = ("SELECT o.id, o.total, c.name, c.email FROM orders o JOIN customers c ON c.id = o.customer_id\n"
        "   WHERE o.created_at > $1 AND o.status = $2 ORDER BY o.created_at DESC LIMIT $3")
FAST = "SELECT total FROM orders WHERE id = $1"
INDEX = IndexChange("public", "orders", ("status",))


def _recommendation(store):
    """A rejected index recommendation, its verdict written by the note writer: ``SLOW`` regressed."""
    target_id = store.upsert_target("shop", "postgres", "host=127.0.0.1 dbname=shop")
    base = [ArmRound({QID: [10.0], "7": [1.0]}, {}) for _ in range(5)]
    cand = [ArmRound({QID: [14.0 + i * 0.1], "7": [0.5]}, {}) for i in range(5)]
    ev = compare(base, cand, {QID: 100, "7": 100}, {QID: SLOW, "7": FAST})
    assert ev.regressions and not ev.accepted
    details = {"indexes": [{"index": "orders_status_advisor_idx", "table": "public.orders", "columns": ["status"],
                            "estimated_bytes": 1 << 20, "built_bytes": 2 << 20, "statements": [QID, "7"],
                            "statements_sql": [SLOW, FAST], "helped": ["7"], "kept": False,
                            "reason": "regressed"}],
               "explain": [{"queryid": QID, "statement": SLOW, "sql": None, "source": None, "params": {},
                            "status": "costed", "why": "no index chosen for it", "candidates": []}]}
    plan = Applied((INDEX,), ('CREATE INDEX "orders_status_advisor_idx" ON orders (status)',),
                   ('DROP INDEX "orders_status_advisor_idx"',), False)
    return recommend(store, target_id=target_id, kind="indexes", optimizer="extend", plan=plan, evidence=ev,
                     accepted=False, why=verdict_note(ev), details=details)


def _visible(html: str) -> str:
    """The page's text, without its tags (and so without attributes such as title and data-queryid)."""
    return re.sub(r"<[^>]+>", " ", html)


def test_the_recommendation_page_names_statements_by_their_sql(app_client, tokens):
    client, service = app_client
    rec = _recommendation(service.store)
    assert f"regressed by more than 10%: {shorten(SLOW)}: 1.4" in rec.note and QID not in rec.note
    log_in(client, tokens["viewer"]["Authorization"].split()[1])
    page = client.get(f"/recommendations/{rec.id}").text
    text = _visible(page)
    assert QID not in text  # only in attributes: a hover, a data- key
    assert shorten(SLOW, 90) in text and FAST in text  # the regressed one in the evidence, FAST among the helped
    assert shorten(SLOW, 90).endswith("…") and shorten(SLOW, 120) not in text  # shortened, the rest on hover
    full = " ".join(SLOW.split())
    assert f'title="{html.escape(full)} (queryid {QID})"' in page  # the whole statement on hover


def test_the_cli_page_names_statements_by_their_sql_and_whole_with_full(app_client, capsys, monkeypatch, tmp_path):
    from advisor.storage.store import open_store

    monkeypatch.setenv("COLUMNS", "250")
    path = str(tmp_path / "s.duckdb")
    store = open_store(path)
    rec = _recommendation(store)
    store.close()
    assert main(["recommendations", "show", rec.id, "--store", path]) == 0
    out = capsys.readouterr().out
    assert QID not in out and shorten(SLOW, 60) in out and shorten(SLOW) in out
    assert "ORDER BY o.created_at DESC LIMIT $3" not in out
    assert main(["recommendations", "show", rec.id, "--store", path, "--full"]) == 0
    out = capsys.readouterr().out
    assert f"\n  {' '.join(SLOW.split())}\n" in out and f"(queryid {QID})" in out  # asked for: the whole of it
