"""Rendering: Jinja2 templates (autoescaped), the number and time filters, and the headers every page gets
(a strict Content-Security-Policy: scripts and styles only from /static, no framing; no caching). Besides
``web/templates``, each kind's page (``Kind.page``, a file of macros in the kind's folder) loads through the kind
registry as ``kinds/<kind>.html`` (``kind_page``); a kind without one loads as an empty page, so the generic
templates that import it show their generic pieces."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import ChoiceLoader, FunctionLoader

from advisor.core.domain import state_word
from advisor.service.auth import Principal
from advisor.service.runs import kinds
from web.pages.diff import side_by_side
from web.pages.formats import FILTERS

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
KIND_PAGES = "kinds/"  # where the kinds' pages load (``kind_page``)


def kind_page(kind: str | None) -> str:
    """The template name of ``kind``'s page: every name loads (None, or a kind without a page: an empty one)."""
    return f"{KIND_PAGES}{kind or ''}.html"


def _load_kind_page(name: str):
    """The source of ``kinds/<kind>.html``: the kind's page file (``Kind.page``); empty for a kind the registry
    does not list or that has no page; None (not found) for any other name."""
    if not (name.startswith(KIND_PAGES) and name.endswith(".html")):
        return None
    kind = name[len(KIND_PAGES):-len(".html")]
    page = kinds.get(kind).page if kind in kinds.names() else None
    if page is None:
        return ""
    mtime = page.stat().st_mtime
    return page.read_text(), str(page), lambda: page.exists() and page.stat().st_mtime == mtime


templates = Jinja2Templates(directory=str(TEMPLATES))
templates.env.loader = ChoiceLoader([templates.env.loader, FunctionLoader(_load_kind_page)])
templates.env.globals["kind_page"] = kind_page
templates.env.autoescape = True  # every template, whatever its name
templates.env.filters.update(FILTERS)
templates.env.filters["word"] = state_word  # a state as people read it ("rolled back"): the CLI's mapping too
templates.env.filters["side_by_side"] = side_by_side  # two SQL texts, aligned, the changes marked (web.pages.diff)
templates.env.trim_blocks = True
templates.env.lstrip_blocks = True

HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def render(request: Request, name: str, session: tuple[Principal, str] | None = None, *, status: int = 200,
           section: str = "", **context) -> HTMLResponse:
    """The page ``name`` for the session's principal (None on the login and some error pages)."""
    who, csrf = session if session else (None, "")
    ctx = {"who": who, "csrf": csrf, "operator": bool(who and who.role == "operator"), "section": section,
           **context}
    return templates.TemplateResponse(request, name, ctx, status_code=status, headers=HEADERS)


def error_page(request: Request, code: int, message: str) -> HTMLResponse:
    """An error as a page (the message is escaped by the template); the nav when the browser has a session."""
    from advisor.core.errors import AdvisorError
    from web.deps import SESSION_COOKIE

    session = None
    service = getattr(request.app.state, "service", None)
    cookie = request.cookies.get(SESSION_COOKIE)
    if service is not None and cookie:
        try:
            session = service.session(cookie)
        except AdvisorError:
            session = None
    titles = {400: "Bad request", 401: "Not logged in", 403: "Not allowed", 404: "Not found", 405: "Not allowed",
              409: "Conflict", 422: "Invalid input"}
    return render(request, "error.html", session, status=code, code=code, title=titles.get(code, "Error"),
                  message=message)
