"""The browser tests' rig: the app served by uvicorn on a loopback port (every response kept, to search for the
target's password), headless Chromium (Debian's, driven by Playwright), logging in, waiting for runs, and the
layout facts and offline checks the page tour asserts (``test_browser``)."""

from __future__ import annotations

import http.client
import os
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import uvicorn
from playwright import sync_api

from connectors.postgres.sandbox import free_port
from tests.web.conftest import PASSWORD
from web.main import create_app

CHROMIUM = "/usr/bin/chromium"
RUN_TIMEOUT_MS = 300_000

expect = sync_api.expect


def artifacts() -> Path:
    path = Path(os.environ.get("ADVISOR_TEST_ARTIFACTS", "test-artifacts")) / "web"
    path.mkdir(parents=True, exist_ok=True)
    return path


class BodyRecorder:
    """ASGI wrapper keeping every response (status line, headers, body) the server sent, to search for secrets."""

    def __init__(self, app):
        self.app = app
        self.responses: list[bytes] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        parts: list[bytes] = [scope["path"].encode()]

        async def recording_send(message):
            if message["type"] == "http.response.start":
                parts.append(str(message["status"]).encode())
                parts.extend(k + b": " + v for k, v in message.get("headers", []))
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            self.responses.append(b"\n".join(parts))


@dataclass
class Site:
    base: str
    app: object
    recorder: BodyRecorder
    prod: str
    operator: str = ""
    viewer: str = ""
    html: list[str] = field(default_factory=list)  # every page the browser showed, as the test saw it
    shots: list[Path] = field(default_factory=list)

    @property
    def service(self):
        return self.app.state.service

    def shot(self, page, name: str) -> Path:
        """Keep the page's HTML and save a full-page screenshot NN-name.png."""
        self.html.append(page.content())
        path = artifacts() / f"{len(self.shots) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        self.shots.append(path)
        print(f"screenshot: {path}")
        return path


def _get(base: str, path: str, headers: dict | None = None, body: str | None = None) -> http.client.HTTPResponse:
    """One request without following redirects (urllib would)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request("POST" if body is not None else "GET", path, body=body, headers=headers or {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def _login_form(base: str) -> tuple[str, str]:
    """A browser's first visit of the login form: (its login CSRF cookie as a Cookie header, the form's token)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request("GET", "/login")
    response = conn.getresponse()
    page = response.read().decode()
    conn.close()
    cookie = response.getheader("set-cookie").split(";")[0]
    return cookie, re.search(r'name="csrf" value="([^"]+)"', page).group(1)


@pytest.fixture(scope="module")
def site(tmp_path_factory, prod):
    """The app served by uvicorn in a thread on a free loopback port, with an operator and a viewer token."""
    tmp = tmp_path_factory.mktemp("browser")
    for old in artifacts().glob("[0-9][0-9]-*.png"):  # screenshots of an earlier run
        old.unlink()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADVISOR_KEY_FILE", str(tmp / "secret.key"))
        app = create_app(str(tmp / "advisor.duckdb"))
        recorder = BodyRecorder(app)
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(recorder, host="127.0.0.1", port=port, log_level="warning",
                                               lifespan="on"))
        thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if _get(base, "/api/health").status == 200:
                    break
            except OSError:
                pass
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        s = Site(base, app, recorder, prod)
        _, s.operator = s.service.create_token("op", "operator")
        _, s.viewer = s.service.create_token("auditor", "viewer")
        try:
            yield s
        finally:
            server.should_exit = True
            thread.join(timeout=120)
        leaked = [r[:200] for r in recorder.responses if PASSWORD.encode() in r]
        assert not leaked, f"the target's password was in a response: {leaked[0]!r}"
        assert not [h for h in s.html if PASSWORD in h], "the target's password was on a page"
        print("screenshots:\n" + "\n".join(f"  {p}" for p in s.shots))


@pytest.fixture(scope="module")
def browser():
    # Debian's chromium is what scripts/bootstrap.sh installs: its absence is a failure, never a skipped page tour
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: scripts/bootstrap.sh installs Debian's chromium"
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def new_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(20_000)
    return context.new_page()


def log_in(site: Site, page, token: str, next_path: str = "/") -> None:
    page.goto(f"{site.base}/login?next={urllib.parse.quote(next_path)}")
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("#login")


def indexes_on(dsn: str, table: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [table])}


def wait_done(page, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """The run page reloads itself as the run goes on; wait for it to show the end (a finished run's badge shows
    its outcome: its recommendation's state, or done when it made none)."""
    expect(page.locator("#state")).to_have_text(re.compile("done|validated|rejected|failed|cancelled"),
                                                timeout=timeout_ms)


LAYOUT = """() => {
  const w = window.innerWidth, out = {overflow: document.documentElement.scrollWidth - w, clipped: [],
                                       spilled: [], legend_on_data: [], off_axes: []};
  for (const a of document.querySelectorAll('a.open')) {  // the "Open" links: inside the viewport and their table
    const r = a.getBoundingClientRect(), wrap = a.closest('.table-wrap');
    const right = Math.min(w, wrap ? wrap.getBoundingClientRect().right : w);
    if (r.right > right + 0.5) out.clipped.push(a.getAttribute('href'));
  }
  for (const dd of document.querySelectorAll('.facts dd'))  // a fact never runs into the next one
    if (dd.scrollWidth > dd.clientWidth + 1) out.spilled.push(dd.textContent.trim());
  for (const svg of document.querySelectorAll('svg.plot')) {  // legends never cover a data point or line vertex
    const boxes = [...svg.querySelectorAll('text.legend, rect[class]')].filter(e => e.nextElementSibling &&
      e.nextElementSibling.matches('text.legend') || e.matches('text.legend')).map(e => e.getBBox());
    const points = [...svg.querySelectorAll('circle')].map(c => [c.cx.baseVal.value, c.cy.baseVal.value]);
    for (const l of svg.querySelectorAll('polyline'))
      for (const p of l.points) points.push([p.x, p.y]);
    for (const [x, y] of points)
      for (const b of boxes)
        if (x >= b.x - 6 && x <= b.x + b.width + 6 && y >= b.y - 6 && y <= b.y + b.height + 6)
          out.legend_on_data.push(svg.getAttribute('aria-label'));
    const yAxis = [...svg.querySelectorAll('line.axis')].find(l => l.x1.baseVal.value === l.x2.baseVal.value);
    if (yAxis) {  // a chart with a y axis: every point between its ends
      const top = Math.min(yAxis.y1.baseVal.value, yAxis.y2.baseVal.value);
      const bottom = Math.max(yAxis.y1.baseVal.value, yAxis.y2.baseVal.value);
      if (points.some(([x, y]) => y < top - 0.5 || y > bottom + 0.5)) out.off_axes.push(svg.getAttribute('aria-label'));
    }
  }
  return out;
}"""


def docs_offline(site, page, width: int, folder: Path) -> None:
    """/api/docs and /api/redoc with every request to another host than the server's aborted."""
    outside: list[str] = []

    def only_local(route):
        if urllib.parse.urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(f"{site.base}/docs")  # the old address sends people to the API's docs
    assert page.url == f"{site.base}/api/docs"
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    assert page.locator(".swagger-ui .opblock").count() >= 20  # every operation, from the local openapi.json
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("db-advisor")
    page.screenshot(path=str(folder / f"{width}-api-docs.png"), full_page=False)
    page.goto(f"{site.base}/api/redoc")
    expect(page.locator("redoc")).to_contain_text("Start Run")  # rendered by ReDoc's script, from openapi.json
    expect(page.locator("redoc")).to_contain_text("Start a tuning run in the background")
    page.screenshot(path=str(folder / f"{width}-api-redoc.png"), full_page=False)
    assert not outside, f"the docs sent requests to other hosts: {outside}"  # (the page's CSP stops them first)
    assert not [u for u in failed if u.startswith(site.base)], f"local requests failed: {failed}"
    page.unroute("**/*")
