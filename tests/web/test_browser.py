"""The web pages in a real browser: headless Chromium (Debian's, driven by Playwright) against the real server
(uvicorn on a loopback port) and a real 'production' Postgres.

Log in, register the target, start an index run and watch it finish, open its recommendation, approve, apply
(the index appears on the production database), roll back (it is gone); CSRF and roles are enforced; a knob
run's convergence plot; schedules; a rewrite run started from the form, its recommendation's side-by-side diff
(approved, never applied: no apply button). Every step leaves a screenshot under $ADVISOR_TEST_ARTIFACTS/web (default
test-artifacts/web), and no byte the server sent contains the target's password. Last, every main page at 1024,
1366 and 1920 px (screenshots under web/widths) with layout facts asserted, and the API's docs with every other
host blocked. The rig (server, browser, helpers) is ``tests.web.browser``.
"""

from __future__ import annotations

import re
import time
import urllib.parse

import psycopg

from advisor.bench.playground import run_shop_workload
from advisor.service.runs import kinds
from tests.web.browser import (LAYOUT, RUN_TIMEOUT_MS, _get, _login_form, artifacts, browser,  # noqa: F401
                               docs_offline, expect, indexes_on, log_in, new_page, site, wait_done)
from tests.web.conftest import INDEX_RUN
from tests.web.test_rewrite_runs import REWRITE_RUN, reports  # noqa: F401  (reports: the fixture)
from web.deps import SESSION_COOKIE
from web.pages.auth import LOGIN_CSRF_COOKIE


# --- tests, in order: each builds on what the previous one left ---------------------------------------------


def test_login_session_cookie_and_errors(site, browser):
    page = new_page(browser)
    page.goto(f"{site.base}/recommendations")
    assert page.url == f"{site.base}/login?next=%2Frecommendations"  # no session: sent to the login page
    site.shot(page, "login")
    login_cookie = next(c for c in page.context.cookies() if c["name"] == LOGIN_CSRF_COOKIE)  # for the form
    assert login_cookie["httpOnly"] is True and login_cookie["sameSite"] == "Strict"

    page.fill("#token", "dba_not-a-token")
    with page.expect_response(lambda r: r.url.endswith("/login") and r.request.method == "POST") as answer:
        page.click("#login")
    assert answer.value.status == 401
    expect(page.locator("#error")).to_contain_text("unknown API token")
    site.shot(page, "login-refused")

    page.fill("#token", site.operator)
    with page.expect_navigation(url=f"{site.base}/recommendations"):
        page.click("#login")
    cookie = next(c for c in page.context.cookies() if c["name"] == SESSION_COOKIE)
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Lax" and cookie["path"] == "/"
    assert cookie["expires"] > time.time() + 3600  # max-age from the settings (8 h by default)
    assert page.inner_text("#who") == "op" and page.text_content("#role") == "operator"
    expect(page.locator("#recommendations")).to_have_count(0)  # nothing yet
    site.shot(page, "recommendations-empty")

    # after login, only a local path: never another site
    for evil in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"):
        cookie, csrf = _login_form(site.base)
        body = urllib.parse.urlencode({"token": site.operator, "next": evil, "csrf": csrf})
        r = _get(site.base, "/login", {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}, body)
        assert r.status == 303 and r.getheader("location") == "/", evil

    # login CSRF: another site's form cannot log this browser into the attacker's token (the form's token is
    # in a SameSite=Strict cookie, which a cross-site POST does not carry)
    forger = new_page(browser)
    forged = (f'<form method="post" action="{site.base}/login"><input name="token" value="{site.viewer}">'
              f'<input name="csrf" value="{login_cookie["value"]}"><button id="go">go</button></form>')
    forger.route("http://evil.example/", lambda route: route.fulfill(body=forged, content_type="text/html"))
    forger.goto("http://evil.example/")
    forger.context.add_cookies([{**login_cookie, "sameSite": "Strict"}])  # the victim's own login cookie
    with forger.expect_response(lambda r: r.url == f"{site.base}/login" and r.request.method == "POST") as answer:
        forger.click("#go")
    assert answer.value.status == 403
    assert not [c for c in forger.context.cookies() if c["name"] == SESSION_COOKIE]
    forger.context.close()

    # errors are pages, their messages escaped
    evil = "<img src=x onerror=alert(1)>"
    answer = page.goto(f"{site.base}/recommendations/{urllib.parse.quote(evil, safe='')}")
    assert answer.status == 404
    expect(page.locator("#message")).to_contain_text(evil)
    assert page.locator("#message img").count() == 0
    site.shot(page, "not-found")
    assert page.goto(f"{site.base}/runs?limit=many").status == 400
    page.context.close()


def test_register_target_and_run_an_index_run(site, browser):
    page = new_page(browser)
    log_in(site, page, site.operator)
    expect(page.locator(".empty")).to_contain_text("No targets")
    page.fill("#target-name", "prod")
    page.fill("#target-dsn", site.prod)
    assert page.get_attribute("#target-dsn", "type") == "password"
    with page.expect_navigation(url=f"{site.base}/"):
        page.click("#register-target")
    card = page.locator("#target-prod")
    expect(card).to_contain_text("Last observed")
    assert "password" not in card.locator(".dsn").inner_text()
    assert page.locator("#observe-prod").count() == 1
    site.shot(page, "targets")

    page.goto(f"{site.base}/runs")
    page.select_option("#run-target", "prod")
    page.select_option("#run-kind", INDEX_RUN["kind"])
    expect(page.locator("#run-trials")).to_be_hidden()  # the form shows the chosen kind's fields
    page.select_option("#run-optimizer", INDEX_RUN["optimizer"])
    page.fill("#run-budget-mb", str(INDEX_RUN["budget_mb"]))
    page.fill("#run-rounds", str(INDEX_RUN["rounds"]))
    site.shot(page, "start-run")
    with page.expect_navigation(url=re.compile(r"/runs/[0-9a-f]+$")):
        page.click("#start")
    assert page.inner_text("#state") in ("queued", "running", "done", "validated", "rejected")
    site.shot(page, "run-started")
    wait_done(page)
    assert page.inner_text("#state") == "validated", page.inner_text("main")  # the outcome, not "done"
    expect(page.locator("#outcome")).to_contain_text("validated")
    assert page.locator("#log").inner_text().strip()
    site.shot(page, "run-done")
    page.context.close()


def test_approve_apply_rollback_in_the_browser(site, browser):
    page = new_page(browser)
    log_in(site, page, site.operator, "/recommendations?state=validated")
    rows = page.locator("#recommendations tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("indexes")
    expect(rows.first).to_contain_text("prod")
    assert re.search(r"\+\d+\.\d%", rows.first.inner_text())  # gains as +12.3%
    site.shot(page, "recommendations")
    with page.expect_navigation(url=re.compile(r"/recommendations/[0-9a-f]+$")):
        rows.first.locator("a.open").click()
    rec_url = page.url
    rec_id = rec_url.rsplit("/", 1)[1]
    assert page.inner_text("#state") == "validated"
    assert page.locator("svg.plot").count() == 2  # statements' paired bars, per-round totals
    assert page.locator("#statements tbody tr").count() >= 1
    expect(page.locator("#indexes")).to_contain_text("orders")
    assert "CREATE INDEX CONCURRENTLY" in page.inner_text("#apply-sql")
    assert "DROP INDEX CONCURRENTLY" in page.inner_text("#revert-sql")
    expect(page.locator("#apply, #rollback")).to_have_count(0)
    site.shot(page, "recommendation-validated")

    # a viewer sees the evidence but no buttons, and cannot act even with a valid form
    viewer = new_page(browser)
    log_in(site, viewer, site.viewer, f"/recommendations/{rec_id}")
    assert viewer.url == rec_url and viewer.text_content("#role") == "viewer"
    expect(viewer.locator("#approve, #apply, #rollback, #reject")).to_have_count(0)
    site.shot(viewer, "viewer")
    viewer_csrf = viewer.locator("input[name=csrf]").first.get_attribute("value")
    refused = viewer.request.post(f"{rec_url}/approve", form={"csrf": viewer_csrf}, max_redirects=0)
    assert refused.status == 403 and "operator" in refused.text()
    viewer.context.close()

    # a POST without the session's CSRF token is refused, in the browser and from a script
    page.evaluate("document.querySelectorAll('input[name=csrf]').forEach(e => e.remove())")
    with page.expect_response(lambda r: r.url.endswith("/approve")) as answer:
        page.click("#approve")
    assert answer.value.status == 403
    expect(page.locator("#message")).to_contain_text("CSRF")
    site.shot(page, "csrf-refused")
    for form in ({}, {"csrf": "forged"}):
        r = page.request.post(f"{rec_url}/approve", form=form, max_redirects=0)
        assert r.status == 403, form
        site.html.append(r.text())
    assert site.service.recommendation(rec_id).state == "validated"

    page.goto(rec_url)
    before = indexes_on(site.prod, "orders")
    page.fill("#note", "checked the evidence")
    with page.expect_navigation(url=rec_url):
        page.click("#approve")
    assert page.inner_text("#state") == "approved"
    assert indexes_on(site.prod, "orders") == before  # approving changes nothing on production
    site.shot(page, "approved")

    page.once("dialog", lambda d: d.accept())  # "Apply ... to production?"
    with page.expect_navigation(url=rec_url):
        page.click("#apply")
    assert page.inner_text("#state") == "applied"
    assert indexes_on(site.prod, "orders") - before == {"orders_customer_advisor_idx"}
    assert "DROP INDEX CONCURRENTLY" in page.inner_text("#revert-sql")
    site.shot(page, "applied")

    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation(url=rec_url):
        page.click("#rollback")
    assert page.inner_text("#state") == "rolled back"
    assert indexes_on(site.prod, "orders") == before
    history = page.inner_text("#history")
    for step in ("approved", "applied", "rolled back", "token:op", "checked the evidence"):
        assert step in history, step
    expect(page.locator("#approve, #rollback, #reject")).to_have_count(0)
    site.shot(page, "rolled-back")

    # a rollback is not final (issue 44, item 9): one button applies it again, watched, and it rolls back again
    assert page.inner_text("#apply") == "Apply again"
    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation(url=rec_url):
        page.click("#apply")
    assert page.inner_text("#state") == "applied"
    assert indexes_on(site.prod, "orders") - before == {"orders_customer_advisor_idx"}
    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation(url=rec_url):
        page.click("#rollback")
    assert page.inner_text("#state") == "rolled back" and indexes_on(site.prod, "orders") == before

    with page.expect_navigation(url=re.compile(r"/login$")):
        page.click("#logout")
    assert SESSION_COOKIE not in {c["name"] for c in page.context.cookies()}
    assert page.goto(rec_url).url.startswith(f"{site.base}/login")  # the session is gone on the server too
    page.context.close()


def test_knob_run_convergence_and_schedules(site, browser):
    # Only the shop's statements in the workload: the earlier run's pg_dump of the target and this test's own
    # catalog queries are in pg_stat_statements too, and a knob trial cannot replay them (aclitem columns).
    with psycopg.connect(site.prod, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
    run_shop_workload(site.prod)
    who = site.service.authenticate(site.operator)
    run = site.service.start_run("prod", kinds.plan_of("knobs", optimizer="random", trials=5, seeds=1, repeats=1,
                                                 rounds=2), who)
    page = new_page(browser)
    log_in(site, page, site.operator, f"/runs/{run['id']}")
    wait_done(page)
    trials = site.service.trials(run["id"])
    assert len([t for t in trials if t["status"] == "measured"]) >= 2
    expect(page.locator("#trials tbody tr")).to_have_count(len(trials))
    expect(page.locator("#convergence svg.plot circle").first).to_be_visible()
    seeds = [t for t in trials if t["status"] == "measured" and (t["source"] or "").startswith("seed")]
    expect(page.locator("#convergence circle.point-seed")).to_have_count(len(seeds))
    if seeds:  # the rules' seed configuration, told apart in the legend
        expect(page.locator("#convergence text.legend", has_text="seed")).to_have_count(1)
    site.shot(page, "knob-run")
    if page.locator("#outcome a").count():  # the random search found a configuration worth validating
        with page.expect_navigation(url=re.compile(r"/recommendations/[0-9a-f]+$")):
            page.locator("#outcome a").first.click()
        expect(page.locator("#changes .change").first).to_be_visible()
        site.shot(page, "knob-recommendation")

    page.goto(f"{site.base}/schedules")
    page.select_option("#schedule-target", "prod")
    page.fill("#schedule-cron", "30 3 * * *")
    page.select_option("#schedule-kind", "indexes")
    page.select_option("#schedule-optimizer", INDEX_RUN["optimizer"])
    page.fill("input[name=budget_mb]", str(INDEX_RUN["budget_mb"]))
    with page.expect_navigation(url=f"{site.base}/schedules"):
        page.click("#add")
    schedule = page.locator("article.schedule")
    expect(schedule).to_have_count(1)
    expect(schedule).to_contain_text("30 3 * * *")
    expect(schedule).to_contain_text("Not fired yet")
    sid = site.service.schedules()[0]["id"]
    with page.expect_navigation(url=f"{site.base}/schedules"):
        page.click(f"#fire-{sid}")
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while not [r for r in site.service.runs("prod") if r["schedule_id"] == sid and r["state"] == "done"]:
        assert time.monotonic() < deadline, "the scheduled run did not finish"
        time.sleep(1)
    page.reload()
    expect(schedule.locator("tbody tr")).to_have_count(1)
    expect(schedule).to_contain_text("done")
    site.shot(page, "schedules")

    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation(url=f"{site.base}/schedules"):
        page.click(f"#remove-{sid}")
    expect(page.locator("article.schedule")).to_have_count(0)

    page.goto(f"{site.base}/runs")
    expect(page.locator("#runs tbody tr")).to_have_count(3)
    site.shot(page, "runs")
    page.goto(f"{site.base}/")
    site.shot(page, "targets-after")
    page.context.close()


def test_rewrite_run_from_the_form_and_its_side_by_side_diff(site, browser, reports):
    site.service.add_target("reports", reports, site.service.authenticate(site.operator))
    page = new_page(browser)
    log_in(site, page, site.operator, "/runs")
    page.select_option("#run-target", "reports")
    page.select_option("#run-kind", REWRITE_RUN["kind"])
    expect(page.locator("#run-max-statements")).to_be_visible()  # the rewrite run's fields, not the others'
    expect(page.locator("#run-validate")).to_be_visible()
    expect(page.locator("#run-trials")).to_be_hidden()
    expect(page.locator("#run-budget-mb")).to_be_hidden()
    expect(page.locator("#run-optimizer option").first).to_have_text("default (aurora)")
    page.select_option("#run-optimizer", REWRITE_RUN["optimizer"])
    page.fill("#run-max-statements", "5")
    page.fill("#run-rounds", str(REWRITE_RUN["rounds"]))
    site.shot(page, "start-rewrite-run")
    with page.expect_navigation(url=re.compile(r"/runs/[0-9a-f]+$")):
        page.click("#start")
    wait_done(page)
    assert page.inner_text("#state") == "validated", page.inner_text("main")  # the outcome, not "done"
    expect(page.locator("#outcome")).to_contain_text("validated")
    site.shot(page, "rewrite-run-done")
    with page.expect_navigation(url=re.compile(r"/recommendations/[0-9a-f]+$")):
        page.locator("#outcome a").first.click()
    rec_url = page.url

    old, new = page.locator("#diff-1 td.sql-old").first, page.locator("#diff-1 td.sql-new").first
    expect(old).to_be_visible()
    expect(new).to_be_visible()
    expect(old).to_contain_text("WHERE c.score > (SELECT avg(o.amount)")  # escaped in the HTML, shown as written
    expect(old.locator("del").first).to_be_visible()
    expect(new.locator("ins", has_text="GROUP BY")).to_be_visible()
    a, b = old.bounding_box(), new.bounding_box()
    assert a["x"] + a["width"] <= b["x"] + 1 and abs(a["y"] - b["y"]) < 2  # side by side
    expect(page.locator("#statement-1")).to_contain_text("decorrelate_scalar_aggregate")
    expect(page.locator("#statement-1 .speedup").first).to_contain_text("× faster")
    expect(page.locator("#handed-over")).to_contain_text("Never applied to the database")
    expect(page.locator("#approve")).to_be_visible()
    expect(page.locator("#apply, #rollback, #apply-sql")).to_have_count(0)
    site.shot(page, "rewrite-recommendation")

    with page.expect_navigation(url=rec_url):
        page.click("#approve")
    assert page.inner_text("#state") == "approved"
    expect(page.locator("#apply, #rollback")).to_have_count(0)  # its lifecycle ends here
    expect(page.locator("#actions")).to_contain_text("end of its lifecycle")
    site.shot(page, "rewrite-approved")
    page.context.close()


# --- every main page at three widths: screenshots and layout facts ------------------------------------------

WIDTHS = (1024, 1366, 1920)

def _tour(site) -> list[tuple[str, str]]:
    """(name, path) of the main pages: lists, the runs and a recommendation of every kind the earlier tests made."""
    service = site.service
    if not service.schedules():  # the schedule test removed its own: one to show
        service.add_schedule("prod", "15 4 * * 1-5", [kinds.plan_of(**INDEX_RUN)], service.authenticate(site.operator))
    pages = [("targets", "/"), ("runs", "/runs"), ("recommendations", "/recommendations"), ("schedules", "/schedules")]
    for run in service.runs():
        pages.append((f"run-{run['kind']}", f"/runs/{run['id']}"))
    by_kind = {}
    for rec in service.recommendations():
        by_kind.setdefault(rec.kind, rec.id)
    assert {"indexes", "rewrites"} <= set(by_kind), by_kind  # made by the tests above
    pages += [(f"recommendation-{kind}", f"/recommendations/{rec_id}") for kind, rec_id in sorted(by_kind.items())]
    return list(dict.fromkeys(pages))


def test_main_pages_at_three_widths(site, browser):
    """Every main page at 1024, 1366 and 1920 px: no horizontal scrolling, every "Open" link whole, no fact
    spilling into the next, no plot legend over the data; the API's docs render with every other host blocked."""
    folder = artifacts() / "widths"
    folder.mkdir(exist_ok=True)
    pages = _tour(site)
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        context.set_default_timeout(20_000)
        page = context.new_page()
        log_in(site, page, site.viewer)
        for name, path in pages:
            assert page.goto(f"{site.base}{path}").status == 200, path
            facts = page.evaluate(LAYOUT)
            shot = folder / f"{width}-{name}.png"
            page.screenshot(path=str(shot), full_page=True)
            site.shots.append(shot)
            site.html.append(page.content())
            assert facts["overflow"] <= 0, f"{path} at {width} px scrolls sideways by {facts['overflow']} px"
            assert not facts["clipped"], f"{path} at {width} px: Open links cut off: {facts['clipped']}"
            assert not facts["spilled"], f"{path} at {width} px: facts spill over: {facts['spilled']}"
            assert not facts["legend_on_data"], f"{path} at {width} px: a legend covers data: {facts}"
            assert not facts["off_axes"], f"{path} at {width} px: data outside the axes: {facts['off_axes']}"
            if name in ("runs", "recommendations"):
                assert page.locator("a.open").count() >= 1, path
            for plot in page.locator("#convergence svg.plot").all():  # the knob run's convergence
                legend = " ".join(plot.locator("text.legend").all_text_contents())
                if plot.locator("circle.point-seed").count():
                    assert "seed" in legend, legend
                if plot.locator("line.line-baseline").count():  # drawn last: never hidden under the best line
                    assert plot.evaluate("s => [...s.children].filter(e => e.matches('path, line.line-baseline'))"
                                         ".pop().matches('line.line-baseline')")
        docs_offline(site, page, width, folder)
        context.close()
