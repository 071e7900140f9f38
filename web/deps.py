"""FastAPI dependencies: the service, and the principal behind a request (Bearer token for the API, the
session cookie for pages), as ``Annotated`` aliases."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Query, Request

from advisor.service.auth import Principal
from advisor.core.errors import Unauthorized
from advisor.service.service import AdvisorService

SESSION_COOKIE = "advisor_session"


# The dependencies are coroutines: they do no I/O but a store read on a token's first use, and a sync dependency
# would cost every request a hop to the thread pool.
async def get_service(request: Request) -> AdvisorService:
    return request.app.state.service


Service = Annotated[AdvisorService, Depends(get_service)]


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def client_of(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def api_principal(request: Request, service: Service) -> Principal:
    """The token's principal. A client whose recent tokens failed waits before it is answered (without
    holding a worker thread), so guessing tokens is slow; failures are audited by the service."""
    client = client_of(request)
    delay = service.login_delay(client)
    if delay:
        await asyncio.sleep(delay)
    return service.authenticate(bearer(request), client)


async def viewer(who: Annotated[Principal, Depends(api_principal)]) -> Principal:
    who.require("viewer")
    return who


async def operator(who: Annotated[Principal, Depends(api_principal)]) -> Principal:
    who.require("operator")
    return who


async def admin(who: Annotated[Principal, Depends(api_principal)]) -> Principal:
    who.require("admin")
    return who


Viewer = Annotated[Principal, Depends(viewer)]
Operator = Annotated[Principal, Depends(operator)]
Admin = Annotated[Principal, Depends(admin)]
Limit = Annotated[int, Query(ge=1, le=500, description="page size")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="items to skip")]


def page_session(request: Request, service: Service) -> tuple[Principal, str]:
    """(principal, CSRF token) of the browser's session; Unauthorized sends the browser to the login page."""
    try:
        return service.session(request.cookies.get(SESSION_COOKIE))
    except Unauthorized:
        raise LoginRequired() from None


class LoginRequired(Exception):
    """A page was asked for without a live session."""


PageSession = Annotated[tuple[Principal, str], Depends(page_session)]
