"""Where the service is assembled, for the CLI and the web server alike.

``build_service`` opens the store and gives it an ``AdvisorService``. The CLI uses it as it is: runs execute in
the caller's thread. The server asks for ``background=True``: a ``RunExecutor`` runs started runs on background
threads, and a ``Scheduler`` (unless ``scheduler=False``) fires the stored schedules. ``start`` and ``stop`` (or
``serving``, both around a block) bring those up and down with the server, with the ``Watcher`` that checks every
applied change's watch every ADVISOR_WATCH_INTERVAL_S (``advisor.service.watch``).

Sandboxes and shadows left behind by an advisor process that was killed (``kill -9``: no exit hook ran) are
stopped and removed (``reap_orphans``), and the runs that process left queued or running are then marked
interrupted with the reason (``recover_runs``), whenever the service is built (so at the start of every CLI
command, and of the server) and every ``REAP_INTERVAL_S`` while the server runs. A run of a live process, or of
one on another host, is left alone.
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
from advisor.service.watch import Watcher
from advisor.storage.store import open_store
from connectors import factory

REAP_INTERVAL_S = 300.0
log = logging.getLogger("advisor.service")


def _cleaning(what: str, clean, said, say: Say) -> list[str]:
    """``clean()``'s results, said with ``said(results)`` when there are any; a failure is logged, never raised:
    cleaning up after others never stops the service."""
    try:
        done = clean()
    except Exception as e:  # noqa: BLE001
        log.warning("looking for %s failed: %s", what, e)
        return []
    if done:
        message = said(done)
        log.info(message)
        say(message)
    return done


def reap_orphans(say: Say | None = None) -> list[str]:
    """Stop and remove the sandboxes and shadows whose owner process is gone; the directories removed, said."""
    return _cleaning("orphaned sandboxes", factory.reap_orphans,
                     lambda d: f"stopped and removed {len(d)} sandbox(es) left behind by a killed advisor process: "
                               f"{', '.join(d)}", say or silent)


def recover_runs(service: AdvisorService) -> list[str]:
    """Mark the runs whose owner process is gone interrupted (``AdvisorService.recover_runs(gone_only=True)``);
    their ids, said."""
    return _cleaning("runs of killed advisor processes", lambda: service.recover_runs(gone_only=True),
                     lambda ids: f"marked {len(ids)} run(s) interrupted: the advisor process running them was "
                                 f"killed before they ended: {', '.join(ids)}", service.say)


class OrphanReaper:
    """``reap_orphans`` and then ``recover_runs`` every ``interval_s`` seconds on a daemon thread, until ``stop``."""

    def __init__(self, service: AdvisorService, interval_s: float = REAP_INTERVAL_S):
        self.service, self.interval_s = service, interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="advisor-reaper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stopped.wait(self.interval_s):
            reap_orphans(self.service.say)
            if not self._stopped.is_set():  # the store closes right after a stop
                recover_runs(self.service)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop the timer and wait (up to ``timeout_s``) for a reaping under way to end, so that the store can be
        closed after it."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)


def build_service(store_path: str | Path | None = None, *, say: Say | None = None, background: bool = False,
                  scheduler: bool = True, max_parallel_runs: int | None = None,
                  remote: bool = True) -> AdvisorService:
    """The service over the store at ``store_path`` (default: ADVISOR_STORE). ``background``: with the run
    executor (``max_parallel_runs`` at once, default ADVISOR_MAX_PARALLEL_RUNS) and, if ``scheduler``, the
    scheduler, both still stopped (``start``). The caller closes the store (``stop``, or ``service.store``).
    First the sandboxes of killed advisor processes are reaped and their runs marked interrupted.
    A DuckDB store that another process holds (``advisor serve``, or another command) is used through that
    process, which answers every call, and taken over when it ends (``advisor.storage.remote``), unless
    ``remote`` is False (then refused in one line naming that process)."""
    reap_orphans(say)
    service = AdvisorService(open_store(store_path, remote=remote, say=say), say)
    recover_runs(service)  # the runs of the processes whose shadows were just reaped (or reaped before)
    if background:
        if max_parallel_runs is None:
            from advisor.core.settings import get_settings

            max_parallel_runs = get_settings().max_parallel_runs
        service.executor = RunExecutor(service.execute_run, max_parallel_runs)
        if scheduler:
            service.scheduler = Scheduler(service)
    return service


def start(service: AdvisorService, reap_interval_s: float = REAP_INTERVAL_S, url: str | None = None) -> list[str]:
    """Start a background service: mark the runs a previous process left unfinished as interrupted (their
    shadows were reaped when the service was built), start reaping orphans (and marking their runs) every
    ``reap_interval_s`` and checking the watches of applied changes, then start the scheduler (which catches up on
    missed fire times). A DuckDB store this process holds answers the other processes of the same user from the
    moment it opened (``Store.serve``), or from the moment this process takes it over; they learn the server's
    ``url`` from it. Returns the ids of the runs marked interrupted here (those of killed processes were marked
    when the service was built; a run of another live process is left to it)."""
    server = getattr(service.store.serve(url), "server", None)
    if server is not None:
        if server.taken:
            service.say("another process holds this store's socket name: the command line cannot use the store "
                        "through this server (it refuses a process of another user)")
    interrupted = service.recover_runs()
    if interrupted:
        service.say(f"{len(interrupted)} run(s) of a previous server were marked interrupted")
    service.reaper = OrphanReaper(service, reap_interval_s)
    service.reaper.start()
    from advisor.core.settings import get_settings

    service.watcher = Watcher(service, get_settings().watch_interval_s).start()  # every applied change is watched
    if service.scheduler is not None:
        service.scheduler.start()
    return interrupted


def stop(service: AdvisorService) -> None:
    """Stop the scheduler, cancel the runs and wait for them to stop their shadows, close the store."""
    try:
        if service.reaper is not None:
            service.reaper.stop()
        if getattr(service, "watcher", None) is not None:
            service.watcher.stop()
        if service.scheduler is not None:
            service.scheduler.shutdown()
        if service.executor is not None:
            service.executor.shutdown()
    finally:
        service.store.close()


@contextmanager
def serving(store_path: str | Path | None = None, *, say: Say | None = None, scheduler: bool = True,
            max_parallel_runs: int | None = None, url: str | None = None) -> Iterator[AdvisorService]:
    """A started background service for the duration of the block (the server's lifetime, at ``url``)."""
    service = build_service(store_path, say=say, background=True, scheduler=scheduler,
                            max_parallel_runs=max_parallel_runs)
    try:
        start(service, url=url)
        yield service
    finally:
        stop(service)
