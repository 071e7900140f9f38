"""The API's documentation pages, served without any other host: Swagger UI at /api/docs and ReDoc at /api/redoc
with their JavaScript and CSS from the ``fastapi-offline`` package (mounted at /api/docs-assets), /docs sending
people to /api/docs, and the favicon. Air-gapped hosts, where the databases live, see the same pages as any."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"  # swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js
ASSETS_URL = "/api/docs-assets"
FAVICON = Path(__file__).parent / "static" / "favicon.svg"
FAVICON_URL = "/favicon.ico"
# what the docs pages may load: this server only (their bootstrap scripts and styles are inline; ReDoc's search
# runs in a worker from a blob). A browser never asks another host, not even for ReDoc's "by Redocly" logo.
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
       "frame-ancestors 'none'")


def install_docs(app: FastAPI, docs_url: str = "/api/docs", redoc_url: str = "/api/redoc") -> None:
    """Add the documentation routes to ``app`` (created with ``docs_url=None, redoc_url=None``)."""
    openapi_url = app.openapi_url
    oauth2_redirect = f"{docs_url}/oauth2-redirect"
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get(docs_url, include_in_schema=False)
    def swagger() -> HTMLResponse:
        return _local(get_swagger_ui_html(openapi_url=openapi_url, title=f"{app.title} · REST API",
                                          swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
                                          swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
                                          swagger_favicon_url=FAVICON_URL,
                                          # no call to swagger.io; a token given to Authorize lives in the page
                                          # only (never in the browser's storage, where an admin token would stay)
                                          swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": False},
                                          oauth2_redirect_url=oauth2_redirect))

    @app.get(oauth2_redirect, include_in_schema=False)
    def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    def redoc() -> HTMLResponse:
        return _local(get_redoc_html(openapi_url=openapi_url, title=f"{app.title} · REST API reference",
                                     redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js", redoc_favicon_url=FAVICON_URL,
                                     with_google_fonts=False), docs_url)

    @app.get("/docs", include_in_schema=False)
    def docs() -> RedirectResponse:
        return RedirectResponse(docs_url, status_code=307)

    @app.get(FAVICON_URL, include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(FAVICON, media_type="image/svg+xml")


# above each docs page: the way back to the web UI, and how "Try it out" gets a token (the UI's session is not one)
BAR = ('<nav id="advisor-bar" style="font: 14px sans-serif; padding: 8px 20px; background: #f4f4f4; '
       'border-bottom: 1px solid #ddd"><a href="/">&larr; db-advisor web UI</a> &middot; to try a route: '
       '<b>Authorize</b> with an API token (<code>advisor tokens create --name NAME --role viewer</code>); the '
       'web UI\'s login does not authorize the API{other}</nav>')


def _local(page: HTMLResponse, docs_url: str | None = None) -> HTMLResponse:
    """The page with the bar above it (``docs_url``: the Swagger page, linked from ReDoc's bar), served under the
    docs' content security policy."""
    other = f' &middot; <a href="{docs_url}">try the routes</a>' if docs_url else ""
    body = page.body.decode().replace("<body>", "<body>\n" + BAR.format(other=other), 1)
    return HTMLResponse(body, headers={"Content-Security-Policy": CSP})
