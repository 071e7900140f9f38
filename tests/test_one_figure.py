"""One figure, one source (issue 44, item 3): one recommendation made by the real index pipeline on a PostgreSQL
fixture, then read by every face over the same store: the CLI (``recommendations show``), its ``--json``, the REST
API and the web page show the same gain, interval, baseline and candidate workload times, verdict, the snapshot
its calls come from, and per index the same estimated (what-if) and built sizes, each with its unit
(``advisor.service.summary``: computed once); `observe` and the targets page name their snapshot the same way."""

from __future__ import annotations

import html
import json
import re

import pytest
from fastapi.testclient import TestClient

from advisor.bench.playground import create_shop
from tests.advisor.cli.test_cli_service import cli, ok
from tests.web.logins import log_in
from web.main import create_app


@pytest.fixture(scope="module")
def shop(pg):
    return create_shop(pg, "one_figure_shop")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_cli_its_json_the_api_and_the_page_show_one_recommendations_figures(tmp_path, shop):
    ok(cli(tmp_path, "targets", "add", "--name", "shop", "--json", env={"ADVISOR_TARGET_DSN": shop}))
    tuned = cli(tmp_path, "tune", "indexes", "--target", "shop", "--optimizer", "extend", "--budget-mb", "20",
                "--rounds", "3", "--json")
    rec_id = ok(tuned)["recommendation"]["id"]

    doc = ok(cli(tmp_path, "recommendations", "show", rec_id, "--json"))["recommendation"]
    head = doc["summary"]
    figures, sizes = head["figures"], head["sizes"]
    assert figures["baseline"].endswith(" ms") and figures["candidate"].endswith(" ms")
    assert figures["gain"].endswith("%") and " .. " in figures["gain_ci"]
    assert sizes and all(s["estimated"].endswith(" MB") and s["built"].endswith(" MB") for s in sizes)

    shown = cli(tmp_path, "recommendations", "show", rec_id, env={"COLUMNS": "250", "TERM": "dumb"})
    assert shown.returncode == 0, shown.stderr
    text = _flat(shown.stdout)
    assert _flat(figures["line"]) in text
    for s in sizes:  # one line per index: both sizes, labelled, with their unit
        assert f"index {s['index']}: estimated {s['estimated']} (what-if), built {s['built']} (on the shadow)" in text

    # the calls it shows say which snapshot they are from; `observe` and the targets page say theirs the same way
    assert figures["observed"].startswith("snapshot ") and " UTC: " in figures["observed"]
    assert f"calls from the {figures['observed']}" in text
    looked = cli(tmp_path, "observe", "--target", "shop", env={"COLUMNS": "250", "TERM": "dumb"})
    assert looked.returncode == 0, looked.stderr
    now = re.search(r"workload of (snapshot \S+, observed \d{4}-\d\d-\d\d \d\d:\d\d UTC: [\d,]+ calls), [\d.,]+ s in all: ",
                    _flat(looked.stdout))
    assert now, looked.stdout

    app = create_app(str(tmp_path / "advisor.duckdb"))
    with TestClient(app) as client:
        _, token = app.state.service.create_token("viewer-1", "viewer")
        api = client.get(f"/api/recommendations/{rec_id}", headers={"Authorization": f"Bearer {token}"}).json()
        assert api["summary"]["figures"] == figures and api["summary"]["sizes"] == sizes
        assert api["summary"]["gain"] == head["gain"] and api["summary"]["gain_ci"] == head["gain_ci"]
        assert (api["summary"]["baseline_ms"], api["summary"]["candidate_ms"]) == (head["baseline_ms"],
                                                                                   head["candidate_ms"])

        log_in(client, token)
        page = html.unescape(client.get(f"/recommendations/{rec_id}").text)
        targets = html.unescape(client.get("/").text)
    assert f'<span class="muted observed">({now.group(1)})</span>' in targets
    assert f'id="observed">Calls from the {figures["observed"]}.<' in page
    assert re.search(rf'id="baseline-ms">{re.escape(figures["baseline"])}<', page)
    assert re.search(rf'id="candidate-ms">{re.escape(figures["candidate"])}<', page)
    assert re.search(rf'id="gain-ci">{re.escape(figures["gain_ci"])}<', page)
    gain = re.search(r'id="gain">(.*?)</span></span>', page, re.S).group(1)
    assert figures["gain"] in gain
    assert re.search(rf'id="verdict">{re.escape(figures["verdict"])}<', page)
    table = page[page.index('id="indexes"'):page.index("</table>", page.index('id="indexes"'))]
    assert [(s["estimated"], s["built"]) for s in sizes] == re.findall(
        r'class="num estimated-size">([^<]*)</td>\s*<td class="num built-size">([^<]*)</td>', table)
    for s in sizes:  # the explanation's candidates table: the same estimate for the same index
        assert re.search(rf'<code>{re.escape(s["index"])}</code></td><td class="num">{re.escape(s["estimated"])}</td>',
                         page), s
    # the set's what-if line: the same format and the same estimate as the indexes', summed
    w = doc["details"]["whatif"]
    assert w["estimated_bytes"] == pytest.approx(sum(ix["calibrated_bytes"] for ix in doc["details"]["indexes"]
                                                     if ix.get("in_place_of") is None), rel=1e-6)
    assert json.dumps(figures)  # texts only
