"""Every error as JSON ``{"error", "message", "details"}`` with its status code; pages get HTML instead. An error
nothing here expected is a 500 in the same shape, its traceback only in the server's log: never a bare 500."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from advisor.core.errors import (AdvisorError, Ambiguous, Conflict, Forbidden, InvalidTransition, NotFound,
                                 StoreError, Unauthorized)
from web.deps import LoginRequired
from web.guards import RefuseControlCharacters

STATUS = ((Unauthorized, 401, "unauthorized"), (Forbidden, 403, "forbidden"), (NotFound, 404, "not_found"),
          (InvalidTransition, 409, "conflict"), (Conflict, 409, "conflict"), (Ambiguous, 409, "conflict"),
          (StoreError, 409, "conflict"), (AdvisorError, 400, "bad_request"))
HTTP_KINDS = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
              409: "conflict", 422: "invalid_input"}


def status_of(e: AdvisorError) -> tuple[int, str]:
    return next((code, kind) for cls, code, kind in STATUS if isinstance(e, cls))


def _json(code: int, kind: str, message: str, details=None, headers=None) -> JSONResponse:
    return JSONResponse({"error": kind, "message": message, "details": details}, status_code=code, headers=headers)


def _answer(request: Request, code: int, kind: str, message: str, details=None, headers=None):
    """The error as JSON under /api, else as a page."""
    if not request.url.path.startswith("/api"):
        from web.pages import error_page

        return error_page(request, code, message)
    return _json(code, kind, message, details, headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_middleware(RefuseControlCharacters,
                       respond=lambda scope, message: _answer(Request(scope), 400, "bad_request", message))

    @app.exception_handler(AdvisorError)
    async def advisor_error(request: Request, e: AdvisorError):
        code, kind = status_of(e)
        return _answer(request, code, kind, e.message, headers={"WWW-Authenticate": "Bearer"} if code == 401 else None)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, e: Exception):
        # Starlette re-raises after this answer, so the server logs the traceback once, there
        return _answer(request, 500, "internal_error", f"internal error ({type(e).__name__}); the server's log has "
                                                       "the details")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError):
        details = [{"loc": list(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type", "")}
                   for err in e.errors()]
        first = details[0] if details else {"loc": [], "msg": "invalid input"}
        where = ".".join(str(p) for p in first["loc"] if p != "body")
        return _answer(request, 422, "invalid_input", f"{where}: {first['msg']}" if where else first["msg"], details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException):
        if not request.url.path.startswith("/api"):
            from web.pages import error_page

            message = "no such page" if e.status_code == 404 else str(e.detail)
            return error_page(request, e.status_code, message)
        return _json(e.status_code, HTTP_KINDS.get(e.status_code, "error"), str(e.detail))

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, e: LoginRequired):
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?{urlencode({'next': back})}", status_code=303)
