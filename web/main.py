"""The FastAPI app: REST API under /api (its docs at /api/docs and /api/redoc, served locally: ``web.docs``),
server-rendered pages elsewhere.

``create_app``'s lifespan runs the service that ``advisor.service.factory`` assembles (the store, the run executor,
the scheduler; runs left over by a previous process are marked interrupted); all of them stop with the app.
"""

from __future__ import annotations

import gc
import sys
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from advisor.core import quiet
from advisor.core.progress import Say, silent
from advisor.service.factory import serving
from web.docs import install_docs
from web.errors import install_error_handlers
from web.guards import stated_in_schema
from web.schemas import multiline_fields
from web.routes import recommendations, runs, schedules, system, targets, tokens

STATIC = Path(__file__).parent / "static"
SWITCH_INTERVAL_S = 0.0005


def create_app(store_path: str | None = None, *, scheduler: bool = True, max_parallel_runs: int | None = None,
               say: Say = silent, url: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        quiet.install()  # known library warnings stay off the server's terminal (advisor.core.quiet)
        # Tuning runs share this process with the API: a short GIL switch interval keeps a CPU-bound run (a GP
        # fit) from holding requests for 5 ms at every switch
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        with serving(store_path, say=say, scheduler=scheduler, max_parallel_runs=max_parallel_runs,
                     url=url) as service:
            app.state.service = service
            app.state.list_pages = {}
            # everything loaded so far (torch, botorch, the app) lives as long as the server: keep it out of the
            # garbage collector's full passes, which otherwise stall every request for tens of milliseconds
            gc.collect()
            gc.freeze()
            yield

    app = FastAPI(title="db-advisor", version="0.1.0", lifespan=lifespan, docs_url=None,
                  openapi_url="/api/openapi.json", redoc_url=None,
                  description="Tuning advisor for PostgreSQL and MariaDB: targets, workload snapshots, tuning runs, "
                              "recommendations (approve, apply, roll back), nightly schedules. Every route but "
                              "/api/health needs `Authorization: Bearer <token>` (advisor tokens create); viewer "
                              "tokens read, operator tokens also change things, admin tokens also manage tokens.")
    install_error_handlers(app)
    install_docs(app)
    _state_text_rule(app)
    for module in (system, targets, runs, recommendations, schedules, tokens):
        app.include_router(module.router)
    from web.pages import router as pages_router

    app.include_router(pages_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _state_text_rule(app: FastAPI) -> None:
    """The OpenAPI document states what the API refuses: a control character in any text (``web.guards``)."""
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = stated_in_schema(generate(), multiline_fields())
        return app.openapi_schema

    app.openapi = openapi
