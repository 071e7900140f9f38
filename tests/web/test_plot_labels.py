"""The server-drawn charts' vertical axis labels are whole and inside the chart: the convergence chart with each
objective unit a run records (its SVG, and as Chromium lays it out), and the per-round totals."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.web import browser as rig
from web.pages import plots

SVG = "{http://www.w3.org/2000/svg}"
CHAR_PX = 7.0  # a wide character of the 11.5px axis-label font (DejaVu Sans averages about 6.5)

LABELS = [f"objective, {unit} (lower is better)" for unit in
          ("workload ms (calls x median)", "ms per statement executed", "thread CPU ns per operation")]


def vertical_labels(svg: str) -> tuple[float, float, list[tuple[float, float, str]]]:
    """(chart width, chart height, [(x, y, text)] of every rotated axis label)."""
    root = ET.fromstring(str(svg))
    _, _, width, height = map(float, root.get("viewBox").split())
    out = []
    for t in root.iter(f"{SVG}text"):
        if "axis-label" in t.get("class", "") and "rotate(-90" in (t.get("transform") or ""):
            out.append((float(t.get("x")), float(t.get("y")), t.text or ""))
    return width, height, out


def ticks_left_edge(svg: str) -> float:
    """Where the leftmost y tick label starts (right-aligned at its x)."""
    root = ET.fromstring(str(svg))
    return min(float(t.get("x")) - CHAR_PX * len(t.text or "") for t in root.iter(f"{SVG}text")
               if t.get("class") == "tick" and t.get("text-anchor") == "end")


@pytest.mark.parametrize("label", LABELS)
def test_the_convergence_charts_y_label_is_whole_and_inside_the_chart(label):
    svg = plots.convergence([(1, 1234.5, "seed"), (2, 987.0, None), (3, 1500.25, None)], 1300.0, label)
    _, height, columns = vertical_labels(svg)
    assert " ".join(text for _, _, text in columns) == label  # every word, in order
    for x, y, text in columns:
        half = CHAR_PX * len(text) / 2
        assert 0 <= y - half and y + half <= height, (text, y, height)  # not cut at either end
        assert x >= 12
    assert max(x for x, _, _ in columns) + 3 < ticks_left_edge(svg)  # clear of the tick labels


def test_the_round_totals_y_label_is_whole_and_inside_the_chart():
    svg = plots.round_totals([120.0, 118.5, 121.0], [80.0, 82.5, 79.0])
    _, height, columns = vertical_labels(svg)
    assert " ".join(text for _, _, text in columns) == "workload ms (calls × median)"
    for _, y, text in columns:
        assert 0 <= y - CHAR_PX * len(text) / 2 and y + CHAR_PX * len(text) / 2 <= height


browser = rig.browser  # the fixture: headless Chromium, as the page tour drives it

MEASURE = """() => {
  const svg = document.querySelector('svg.plot').getBoundingClientRect();
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                  bottom: r.bottom}; };
  return {svg: box(document.querySelector('svg.plot')),
          labels: [...document.querySelectorAll('text.axis-label[transform]')].map(box),
          ticks: [...document.querySelectorAll('text.tick[text-anchor=end]')].map(box)};
}"""


@pytest.mark.parametrize("label", LABELS)
def test_in_chromium_the_y_label_is_inside_the_chart_and_clear_of_the_ticks(label, browser):
    from pathlib import Path

    css = (Path(__file__).parents[2] / "web" / "static" / "style.css").read_text()
    svg = plots.convergence([(1, 1234.5, "seed"), (2, 987.0, None), (3, 12345.0, None)], 1300.0, label)
    page = browser.new_page(viewport={"width": 1024, "height": 800})
    try:
        page.set_content(f"<html><head><style>{css}</style></head><body><div style='width: 760px'>{svg}</div>"
                         "</body></html>")
        facts = page.evaluate(MEASURE)
    finally:
        page.close()
    box, labels, ticks = facts["svg"], facts["labels"], facts["ticks"]
    assert labels and ticks
    for r in labels:  # the drawn text, as the browser laid it out with the page's font
        assert box["left"] <= r["left"] and r["right"] <= box["right"], (r, box)
        assert box["top"] <= r["top"] and r["bottom"] <= box["bottom"], (r, box)
    assert max(r["right"] for r in labels) <= min(t["left"] for t in ticks), (labels, ticks)
