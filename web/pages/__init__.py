"""Server-rendered pages (Jinja2 templates, no build step). Placeholder: being written."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)


def error_page(request: Request, code: int, message: str) -> HTMLResponse:
    return HTMLResponse(f"<h1>{code}</h1><p>{message}</p>", status_code=code)
