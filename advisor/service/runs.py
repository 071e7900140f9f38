"""Tuning runs started through the service: what a run does (``RunPlan``), its progress as it goes, and the
executor that runs them in the background for the web server and the scheduler.

A run is a row of ``tuning_runs``: queued -> running -> done | failed | cancelled | interrupted (the process
died during it). Cancelling is cooperative: the run stops at its next progress message (``ProgressLog`` raises
``RunCancelled``), and its shadow is stopped on the way out. A target has at most one queued or running run at a time (``AdvisorService.start_run`` refuses a second
with ``Conflict``), so scheduled and manual runs never overlap on one target.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from advisor.core.progress import Say
from advisor.tuning import kinds
from advisor.tuning.kinds import all_options
from advisor.tuning.plan import COMMON, RunPlan

__all__ = ["ACTIVE", "RUN_STATES", "COMMON", "ProgressLog", "RunCancelled", "RunExecutor",
           "RunPlan", "all_options", "default_optimizers", "kinds", "optimizer_names"]


class RunCancelled(Exception):
    """The run was cancelled (by an operator, or because the server is stopping). Not an AdvisorError, so that
    no handler of a trial's errors mistakes it for a failed trial and carries on."""

ACTIVE = ("queued", "running")
RUN_STATES = (*ACTIVE, "done", "failed", "cancelled", "interrupted", "skipped", "missed")  # every state a run row has
LOG_LINES = 60


def optimizer_names(kind: str) -> tuple[str, ...]:
    """The listed optimizers of a run kind (for the API's schema and the pages' forms)."""
    return kinds.get(kind).optimizer_names()


def default_optimizers() -> dict[str, str | None]:
    return {k.name: k.default_optimizer for k in kinds.kinds()}


class ProgressLog:
    """A run's ``say``: every message goes to the run's row (last message, recent lines, elapsed seconds) and on
    to ``echo``. Writes are throttled to one per ``min_interval_s`` except the first and the last. Every run
    records its log so, whoever starts it: a run the service executes (``run_id`` known from the start), and a
    run that ``AdvisorService.tune`` opens for the command line, whose lines before its row exists (observing,
    the shadows' plan) are kept until ``attach`` names the row."""

    def __init__(self, store, run_id: str | None, echo: Say, min_interval_s: float = 0.2,
                 cancelled: Callable[[], str | None] = lambda: None):
        self.store, self.run_id, self.echo = store, run_id, echo
        self.cancelled = cancelled
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.min_interval_s = min_interval_s
        self._last_write = 0.0
        self._lines_lock = threading.Lock()  # trials side by side say things from their own threads

    def __call__(self, message: str) -> None:
        why = self.cancelled()
        if why:
            raise RunCancelled(why)
        elapsed = time.monotonic() - self.started
        with self._lines_lock:
            self.lines = [*self.lines[-(LOG_LINES - 1):], f"[{elapsed:7.1f}s] {message}"]
        self.echo(message)
        if time.monotonic() - self._last_write >= self.min_interval_s:
            self.flush()

    def attach(self, run_id: str) -> None:
        """Record into the run ``run_id`` from now on, the lines said so far included."""
        self.run_id = run_id
        self.flush()

    def flush(self) -> None:
        if self.run_id is None:  # no row yet: the lines wait for ``attach``
            return
        self._last_write = time.monotonic()
        try:
            self.store.update_run(self.run_id, progress=self.snapshot())
        except Exception:  # noqa: BLE001 - a progress row not written (a write conflict with the run's own update
            # of the row, from the heartbeat's thread) never fails the run: the next line writes it
            self._last_write = 0.0

    def snapshot(self) -> dict:
        return {"message": self.lines[-1].split("] ", 1)[1] if self.lines else "", "log": self.lines,
                "elapsed_s": round(time.monotonic() - self.started, 1)}


RUN_NICE = 10  # how much lower than the server's the CPU priority of background tuning is


def lower_priority(nice: int = RUN_NICE) -> None:
    """Lower the CPU priority of the calling thread (Linux: niceness is per thread) and so of every thread and
    process it starts, shadow servers included: the API and the production database keep the CPU they need
    while a tuning run goes on. A/B measurements on the shadow are relative, so both arms see the same
    contention."""
    try:
        base = os.getpriority(os.PRIO_PROCESS, os.getpid())  # the main thread's: calling this twice is harmless
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, base + nice))
    except (AttributeError, OSError):  # not Linux, or not allowed: run at the server's priority
        pass


class RunExecutor:
    """Runs queued tuning runs on background threads (``max_workers`` at once, one per target by construction: a
    target whose server stopped answering holds its own run's thread until its connections give up, never another
    target's run, ``connectors.deadlines``), at a lower CPU priority than the server (``lower_priority``)."""

    def __init__(self, execute: Callable[[str], object], max_workers: int = 1):
        self._execute = execute
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="advisor-run",
                                        initializer=lower_priority)
        self._futures: dict[str, Future] = {}
        self._cancelled: dict[str, str] = {}
        self._lock = threading.Lock()

    def submit(self, run_id: str) -> None:
        with self._lock:
            self._futures[run_id] = self._pool.submit(self._execute, run_id)

    def submit_job(self, key: str, job: Callable[[], object]) -> None:
        """Run ``job`` on the same threads as runs (building a target's replica): the server's shutdown waits for
        it too, and its progress callback sees ``cancelled("*")`` when the server stops."""
        with self._lock:
            self._futures[key] = self._pool.submit(job)

    def cancel(self, run_id: str, why: str) -> None:
        self._cancelled[run_id] = why

    def cancelled(self, run_id: str) -> str | None:
        return self._cancelled.get(run_id) or self._cancelled.get("*")

    def shutdown(self, timeout_s: float = 60.0) -> None:
        """Cancel every run and wait (up to ``timeout_s``) for the running ones to stop their shadows."""
        self._cancelled["*"] = "the server stopped"
        self._pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + timeout_s
        for future in list(self._futures.values()):
            try:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - cancelled, failed or still going: nothing more to do here
                pass
