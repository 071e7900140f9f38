"""Rendering: Jinja2 templates (autoescaped), the number and time filters, and the headers every page gets
(a strict Content-Security-Policy: scripts and styles only from /static, no framing; no caching)."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from advisor.core.domain import state_word
from advisor.service.auth import Principal
from web.pages.formats import FILTERS

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
templates = Jinja2Templates(directory=str(TEMPLATES))
templates.env.autoescape = True  # every template, whatever its name
templates.env.filters.update(FILTERS)
templates.env.filters["word"] = state_word  # a state as people read it ("rolled back"): the CLI's mapping too
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
