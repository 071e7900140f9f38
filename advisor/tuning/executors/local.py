"""The executor contract (``Executor``, ``Ended``, ``run_trial``) and the in-process executor (``InProcess``; the
package's docstring says what each executor is for).

The contract: ``slots`` trials run at once at most; ``start(ticket, config)`` runs ``config`` on a free slot;
``wait()`` blocks until at least one trial has ended and returns every ended one (``Ended``: the ticket, the
result, seconds, whether the target restarted, the per-item medians); ``configure(**values)`` sets attributes on
every slot's target (a learned index's safety bound, known once the defaults are measured); ``close()``. A
configuration that fails is a failed trial (the target says so); a target that raises ends the run in this process
as before, the trials that ended beside it recorded first; a Ray worker lost mid-trial is a failed trial with its
reason, never a lost one, and the run goes on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Any

from advisor.core.domain import TrialResult


@dataclass(frozen=True)
class Ended:
    """A trial that ended on a slot: its ticket (what the loop started it as), result, seconds, whether the target
    restarted, the per-statement (or per-operation-type) medians, and which slot ran it."""

    ticket: int
    result: TrialResult
    duration_s: float
    restarted: bool = False
    statement_ms: dict[str, float] | None = None
    slot: int = 0


def run_trial(target: Any, config: Mapping[str, str]) -> tuple[TrialResult, float, bool, dict | None]:
    """One trial on ``target``: ``trial(config)`` and its ``last_ms``. A configuration that fails is the target's
    to say (a failed ``TrialResult``); an error it raises (a shadow that cannot be brought back, a cancelled run's
    progress callback) ends the run, as it always has: in this process it goes up to the loop, on a Ray worker it
    becomes that trial's failure and the slot a new worker (``on_ray``)."""
    result, duration, restarted = target.trial(config)
    return result, duration, restarted, getattr(target, "last_ms", None)


class Executor(ABC):
    """Runs trials on its slots (see the module docstring)."""

    slots: int = 1
    name: str = ""

    @abstractmethod
    def start(self, ticket: int, config: Mapping[str, str]) -> None: ...

    @abstractmethod
    def wait(self) -> list[Ended]: ...

    @property
    @abstractmethod
    def running(self) -> int: ...

    def free(self) -> int:
        return self.slots - self.running

    def configure(self, **values: Any) -> None:
        """Set ``values`` as attributes of every slot's target."""

    def describe(self) -> str:
        """The executor in words, for the run's header."""
        return self.name

    def close(self) -> None:
        return None

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcess(Executor):
    """Trials on ``targets`` in this process: in the calling thread over one target, side by side on threads over
    several (one trial per target at a time)."""

    name = "in-process"

    def __init__(self, targets: Sequence[Any], on_close: Callable[[], None] | None = None):
        if not targets:
            raise ValueError("an executor needs at least one trial target")
        self.targets = list(targets)
        self._on_close = on_close
        self.slots = len(self.targets)
        self._idle = list(range(self.slots))
        self._done: list[Ended] = []
        self._futures: dict[Future, tuple[int, int]] = {}
        self._pool = ThreadPoolExecutor(self.slots, thread_name_prefix="trial") if self.slots > 1 else None
        self._raised: BaseException | None = None

    @property
    def running(self) -> int:
        return self.slots - len(self._idle)

    def start(self, ticket: int, config: Mapping[str, str]) -> None:
        if not self._idle:
            raise RuntimeError("no free slot: wait for a trial to end first")
        slot = self._idle.pop(0)
        if self._pool is None:
            self._done.append(Ended(ticket, *run_trial(self.targets[slot], config), slot=slot))
            return
        self._futures[self._pool.submit(run_trial, self.targets[slot], dict(config))] = (ticket, slot)

    def wait(self) -> list[Ended]:
        if self._done:
            ended, self._done = self._done, []
            self._idle.extend(e.slot for e in ended)
            return ended
        if self._raised is not None:  # the trials that ended beside it are recorded; now the error ends the run
            raised, self._raised = self._raised, None
            raise raised
        if not self._futures:
            return []
        finished, _ = wait_futures(list(self._futures), return_when=FIRST_COMPLETED)
        out = []
        for future in finished:
            ticket, slot = self._futures.pop(future)
            self._idle.append(slot)
            error = future.exception()
            if error is not None:
                self._raised = self._raised or error
                continue
            out.append(Ended(ticket, *future.result(), slot=slot))
        if not out and self._raised is not None:
            raised, self._raised = self._raised, None
            raise raised
        return sorted(out, key=lambda e: e.ticket)

    def configure(self, **values: Any) -> None:
        for target in self.targets:
            for name, value in values.items():
                setattr(target, name, value)

    def describe(self) -> str:
        return "in-process" if self.slots == 1 else f"in-process, {self.slots} trials side by side"

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if self._on_close is not None:
            self._on_close()
            self._on_close = None
