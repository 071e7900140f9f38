"""The pages of query rewrites: the run and schedule forms offer kind "rewrites" with its fields; a rewrite run
started from the form ends in a recommendation whose page shows each statement as written and rewritten side by
side (a diff), the rules in order, the measured speedup with its interval, where equivalence was checked, the
planner's costs and the rejected candidates; it says the rewrite is never applied, and it has no apply button
(approve and reject only). Every piece of SQL on the page is escaped."""

from __future__ import annotations

import html
import re

from advisor.core.domain import QueryRewrite
from advisor.tuning.recommend import recommend
from tests.web.logins import log_in as log_in_form
from tests.web.test_api import wait_run
from tests.web.test_rewrite_runs import REWRITE_RUN, SLOW, reports  # noqa: F401  (reports: the fixture)
from web.pages.diff import side_by_side, tokens
from web.pages.formats import num, ratio, ratio_interval

EVIL = "<script>alert('owned')</script>"


def log_in(client, headers: dict) -> str:
    """Log the test client in with the token of ``headers``; the session's CSRF token."""
    token = headers["Authorization"].split()[1]
    assert log_in_form(client, token).status_code == 303
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/runs").text).group(1)


def register(client, op: dict, dsn: str) -> None:
    assert client.post("/api/targets", json={"name": "reports", "dsn": dsn}, headers=op).status_code == 201


def section(page: str, element_id: str) -> str:
    """The HTML of the element with ``element_id`` up to the end of its table (enough for the diff's table)."""
    start = page.index(f'id="{element_id}"')
    return page[start:page.index("</table>", start)]


def test_forms_offer_rewrite_runs(app_client, tokens, reports):
    client, service = app_client
    op = tokens["operator"]
    register(client, op, reports)
    csrf = log_in(client, op)
    for path in ("/runs", "/schedules"):
        page = client.get(path).text
        assert '<option value="rewrites">rewrites</option>' in page, path
        group = page[page.index('data-kind="rewrites"'):]
        group = group[:group.index("</optgroup>")]
        for name in ("aurora", "greedy", "random", "saturate"):  # the registry's rewrite optimizers
            assert f'<option value="{name}">' in group, (path, name)
        # the registry's kinds that take each option show it: max_statements for rewrites and whole runs
        assert re.search(r'data-for-kind="rewrites all"[^>]*>Statements\s*<input type="number" name="max_statements"',
                         page)
        assert re.search(r'<label title="[^"]*">Validate\s*<select name="validate"', page)  # every kind
        assert '"rewrites": "aurora"' in page  # the form's default optimizer per kind, for its script

    # a schedule of rewrite runs from the form (the fields of the other kinds are sent too, as without script)
    form = {"csrf": csrf, "target": "reports", "cron": "15 4 * * *", "kind": "rewrites", "optimizer": "saturate",
            "trials": "30", "budget_mb": "100", "max_statements": "7", "validate": "false", "rounds": "3"}
    r = client.post("/schedules", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    (schedule,) = service.schedules()
    (plan,) = schedule["plan"]["runs"]
    assert (plan["kind"], plan["optimizer"], plan["max_statements"], plan["validate"], plan["rounds"]) == \
        ("rewrites", "saturate", 7, False, 3)
    assert "budget_mb" not in plan  # an index run's field is not a rewrite run's: not stored
    assert "rewrites · saturate · up to 7 statements · 3 rounds · not timed" in client.get("/schedules").text
    # the list of recommendations filters on the kind
    page = client.get("/recommendations?kind=rewrites")
    assert page.status_code == 200 and '<option value="rewrites" selected>' in page.text


def test_a_rewrite_run_from_the_form_and_its_recommendation_page(app_client, tokens, reports):
    client, service = app_client
    op = tokens["operator"]
    register(client, op, reports)
    csrf = log_in(client, op)
    form = {"csrf": csrf, "target": "reports", "kind": "rewrites", "optimizer": REWRITE_RUN["optimizer"],
            "rounds": str(REWRITE_RUN["rounds"]), "max_statements": "5", "validate": "true", "trials": "30",
            "budget_mb": "100"}
    r = client.post("/runs", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    run_id = r.headers["location"].rsplit("/", 1)[1]
    plan = service.run(run_id)["options"]["plan"]
    assert (plan["kind"], plan["max_statements"], plan["validate"]) == ("rewrites", 5, True) and "budget_mb" not in plan
    done = wait_run(client, op, run_id, timeout_s=240)
    assert done["state"] == "done" and done["result"]["state"] == "validated", done
    assert "rewrites · greedy · up to 5 statements · 2 rounds" in client.get("/runs").text
    rec_id = done["result"]["recommendation"]
    rec = client.get(f"/api/recommendations/{rec_id}", headers=op).json()
    (st,) = [s for s in rec["details"]["statements"] if s["rewritten"]]

    page = client.get(f"/recommendations/{rec_id}").text
    assert "Query rewrite recommendation" in page
    # the statement as written and rewritten, side by side, the changes marked
    diff = section(page, "diff-1")
    assert "<th>As written</th><th>Rewritten</th>" in diff
    assert re.search(r"<del>[^<]*WHERE", diff) and re.search(r"<ins>[^<]*GROUP BY", diff)
    text = html.unescape(re.sub(r"<[^>]+>", "", diff))
    assert "c.score > (SELECT avg(o.amount)" in text and "AS dc1 ON dc1.k1 = c.id" in text
    assert "c.score &gt; " in diff and "c.score > " not in diff  # the SQL escaped
    # the rules in order, the speedup and its interval, the equivalence evidence, the planner's costs
    rules = section(page, "statement-1")
    positions = [rules.index(f"<code>{rule}</code>") for rule in st["rules"]]
    assert "decorrelate_scalar_aggregate" in st["rules"] and positions == sorted(positions)
    assert f"{ratio(st['speedup'])} faster" in page and ratio_interval(st["ci"]) in page
    for db in st["checked_on"]:
        assert f'<span class="tag">{db}</span>' in page
    assert f"{num(st['plan_cost'][0])} → {num(st['plan_cost'][1])}" in page
    # handed over, never applied: approve and reject, no apply; no SQL to apply or revert
    assert "Never applied to the database." in page and "Its lifecycle ends at" in page
    assert 'id="approve"' in page and 'id="reject"' in page
    assert 'id="apply"' not in page and "/apply" not in page and 'id="apply-sql"' not in page
    # the list shows it under its kind
    assert f'href="/recommendations/{rec_id}"' in client.get("/recommendations?kind=rewrites").text

    r = client.post(f"/recommendations/{rec_id}/approve", data={"csrf": csrf, "note": "sent to the team"},
                    follow_redirects=False)
    assert r.status_code == 303
    page = client.get(f"/recommendations/{rec_id}").text
    assert '<span class="badge s-approved" id="state">approved</span>' in page
    assert "Approved and handed over: the end of its lifecycle." in page
    assert 'id="apply"' not in page and 'id="rollback"' not in page and 'id="reject"' in page
    r = client.post(f"/recommendations/{rec_id}/apply", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 409 and "never applied to the database" in r.text  # a hand-made form is refused
    assert service.recommendation(rec_id).state == "approved"


def test_the_rewrite_page_escapes_sql_and_shows_statements_left_alone(app_client, tokens, reports):
    client, service = app_client
    register(client, tokens["operator"], reports)
    original = f"SELECT '{EVIL}' AS a FROM t WHERE x > 1"
    rewritten = f"SELECT '{EVIL}' AS a FROM t WHERE 1 < x"
    statements = [
        {"queryid": "101", "original": f"SELECT 1 /* {EVIL} */", "rewritten": None, "rules": [], "speedup": None,
         "ci": None, "equivalent": False, "reason": f"not equivalent: {EVIL}", "rewrite_ms": 3.0, "plan_cost": None,
         "checked_on": [], "rejected": [{"sql": f"SELECT 2 /* {EVIL} */", "why": f"other rows on nulls: {EVIL}"}]},
        {"queryid": "100", "original": original, "rewritten": rewritten, "rules": ["flip<b>", "swap"],
         "speedup": 2.5, "ci": [2.0, 3.1], "equivalent": True, "reason": "", "rewrite_ms": 12.3,
         "plan_cost": [100.0, 40.0], "checked_on": ["nulls", "<i>db</i>"],
         "rejected": [{"sql": f"SELECT {EVIL}", "why": f"invalid SQL: {EVIL}"}]},
    ]
    target_id = service.target("reports")["id"]
    rec = recommend(service.store, target_id=target_id, kind="rewrites", optimizer="greedy", plan=None,
                    changes=(QueryRewrite("100", original, rewritten, ("flip<b>", "swap")),), accepted=True,
                    details={"statements": statements, "note": "never applied"})
    log_in(client, tokens["viewer"])
    page = client.get(f"/recommendations/{rec.id}").text
    assert "<script>alert" not in page and "<b>" not in page and "<i>db" not in page
    assert page.count("&lt;script&gt;alert(") >= 7  # original, rewritten, rejected SQL and reasons
    assert "&lt;i&gt;db&lt;/i&gt;" in page and "<code>flip&lt;b&gt;</code>" in page
    # the rewritten statement first, with its diff; the one left alone with its reason and its rejected candidate
    assert page.index('id="statement-1" data-queryid="100"') < page.index('id="statement-2" data-queryid="101"')
    assert re.search(r"<del>[^<]*&gt; 1</del>", section(page, "diff-1"))
    alone = page[page.index('id="statement-2"'):]
    assert "Left as written:</strong> not equivalent: &lt;script&gt;" in alone
    assert "1 candidate rejected" in alone and "other rows on nulls: &lt;script&gt;" in alone
    assert "1 of 2" in page and "2.50× faster" in page and "[2.00, 3.10]" in page and "100.0 → 40.0" in page
    # a viewer: the note, no buttons
    assert "Never applied to the database." in page
    assert not re.search(r'id="(approve|apply|rollback|reject)"', page)


def test_side_by_side_diff():
    rewritten = ("SELECT c.id FROM c JOIN (SELECT o.cid AS k1, AVG(o.amount) AS v FROM o AS o GROUP BY o.cid) AS dc1 "
                 "ON dc1.k1 = c.id AND c.score > dc1.v")
    (row,) = side_by_side(SLOW, rewritten)
    assert row.op == "replace"
    assert "".join(t for _, t in row.left) == SLOW and "".join(t for _, t in row.right) == rewritten
    assert row.left[0] == ("same", "SELECT c.id FROM c ") and row.right[0] == ("same", "SELECT c.id FROM c ")
    assert any("WHERE" in t for k, t in row.left if k == "del") and any("GROUP BY" in t for k, t in row.right
                                                                          if k == "ins")
    assert {k for k, _ in row.left} <= {"same", "del"} and {k for k, _ in row.right} <= {"same", "ins"}
    # lines: equal ones paired, changed blocks diffed by tokens, a quoted string one token
    rows = side_by_side("SELECT a,\n  b\nFROM t\nWHERE s = 'x y'", "SELECT a,\n  b\nFROM t\nWHERE s = 'x z' AND b")
    assert [r.op for r in rows] == ["equal", "equal", "equal", "replace"]
    assert rows[3].left == (("same", "WHERE s = "), ("del", "'x y'"))
    assert rows[3].right == (("same", "WHERE s = "), ("ins", "'x z' AND b"))
    assert [r.op for r in side_by_side("SELECT 1", "SELECT 1\nUNION ALL SELECT 2")] == ["equal", "insert"]
    assert "".join(tokens("  select\n 'it''s' , \"A b\"")) == "  select\n 'it''s' , \"A b\""


def test_a_rewrite_run_with_nothing_to_rewrite_says_why_on_its_page(app_client, tokens, pg):
    """No recommendation: the run's page lists each statement with the reason it was left as written."""
    import uuid

    from tests.conftest import run

    client, _ = app_client
    op = tokens["operator"]
    dsn = pg.create_database("plain_" + uuid.uuid4().hex[:8])
    run(dsn, "CREATE TABLE t (id int PRIMARY KEY, v int)", "INSERT INTO t SELECT x, x FROM generate_series(1, 500) x",
        "ANALYZE", "SELECT pg_stat_statements_reset()", "SELECT id FROM t WHERE v > 10")
    register(client, op, dsn)
    r = client.post("/api/runs", json={"target": "reports", **REWRITE_RUN}, headers=op)
    done = wait_run(client, op, r.json()["id"], timeout_s=240)
    assert done["state"] == "done" and done["result"]["recommendation"] is None, done
    assert any("no rule applied" in row["reason"] for row in done["result"]["explain"])
    log_in(client, op)
    page = client.get(f"/runs/{done['id']}").text
    assert "Why, per statement" in page and "no rule applied" in page and "rewrites · greedy" in page


def test_the_run_and_schedule_forms_refuse_sql_the_target_refuses(app_client, tokens, reports):
    client, service = app_client
    op = tokens["operator"]
    register(client, op, reports)
    csrf = log_in(client, op)
    assert re.search(r'data-for-kind="rewrites"[^>]*>SQL\s*<textarea name="sql"', client.get("/runs").text)
    form = {"csrf": csrf, "target": "reports", "kind": "rewrites", "optimizer": "greedy",
            "sql": "SELECT c.id FROM c;\r\nSELECT c.id FROM c WHERE c.score >"}
    r = client.post("/runs", data=form, follow_redirects=False)
    assert r.status_code == 400 and "statement 2: syntax error at end of input (position 35)" in r.text
    r = client.post("/schedules", data={**form, "cron": "15 4 * * *"}, follow_redirects=False)
    assert r.status_code == 400 and "statement 2: syntax error at end of input (position 35)" in r.text
    assert service.runs() == [] and service.schedules() == []  # nothing queued, nothing scheduled
