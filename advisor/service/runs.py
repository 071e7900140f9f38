"""Tuning runs started through the service: what a run does (``RunPlan``), its progress as it goes, and the
executor that runs them in the background for the web server and the scheduler.

A run is a row of ``tuning_runs``: queued -> running -> done | failed | cancelled | interrupted (the process
died during it). Cancelling is cooperative: the run stops at its next progress message (``ProgressLog`` raises
``RunCancelled``), and its shadow is stopped on the way out. A target has at most one queued or running run at a time (``AdvisorService.start_run`` refuses a second
with ``Conflict``), so scheduled and manual runs never overlap on one target.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say


class RunCancelled(Exception):
    """The run was cancelled (by an operator, or because the server is stopping). Not an AdvisorError, so that
    no handler of a trial's errors mistakes it for a failed trial and carries on."""

KINDS = ("knobs", "indexes", "rewrites")
DEFAULT_OPTIMIZER = {"knobs": "hibo", "indexes": "ia2", "rewrites": "aurora"}
ACTIVE = ("queued", "running")
LOG_LINES = 60
# the bounds of a plan's whole numbers (the REST schema's as well), and of its index budget
LIMITS = {"trials": (2, 10_000), "seeds": (0, 20), "repeats": (1, 100), "episodes": (1, 100_000),
          "samples": (0, 10_000), "rounds": (1, 100), "max_statements": (1, 1000)}
BUDGET_MB_MAX = 10_000_000
# the fields one kind of run uses only; ``RunPlan.parse`` leaves the other kind's at their defaults
ONLY_FOR = {"knobs": ("trials", "seeds", "repeats"), "indexes": ("budget_mb", "episodes", "samples"),
            "rewrites": ("max_statements",)}


def optimizer_names(kind: str) -> tuple[str, ...]:
    """The registered optimizers of a run kind (for the API's schema and the pages' forms)."""
    from optimizers import registry

    return tuple(sorted(cls.name for cls in registry.available(kind)))


@dataclass(frozen=True)
class RunPlan:
    """One tuning run's settings. Knobs: ``trials`` of a search on a shadow (``optimizer`` hibo, gp, tpe,
    random) or one rule-based configuration (``rules``). Indexes: ``budget_mb`` MiB of new indexes. Rewrites:
    the ``max_statements`` heaviest statements of the workload (a rewrite is never applied)."""

    kind: str
    optimizer: str | None = None
    trials: int = 30
    seeds: int = 3
    repeats: int = 3
    budget_mb: float | None = None
    episodes: int = 300
    samples: int = 48
    rounds: int = 5
    validate: bool = True
    sample_percent: float | None = None
    max_statements: int = 20

    @classmethod
    def parse(cls, fields: Mapping[str, object]) -> "RunPlan":
        """The checked plan of loosely typed fields, the one parser of every adapter: a web form's strings (blank
        means the default), JSON's or the CLI's numbers and booleans (None means the default). Fields of the
        other kind of run (``ONLY_FOR``) are left at their defaults. AdvisorError naming the first bad field."""
        cls._known(fields)
        kind = _coerce("kind", fields.get("kind"))
        if kind is None:
            raise AdvisorError(f"choose what to tune: {', '.join(KINDS)}")
        other = {name for k, names in ONLY_FOR.items() if k != kind for name in names}
        values = {name: _coerce(name, raw) for name, raw in fields.items() if name not in other}
        return cls(**{name: v for name, v in values.items() if v is not None}).checked()

    def checked(self) -> "RunPlan":
        """This plan with its defaults filled in; AdvisorError naming the first bad field."""
        if self.kind not in KINDS:
            raise AdvisorError(f"unknown run kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        optimizer = self.optimizer or DEFAULT_OPTIMIZER[self.kind]
        names = optimizer_names(self.kind)
        if optimizer not in names:
            raise AdvisorError(f"{optimizer!r} is not a {self.kind} optimizer; choose one of {', '.join(names)}")
        if self.kind == "indexes" and (self.budget_mb is None or self.budget_mb <= 0):
            raise AdvisorError("an index run needs a positive budget_mb (MiB of new indexes)")
        if self.budget_mb is not None and self.budget_mb > BUDGET_MB_MAX:
            raise AdvisorError(f"budget_mb must be at most {BUDGET_MB_MAX} (MiB), got {self.budget_mb:g}")
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                raise AdvisorError(f"{name} must be between {low} and {high}, got {getattr(self, name)}")
        if self.sample_percent is not None and not 0 < self.sample_percent <= 100:
            raise AdvisorError(f"sample_percent must be in (0, 100], got {self.sample_percent:g}")
        return dataclasses.replace(self, optimizer=optimizer)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunPlan":
        """A stored plan (``to_dict``) as it was, unchecked."""
        return cls(**cls._known(d))

    @classmethod
    def _known(cls, fields: Mapping[str, object]) -> Mapping[str, object]:
        unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise AdvisorError(f"unknown run option(s): {', '.join(unknown)}")
        return fields


_TEXT = ("kind", "optimizer")
_WHOLE = tuple(LIMITS)
_NUMBER = ("budget_mb", "sample_percent")
_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")


def _coerce(name: str, raw: object) -> object:
    """One field's value as its type; None for a blank or missing one (the default)."""
    if isinstance(raw, str):
        raw = raw.strip()
        if not raw:
            return None
    if raw is None:
        return None
    if name in _TEXT:
        if not isinstance(raw, str):
            raise AdvisorError(f"{name} must be a name, got {raw!r}")
        return raw
    if name == "validate":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lower() in _TRUE + _FALSE:
            return raw.lower() in _TRUE
        raise AdvisorError(f"validate must be true or false, got {str(raw)[:40]!r}")
    if isinstance(raw, bool):
        raise AdvisorError(f"{name} must be a number, got {raw}")
    if name in _WHOLE:
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        try:
            if isinstance(raw, str):
                return int(raw)
        except ValueError:
            pass
        raise AdvisorError(f"{name} must be a whole number, got {str(raw)[:40]!r}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise AdvisorError(f"{name} must be a number, got {str(raw)[:40]!r}") from None
    if not math.isfinite(value):
        raise AdvisorError(f"{name} must be a finite number")
    return value


class ProgressLog:
    """A run's ``say``: every message goes to the run's row (last message, recent lines, elapsed seconds) and on
    to ``echo``. Writes are throttled to one per ``min_interval_s`` except the first and the last."""

    def __init__(self, store, run_id: str, echo: Say, min_interval_s: float = 0.2,
                 cancelled: Callable[[], str | None] = lambda: None):
        self.store, self.run_id, self.echo = store, run_id, echo
        self.cancelled = cancelled
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.min_interval_s = min_interval_s
        self._last_write = 0.0

    def __call__(self, message: str) -> None:
        why = self.cancelled()
        if why:
            raise RunCancelled(why)
        elapsed = time.monotonic() - self.started
        self.lines = [*self.lines[-(LOG_LINES - 1):], f"[{elapsed:7.1f}s] {message}"]
        self.echo(message)
        if time.monotonic() - self._last_write >= self.min_interval_s:
            self.flush()

    def flush(self) -> None:
        self._last_write = time.monotonic()
        self.store.update_run(self.run_id, progress=self.snapshot())

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
    """Runs queued tuning runs on background threads (``max_workers`` at once, one per target by construction),
    at a lower CPU priority than the server (``lower_priority``)."""

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
