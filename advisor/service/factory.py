"""Where the service is assembled, for the CLI and the web server alike.

``build_service`` opens the store and gives it an ``AdvisorService``. The CLI uses it as it is: runs execute in
the caller's thread. The server asks for ``background=True``: a ``RunExecutor`` runs started runs on background
threads, and a ``Scheduler`` (unless ``scheduler=False``) fires the stored schedules. ``start`` and ``stop`` (or
``serving``, both around a block) bring those up and down with the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from advisor.core.progress import Say
from advisor.service.runs import RunExecutor
from advisor.service.scheduling import Scheduler
from advisor.service.service import AdvisorService
from advisor.storage.store import open_store


def build_service(store_path: str | Path | None = None, *, say: Say | None = None, background: bool = False,
                  scheduler: bool = True, max_parallel_runs: int | None = None) -> AdvisorService:
    """The service over the store at ``store_path`` (default: ADVISOR_STORE). ``background``: with the run
    executor (``max_parallel_runs`` at once, default ADVISOR_MAX_PARALLEL_RUNS) and, if ``scheduler``, the
    scheduler, both still stopped (``start``). The caller closes the store (``stop``, or ``service.store``)."""
    service = AdvisorService(open_store(store_path), say)
    if background:
        if max_parallel_runs is None:
            from advisor.core.settings import get_settings

            max_parallel_runs = get_settings().max_parallel_runs
        service.executor = RunExecutor(service.execute_run, max_parallel_runs)
        if scheduler:
            service.scheduler = Scheduler(service)
    return service


def start(service: AdvisorService) -> list[str]:
    """Start a background service: mark the runs a previous process left unfinished as interrupted, then start
    the scheduler (which catches up on missed fire times). Returns the interrupted runs' ids."""
    interrupted = service.recover_runs()
    if interrupted:
        service.say(f"{len(interrupted)} run(s) of a previous server were marked interrupted")
    if service.scheduler is not None:
        service.scheduler.start()
    return interrupted


def stop(service: AdvisorService) -> None:
    """Stop the scheduler, cancel the runs and wait for them to stop their shadows, close the store."""
    try:
        if service.scheduler is not None:
            service.scheduler.shutdown()
        if service.executor is not None:
            service.executor.shutdown()
    finally:
        service.store.close()


@contextmanager
def serving(store_path: str | Path | None = None, *, say: Say | None = None, scheduler: bool = True,
            max_parallel_runs: int | None = None) -> Iterator[AdvisorService]:
    """A started background service for the duration of the block (the server's lifetime)."""
    service = build_service(store_path, say=say, background=True, scheduler=scheduler,
                            max_parallel_runs=max_parallel_runs)
    try:
        start(service)
        yield service
    finally:
        stop(service)
