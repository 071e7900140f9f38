"""Requests refused before routing: a control character (NUL included) in the path or the query string.

No id, name or filter the API knows can hold one (``advisor.core.inputs``), and a store cannot look one up (a
PostgreSQL text value cannot hold NUL), so such a request gets a 400 in the API's error shape (an HTML error page
outside ``/api``), naming the part that held it, whichever store is behind the service.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from advisor.core.inputs import control_character


def refused_part(scope: Scope) -> str | None:
    """What in the request's target holds a control character ("the path", "query parameter 'target'"), or None.

    >>> refused_part({"path": "/api/targets/a\\x00", "query_string": b""})
    'the path (U+0000)'
    >>> refused_part({"path": "/api/runs", "query_string": b"target=x%00y&state=done"})
    "query parameter 'target' (U+0000)"
    >>> refused_part({"path": "/api/runs", "query_string": b"target=shop"}) is None
    True
    """
    bad = control_character(scope.get("path", ""))
    if bad:
        return f"the path ({bad})"
    raw = scope.get("query_string", b"").decode("latin-1")
    for key, value in parse_qsl(raw, keep_blank_values=True):
        bad = control_character(key) or control_character(value)
        if bad:
            shown = key.encode("unicode_escape").decode()[:40]
            return f"query parameter {shown!r} ({bad})"
    return None


class RefuseControlCharacters:
    """ASGI middleware: ``refused_part`` of a request answers 400 before any route or dependency runs."""

    def __init__(self, app: ASGIApp, respond) -> None:
        self.app = app
        self.respond = respond  # (request path, message) -> a Starlette response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            part = refused_part(scope)
            if part is not None:
                response = self.respond(scope, f"a control character is not allowed in {part}")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
