"""Helpers for the pages' forms: the CSRF check every state-changing POST goes through, field parsing with
clear messages (never FastAPI's JSON 422), and the 303 redirect after an action."""

from __future__ import annotations

import secrets
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, Form, Request
from fastapi.responses import RedirectResponse

from advisor.service.auth import Principal
from advisor.core.errors import AdvisorError, Forbidden
from web.deps import PageSession


def csrf_checked(session: PageSession, csrf: Annotated[str, Form()] = "") -> tuple[Principal, str]:
    """The session, once the form's ``csrf`` field equals the session's token (403 page otherwise)."""
    expected = session[1]
    if not csrf or not secrets.compare_digest(csrf.encode(), expected.encode()):
        raise Forbidden("this form's CSRF token is missing or does not match your session; reload the page and "
                        "submit it again")
    return session


Checked = Annotated[tuple[Principal, str], Depends(csrf_checked)]
Field = Annotated[str, Form()]


async def _plan_fields(request: Request) -> dict[str, str]:
    """A run or schedule form's plan fields (``kind`` and the plan options it holds), as the strings it sent."""
    from advisor.service.runs import all_options

    form = await request.form()
    return {name: str(form[name]) for name in ("kind", *all_options()) if name in form}


PlanFields = Annotated[dict[str, str], Depends(_plan_fields)]


def see_other(path: str, **query) -> RedirectResponse:
    q = {k: v for k, v in query.items() if v not in (None, "")}
    return RedirectResponse(path + (f"?{urlencode(q)}" if q else ""), status_code=303)


def integer(name: str, raw: str | None, default: int | None = None, *, low: int | None = None,
            high: int | None = None) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise AdvisorError(f"{name} must be a whole number, got {raw[:40]!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise AdvisorError(f"{name} must be between {low} and {high}, got {value}")
    return value


def choice(name: str, raw: str | None, allowed, default: str | None = None) -> str | None:
    raw = (raw or "").strip()
    if not raw:
        return default
    if raw not in allowed:
        raise AdvisorError(f"{name} must be one of {', '.join(allowed)}, got {raw[:40]!r}")
    return raw
