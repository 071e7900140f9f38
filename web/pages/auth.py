"""Logging in with an API token (a session cookie: HttpOnly, SameSite=Lax, Path=/, lifetime from the settings)
and out. Lax rather than Strict so that a link to a recommendation from mail or chat opens it; every
state-changing request is a POST carrying the session's CSRF token, which a cross-site form cannot know."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse

from advisor.core.errors import Unauthorized
from advisor.core.settings import get_settings
from web.deps import SESSION_COOKIE, Service, client_of
from web.pages.forms import Checked, Field, see_other
from web.pages.templating import render

router = APIRouter()


def local_path(target: str | None) -> str:
    """``target`` when it is a path on this site ('/...', not '//host' or '/\\host', no control characters),
    else '/': the login page never sends the browser elsewhere."""
    if (not target or not target.startswith("/") or target.startswith("//") or "\\" in target
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target)):
        return "/"
    return target


@router.get("/login")
def login_form(request: Request, next: str = "/"):
    return render(request, "login.html", next=local_path(next), error=None)


@router.post("/login")
async def login(request: Request, service: Service, token: Field = "", next: Field = "/"):
    token = token.strip()
    client = client_of(request)
    delay = service.login_delay(client)  # a client that failed a few times waits, without holding a thread
    if delay:
        await asyncio.sleep(delay)
    try:
        if not token:
            raise Unauthorized("enter an API token")
        session_id, _ = await run_in_threadpool(service.login, token, client)
    except Unauthorized as e:
        message = e.message if not e.message.startswith("no API token") else "enter an API token"
        return render(request, "login.html", status=401, next=local_path(next), error=f"Login failed: {message}.")
    response = RedirectResponse(local_path(next), status_code=303)
    response.set_cookie(SESSION_COOKIE, session_id, max_age=int(get_settings().session_ttl_s), path="/",
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    return response


@router.post("/logout")
def logout(request: Request, service: Service, _: Checked):
    service.logout(request.cookies.get(SESSION_COOKIE, ""))
    response = see_other("/login")
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response


@router.get("/logout")
def logout_by_get():
    return see_other("/")  # logging out is a POST with the CSRF token (a GET could be forged by any page)
