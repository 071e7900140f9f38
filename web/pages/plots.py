"""Inline SVG plots for the pages: no JavaScript, no images; styled by classes in /static/style.css (the
Content-Security-Policy allows no inline styles). Every text that comes from data is escaped."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH = 720


def _ok(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if not (_ok(lo) and _ok(hi)):
        return []
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t < hi + step * 0.5:
        ticks.append(round(t, 12))
        t += step
    return ticks


def tick_label(v: float) -> str:
    a = abs(v)
    if a >= 10_000:
        return f"{v / 1000:,.0f}k"
    if a >= 100:
        return f"{v:,.0f}"
    if a == 0:
        return "0"
    return f"{v:.3g}"


def _svg(height: float, label: str, body: list[str]) -> Markup:
    return Markup(f'<svg class="plot" viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-label="{escape(label)}" '
                  f'xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}</title>{"".join(body)}</svg>')


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    out = []
    for cls, text in items:
        out.append(f'<rect class="{cls}" x="{x:.1f}" y="{y - 9:.1f}" width="12" height="12" rx="2"/>'
                   f'<text class="legend" x="{x + 17:.1f}" y="{y + 1:.1f}">{escape(text)}</text>')
        x += 24 + 7.2 * len(text)
    return out


def paired_bars(labels: Sequence[str], baseline: Sequence[float], candidate: Sequence[float],
                fmt=lambda v: f"{v:.3g} ms") -> Markup:
    """Per statement, the baseline's and the candidate's median latency as a pair of horizontal bars; a log
    scale when the values span more than 30x."""
    values = [v for v in (*baseline, *candidate) if _ok(v) and v > 0]
    if not labels or not values:
        return Markup("")
    left, right, top, row_h, bar_h = 52, 96, 40, 32, 12
    plot_w = WIDTH - left - right
    height = top + len(labels) * row_h + 34
    vmin, vmax = min(values), max(values)
    log = vmax / vmin > 30
    if log:
        lo = 10 ** math.floor(math.log10(vmin))
        if math.log10(vmin) - math.log10(lo) < 0.15:
            lo /= 10
        hi = vmax * 1.25
        decades = [lo * 10 ** k for k in range(math.floor(math.log10(hi / lo)) + 1)]
        ticks = decades if len(decades) > 2 else sorted(d * m for d in decades for m in (1, 2, 5) if d * m <= hi)

        def x(v):
            v = max(v, lo) if _ok(v) else lo
            return left + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * plot_w
    else:
        ticks = nice_ticks(0.0, vmax)
        hi = ticks[-1] or 1.0

        def x(v):
            return left + (max(v, 0.0) if _ok(v) else 0.0) / hi * plot_w
    body = _legend([("bar-base", "baseline (current)"), ("bar-cand", "candidate (recommended)")], left, 16)
    axis_y = top + len(labels) * row_h
    for t in ticks:
        tx = x(t)
        body.append(f'<line class="grid" x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{axis_y}"/>'
                    f'<text class="tick" x="{tx:.1f}" y="{axis_y + 14}" text-anchor="middle">{tick_label(t)}</text>')
    body.append(f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{axis_y + 30}" text-anchor="middle">'
                f'median latency per execution, ms{" (log scale)" if log else ""}</text>')
    for i, (name, b, c) in enumerate(zip(labels, baseline, candidate)):
        y0 = top + i * row_h + 3
        body.append(f'<text class="row-label" x="{left - 8}" y="{y0 + bar_h + 4}" text-anchor="end">'
                    f'{escape(name)}</text>')
        for cls, v, y in (("bar-base", b, y0), ("bar-cand", c, y0 + bar_h + 2)):
            x1 = x(v)
            body.append(f'<rect class="{cls}" x="{left}" y="{y}" width="{max(x1 - left, 1):.1f}" height="{bar_h}" '
                        f'rx="2"><title>{escape(name)} {"baseline" if cls == "bar-base" else "candidate"}: '
                        f'{escape(fmt(v)) if _ok(v) else "no measurement"}</title></rect>'
                        f'<text class="value" x="{x1 + 5:.1f}" y="{y + bar_h - 2}">'
                        f'{escape(fmt(v)) if _ok(v) else "—"}</text>')
    body.append(f'<line class="axis" x1="{left}" y1="{top - 6}" x2="{left}" y2="{axis_y}"/>')
    return _svg(height, "baseline vs candidate latency per statement", body)


@dataclass
class Frame:
    """A line/point chart's axes and grid (``body``), its scales (``x``, ``y``: data to pixels), its height
    and the left edge of its plot area."""

    body: list[str]
    x: Callable[[float], float]
    y: Callable[[float], float]
    height: float
    left: float


def _xy_frame(xs: Sequence[float], ys: Sequence[float], height: float, margins, *, y_from_zero: bool,
              x_label: str, y_label: str, x_integer: bool = True) -> Frame:
    """Axes and grid for a line/point chart. The vertical axis label gets the room it needs: the chart grows
    taller for a label longer than its plot area's two columns hold, and the plot area moves right for a
    second column (``_y_label``)."""
    left, right, top, bottom = margins
    height = max(height, top + bottom + y_label_height(y_label))
    plot_h = height - top - bottom
    columns = len(label_lines(y_label, plot_h))
    left += 13 * (columns - 1)
    plot_w = WIDTH - left - right
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    x_pad = max(0.15, (x_hi - x_lo) * 0.03)  # keep the first and last points off the axes
    x_lo, x_hi = x_lo - x_pad, x_hi + x_pad
    y_lo, y_hi = (0.0 if y_from_zero else min(ys)), max(ys)
    if not y_from_zero:
        pad = (y_hi - y_lo) * 0.08 or abs(y_hi) * 0.05 or 1.0
        y_lo, y_hi = y_lo - pad, y_hi + pad
    yt = [t for t in nice_ticks(y_lo, y_hi) if y_lo <= t <= y_hi * 1.0000001] or [y_lo, y_hi]
    if y_from_zero:
        yt = nice_ticks(0.0, y_hi)
        if len(yt) > 1 and yt[-1] < y_hi:  # the ticks may end half a step under the data: one more, so the
            yt.append(yt[-1] + yt[1] - yt[0])  # top stays inside the axes (and off the legend above them)
        y_hi = yt[-1]

    def fx(v):
        return left + (v - x_lo) / (x_hi - x_lo) * plot_w

    def fy(v):
        return top + plot_h - (v - y_lo) / ((y_hi - y_lo) or 1.0) * plot_h

    body = []
    for t in yt:
        body.append(f'<line class="grid" x1="{left}" y1="{fy(t):.1f}" x2="{left + plot_w}" y2="{fy(t):.1f}"/>'
                    f'<text class="tick" x="{left - 6}" y="{fy(t) + 4:.1f}" text-anchor="end">{tick_label(t)}</text>')
    if x_integer and x_hi - x_lo <= 13:
        xt = list(range(math.ceil(x_lo), math.floor(x_hi) + 1))
    else:
        xt = nice_ticks(x_lo, x_hi, 8)
    for t in xt:
        if x_lo <= t <= x_hi and (not x_integer or float(t).is_integer()):
            body.append(f'<text class="tick" x="{fx(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
                        f'{tick_label(t)}</text>')
    body.append(f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"/>'
                f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>'
                f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
                f'{escape(x_label)}</text>'
                + _y_label(y_label, top + plot_h / 2, plot_h))
    return Frame(body, fx, fy, height, left)


AXIS_LABEL_EM = 0.62 * 11.5  # pixels: a generous width of one character of an axis label (style.css: 11.5px)


def label_lines(label: str, room: float) -> list[str]:
    """``label`` broken at spaces into lines that each fit ``room`` pixels of axis label (a word longer than
    that stands alone).

    >>> label_lines("objective, workload ms (calls x median) (lower is better)", 220)
    ['objective, workload ms (calls', 'x median) (lower is better)']
    """
    most = max(1, int(room // AXIS_LABEL_EM))
    lines: list[str] = []
    for word in label.split():
        if lines and len(lines[-1]) + 1 + len(word) <= most:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def y_label_height(label: str, lines: int = 2) -> float:
    """The pixels the vertical axis label needs at most ``lines`` lines: what a chart's plot area is at least."""
    room = 120.0
    while len(label_lines(label, room)) > lines:
        room += 20.0
    return room


def _y_label(label: str, middle: float, room: float) -> str:
    """The vertical axis label, rotated, centred on ``middle`` (the plot area's, ``room`` pixels tall), in one
    column or two left of the tick labels: never longer than the plot area, so never cut at the chart's ends."""
    lines = label_lines(label, room)
    return (f"<g><title>{escape(label)}</title>"  # the label whole, for a reader (and a search) of the page
            + "".join(f'<text class="axis-label" x="{14 + 13 * i}" y="{middle:.1f}" text-anchor="middle" '
                      f'transform="rotate(-90 {14 + 13 * i} {middle:.1f})">{escape(line)}</text>'
                      for i, line in enumerate(lines)) + "</g>")


def round_totals(baseline: Sequence[float], candidate: Sequence[float]) -> Markup:
    """The weighted total time of every interleaved validation round, baseline and candidate."""
    ys = [v for v in (*baseline, *candidate) if _ok(v)]
    if not ys:
        return Markup("")
    n = max(len(baseline), len(candidate))
    height = 230
    frame = _xy_frame(list(range(1, n + 1)), ys, height, (70, 24, 34, 44), y_from_zero=True,
                      x_label="validation round", y_label="workload ms (calls × median)")
    body, fx, fy = frame.body, frame.x, frame.y
    body += _legend([("bar-base", "baseline"), ("bar-cand", "candidate")], frame.left, 16)
    for cls, series in (("base", baseline), ("cand", candidate)):
        pts = [(fx(i + 1), fy(v), v) for i, v in enumerate(series) if _ok(v)]
        if len(pts) > 1:
            body.append(f'<polyline class="line-{cls}" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b, _ in pts)}"/>')
        for a, b, v in pts:
            body.append(f'<circle class="point-{cls}" cx="{a:.1f}" cy="{b:.1f}" r="4">'
                        f'<title>{tick_label(v)} ms</title></circle>')
    return _svg(frame.height, "weighted total time per validation round", body)


def _seed(source: str | None) -> bool:
    return bool(source) and source.startswith("seed")


def convergence(trials: Sequence[tuple[int, float, str]], baseline: float | None = None,
                y_label: str = "objective (lower is better)") -> Markup:
    """A search's objective per trial (points) and the best so far (a step line); ``trials`` are (number,
    objective, source) of the measured trials only, ``baseline`` the current configuration's objective."""
    pts = sorted((n, v, s) for n, v, s in trials if _ok(v) and n is not None)
    if not pts:
        return Markup("")
    ys = [v for _, v, _ in pts] + ([baseline] if _ok(baseline) else [])
    height = 280
    frame = _xy_frame([n for n, _, _ in pts], ys, height, (70, 24, 34, 44), y_from_zero=False,
                      x_label="trial", y_label=y_label)
    body, fx, fy = frame.body, frame.x, frame.y
    seeded = any(_seed(s) for _, _, s in pts)
    body += _legend([("point-trial", "trial")] + ([("point-seed", "seed (initial design)")] if seeded else [])
                    + [("line-best-key", "best so far")]
                    + ([("line-baseline-key", "current configuration")] if _ok(baseline) else []), frame.left, 16)
    best, path = math.inf, []
    for n, v, _ in pts:
        if v < best:
            if path:
                path.append(f"L{fx(n):.1f},{fy(best):.1f}")
            best = v
            path.append(f"{'M' if not path else 'L'}{fx(n):.1f},{fy(best):.1f}")
    path.append(f"L{fx(pts[-1][0]):.1f},{fy(best):.1f}")
    body.append(f'<path class="line-best" d="{" ".join(path)}"/>')
    if _ok(baseline):  # over the best-so-far line: often the same level (the first trial is the current config)
        body.append(f'<line class="line-baseline" x1="{frame.left}" y1="{fy(baseline):.1f}" x2="{WIDTH - 24}" '
                    f'y2="{fy(baseline):.1f}"/>')
    for n, v, source in pts:
        cls = "point-seed" if _seed(source) else "point-trial"
        body.append(f'<circle class="{cls}" cx="{fx(n):.1f}" cy="{fy(v):.1f}" r="4">'
                    f'<title>trial {n}: {tick_label(v)}{" (" + str(escape(source)) + ")" if source else ""}</title>'
                    f'</circle>')
    return _svg(frame.height, "convergence: objective per trial and best so far", body)
