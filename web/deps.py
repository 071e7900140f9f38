"""FastAPI dependencies: the service, and the principal behind a request (Bearer token for the API, the
session cookie for pages), as ``Annotated`` aliases."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Annotated

from fastapi import Depends, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from advisor.service.auth import Principal
from advisor.core.errors import Unauthorized
from advisor.core.settings import get_settings
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


class TrustedProxies:
    """The reverse proxies whose forwarded headers are believed (``ADVISOR_TRUSTED_PROXIES``), read as uvicorn reads
    its ``forwarded_allow_ips``: addresses, networks (CIDR), other names literally, ``*`` for any. Empty: none."""

    def __init__(self, raw: str):
        items = [item.strip() for item in raw.split(",") if item.strip()]
        self.any = items == ["*"]
        self.literals: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for item in items:
            try:
                self.networks.append(ipaddress.ip_network(item))  # '10.0.0.1/24' is no network (nor for uvicorn)
            except ValueError:
                self.literals.add(item)

    def __bool__(self) -> bool:
        return self.any or bool(self.literals or self.networks)

    def __contains__(self, host: str) -> bool:
        if not host:
            return False
        if self.any:
            return True
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return host in self.literals
        mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:10.0.0.1 from a dual-stack socket is 10.0.0.1
        return any(ip in net or (mapped is not None and mapped in net) for net in self.networks)


def trusted_proxies(request: Request) -> TrustedProxies:
    """The app's trusted proxies, read from the settings once per app."""
    found = getattr(request.app.state, "trusted_proxies", None)
    if found is None:
        found = request.app.state.trusted_proxies = TrustedProxies(get_settings().trusted_proxies)
    return found


def _hop_host(hop: str) -> str:
    """The address of one X-Forwarded-For entry ('10.0.0.1', '10.0.0.1:5000', '[::1]:5000', '::1')."""
    hop = hop.strip()
    if hop.startswith("["):
        return hop[1:hop.find("]")] if "]" in hop else hop
    return hop.rsplit(":", 1)[0] if hop.count(":") == 1 else hop


def client_of(request: Request) -> str:
    """The client's address, for the failed-login throttle and the audit: the peer that connected, unless it is a
    trusted proxy; then the last address in X-Forwarded-For that is not a trusted proxy (each proxy appends the
    address it saw, so what a client wrote into the header itself is never taken while a proxy appended after it).
    Without trusted proxies (the default) no forwarded header is believed."""
    peer = request.client.host if request.client else "unknown"
    trusted = trusted_proxies(request)
    if not trusted or peer not in trusted:
        return peer
    hops = [host for value in request.headers.getlist("x-forwarded-for") for hop in value.split(",")
            if (host := _hop_host(hop))]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop if _is_address(hop) else peer  # a proxy appends addresses: anything else is made up
    return hops[0] if hops and _is_address(hops[0]) else peer  # every hop trusted: the first, as uvicorn takes it


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


async def hold_failed_login(service: AdvisorService, client: str, secret: str | None) -> float:
    """Hold the answer to a failed login for as long as the recent failures of its client and token prefix say,
    without holding a worker thread (guessing tokens is slow); the seconds held. Only failures are held."""
    delay = service.login_delay(client, secret) if secret else 0.0
    if delay:
        await asyncio.sleep(delay)
    return delay


# the API's one security scheme, declared in the OpenAPI document on every route that needs a token (so /api/docs
# has an Authorize button); the token itself is read and checked by ``api_principal``, with this service's answers
BEARER = HTTPBearer(auto_error=False, scheme_name="token", bearerFormat="API token",
                    description="an API token (`advisor tokens create --name NAME --role viewer|operator|admin`), sent "
                                "as `Authorization: Bearer <token>`; on /api/docs: Authorize, paste it. The web UI's "
                                "login session does not authorize the API")


async def api_principal(request: Request, service: Service,
                        _declared: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]) -> Principal:
    """The token's principal. The token is checked at once, and a valid one is answered at once; the answer to an
    unknown or revoked one is held (``hold_failed_login``); failures are audited by the service."""
    client, secret = client_of(request), bearer(request)
    try:
        return service.authenticate(secret, client)
    except Unauthorized:
        await hold_failed_login(service, client, secret)
        raise


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
