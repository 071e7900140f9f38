"""Logging in with an API token (a session cookie: HttpOnly, SameSite=Lax, Path=/, lifetime from the settings)
and out. Lax rather than Strict so that a link to a recommendation from mail or chat opens it; every
state-changing request is a POST carrying the session's CSRF token, which a cross-site form cannot know.

The login form itself is protected against login CSRF (another site logging the browser into the attacker's
token): before any session, the form carries a random per-browser token that must equal the browser's
``advisor_login_csrf`` cookie (HttpOnly, SameSite=Strict, Path=/login), which a cross-site form neither knows nor
gets sent; a POST without it is refused (403) and logs nobody in."""

from __future__ import annotations

import re
import secrets

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse

from advisor.core.errors import Unauthorized
from advisor.core.settings import get_settings
from web.deps import SESSION_COOKIE, Service, client_of, hold_failed_login
from web.pages.forms import Checked, Field, see_other
from web.pages.templating import render

router = APIRouter()
LOGIN_CSRF_COOKIE = "advisor_login_csrf"


def local_path(target: str | None) -> str:
    """``target`` when it is a path on this site ('/...', not '//host' or '/\\host', no control characters),
    else '/': the login page never sends the browser elsewhere."""
    if (not target or not target.startswith("/") or target.startswith("//") or "\\" in target
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target)):
        return "/"
    return target


def _login_csrf(request: Request) -> str:
    """This browser's login CSRF token: its cookie's, when it holds one of ours, else a new random one."""
    found = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    return found if re.fullmatch(r"[A-Za-z0-9_-]{32}", found) else secrets.token_urlsafe(24)


def _login_page(request: Request, next: str, error: str | None = None, status: int = 200) -> HTMLResponse:
    """The login form, with this browser's login CSRF token in a hidden field and in its cookie."""
    csrf = _login_csrf(request)
    response = render(request, "login.html", status=status, next=local_path(next), error=error, login_csrf=csrf)
    response.set_cookie(LOGIN_CSRF_COOKIE, csrf, path="/login", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.get("/login")
def login_form(request: Request, next: str = "/"):
    return _login_page(request, next)


@router.post("/login")
async def login(request: Request, service: Service, token: Field = "", next: Field = "/", csrf: Field = ""):
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not expected or not csrf or not secrets.compare_digest(csrf.encode(), expected.encode()):
        return _login_page(request, next, status=403, error=(
            "Login refused: this form's CSRF token is missing or does not match this browser's (a form sent from "
            "another site, or cookies are off). Enter the token again in this form."))
    token = token.strip()
    client = client_of(request)
    try:
        if not token:
            raise Unauthorized("enter an API token")
        session_id, _ = await run_in_threadpool(service.login, token, client)  # checked first: never held
    except Unauthorized as e:
        await hold_failed_login(service, client, token)  # a failure is held, without holding a thread
        message = e.message if not e.message.startswith("no API token") else "enter an API token"
        return _login_page(request, next, status=401, error=f"Login failed: {message}.")
    response = RedirectResponse(local_path(next), status_code=303)
    response.set_cookie(SESSION_COOKIE, session_id, max_age=int(get_settings().session_ttl_s), path="/",
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
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
