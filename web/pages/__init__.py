"""Server-rendered pages: Jinja2 templates (autoescaped) in web/templates, one stylesheet and one small script
in web/static, no build step.

Pages call only ``AdvisorService``; the browser's session is a cookie (``web.pages.auth``). Every
state-changing form is a POST carrying the session's CSRF token (``web.pages.forms.csrf_checked``); GET never
changes anything. Modules: ``auth`` (login, logout), ``targets`` (home), ``recommendations``, ``runs``,
``schedules``; ``plots`` draws inline SVG, ``formats`` formats numbers and times, ``templating`` renders.
"""

from __future__ import annotations

from fastapi import APIRouter

from web.pages import auth, recommendations, runs, schedules, targets
from web.pages.templating import error_page

router = APIRouter(include_in_schema=False)
for _module in (auth, targets, recommendations, runs, schedules):
    router.include_router(_module.router)

__all__ = ["router", "error_page"]
