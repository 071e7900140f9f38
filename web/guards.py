"""Requests refused before routing: a control character (NUL included) in the path or the query string.

No id, name or filter the API knows can hold one (``advisor.core.inputs``), and a store cannot look one up (a
PostgreSQL text value cannot hold NUL), so such a request gets a 400 in the API's error shape (an HTML error page
outside ``/api``), naming the part that held it, whichever store is behind the service. The OpenAPI document says
so: every text parameter and field carries the pattern (``stated_in_schema``).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from advisor.core.inputs import CONTROL, CONTROL_IN_TEXT, control_character

# what a text may hold, as a JSON-schema pattern: no control character (a multiline field: tab, line feed and
# carriage return allowed), the very classes ``advisor.core.inputs.control_character`` uses
ONE_LINE = f"^[^{CONTROL}]*$"
MULTILINE = f"^[^{CONTROL_IN_TEXT}]*$"


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


def stated_in_schema(doc: dict, multiline: set[tuple[str, str]]) -> dict:
    """``doc`` (an OpenAPI document) with the no-control-character pattern on every string parameter and every
    string property of its component schemas; ``multiline``: (schema, property) pairs that may hold line breaks.

    >>> d = {"paths": {"/t/{ref}": {"get": {"parameters": [{"in": "path", "schema": {"type": "string"}}]}}},
    ...      "components": {"schemas": {"Note": {"properties": {"note": {"type": "string"}}}}}}
    >>> out = stated_in_schema(d, {("Note", "note")})
    >>> out["paths"]["/t/{ref}"]["get"]["parameters"][0]["schema"]["pattern"] == ONE_LINE
    True
    >>> out["components"]["schemas"]["Note"]["properties"]["note"]["pattern"] == MULTILINE
    True
    """
    for ops in doc.get("paths", {}).values():
        for op in ops.values():
            for param in op.get("parameters", []) if isinstance(op, dict) else []:
                _patterned(param.get("schema", {}), ONE_LINE)
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        for prop, sub in schema.get("properties", {}).items():
            _patterned(sub, MULTILINE if (name, prop) in multiline else ONE_LINE)
    return doc


def _patterned(schema: dict, pattern: str) -> None:
    """The pattern on a string schema, on each string branch of an anyOf, and on a string array's items."""
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema and "const" not in schema:
        schema["pattern"] = pattern
    for branch in schema.get("anyOf", []):
        _patterned(branch, pattern)
    if schema.get("type") == "array":
        _patterned(schema.get("items", {}), pattern)
