"""Where the service is assembled, for the CLI and the web server alike.

``build_service`` opens the store and gives it an ``AdvisorService``. The CLI uses it as it is: runs execute in
the caller's thread. The server asks for ``background=True``: a ``RunExecutor`` runs started runs on background
threads, and a ``Scheduler`` (unless ``scheduler=False``) fires the stored schedules. ``start`` and ``stop`` (or
``serving``, both around a block) bring those up and down with the server.

Sandboxes and shadows left behind by an advisor process that was killed (``kill -9``: no exit hook ran) are
stopped and removed (``reap_orphans``) whenever the service is built (so at the start of every CLI command that
starts shadows, and of the server), and every ``REAP_INTERVAL_S`` while the server runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from advisor.core.progress import Say, silent
from advisor.service.runs import RunExecutor
from advisor.service.scheduling import Scheduler
from advisor.service.service import AdvisorService
from advisor.storage.store import open_store
from connectors import factory

REAP_INTERVAL_S = 300.0
log = logging.getLogger("advisor.service")


def reap_orphans(say: Say | None = None) -> list[str]:
    """Stop and remove the sandboxes and shadows whose owner process is gone; the directories removed, said."""
    try:
        reaped = factory.reap_orphans()
    except Exception as e:  # noqa: BLE001 - cleaning up after others never stops the service
        log.warning("looking for orphaned sandboxes failed: %s", e)
        return []
    if reaped:
        message = (f"stopped and removed {len(reaped)} sandbox(es) left behind by a killed advisor process: "
                   f"{', '.join(reaped)}")
        log.info(message)
        (say or silent)(message)
    return reaped


class OrphanReaper:
    """``reap_orphans`` every ``interval_s`` seconds on a daemon thread, until ``stop``."""

    def __init__(self, say: Say | None = None, interval_s: float = REAP_INTERVAL_S):
        self.say, self.interval_s = say, interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="advisor-reaper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stopped.wait(self.interval_s):
            reap_orphans(self.say)

    def stop(self) -> None:
        self._stopped.set()


def build_service(store_path: str | Path | None = None, *, say: Say | None = None, background: bool = False,
                  scheduler: bool = True, max_parallel_runs: int | None = None) -> AdvisorService:
    """The service over the store at ``store_path`` (default: ADVISOR_STORE). ``background``: with the run
    executor (``max_parallel_runs`` at once, default ADVISOR_MAX_PARALLEL_RUNS) and, if ``scheduler``, the
    scheduler, both still stopped (``start``). The caller closes the store (``stop``, or ``service.store``)."""
    reap_orphans(say)
    service = AdvisorService(open_store(store_path), say)
    if background:
        if max_parallel_runs is None:
            from advisor.core.settings import get_settings

            max_parallel_runs = get_settings().max_parallel_runs
        service.executor = RunExecutor(service.execute_run, max_parallel_runs)
        if scheduler:
            service.scheduler = Scheduler(service)
    return service


def start(service: AdvisorService, reap_interval_s: float = REAP_INTERVAL_S) -> list[str]:
    """Start a background service: mark the runs a previous process left unfinished as interrupted (their
    shadows were reaped when the service was built), start reaping orphans every ``reap_interval_s``, then start
    the scheduler (which catches up on missed fire times). Returns the interrupted runs' ids."""
    interrupted = service.recover_runs()
    if interrupted:
        service.say(f"{len(interrupted)} run(s) of a previous server were marked interrupted")
    service.reaper = OrphanReaper(service.say, reap_interval_s)
    service.reaper.start()
    if service.scheduler is not None:
        service.scheduler.start()
    return interrupted


def stop(service: AdvisorService) -> None:
    """Stop the scheduler, cancel the runs and wait for them to stop their shadows, close the store."""
    try:
        if service.reaper is not None:
            service.reaper.stop()
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
