"""Where a search's trials run: the trial executors behind one interface (``local.Executor``), which the one trial
loop (``advisor.tuning.trials.TrialLoop``) hands its configurations to; ``open_executor`` picks one for a run.

- ``local.InProcess``: the default. Over one trial target it runs each trial in the calling thread, as the loop
  always has; over N targets (N thin clones of one replica, N copies of a learned index's harness: ``--parallel
  N``) it runs N trials side by side, one per target, each on a thread of its own (a trial on a shadow waits on its
  server, so threads overlap).
- ``on_ray.RayExecutor``: each slot a Ray actor that builds its own target from a recipe where it runs (a worker
  node's own clone) and runs one trial per task; a worker lost mid-trial is a failed trial with its reason, and
  its slot gets a new worker.

See ``local`` for the contract every executor keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, silent
from advisor.tuning.executors.local import Ended, Executor, InProcess, run_trial

__all__ = ["Ended", "Executor", "InProcess", "open_executor", "ray_address", "run_trial"]


def ray_address(given: str | None) -> str | None:
    """The Ray cluster a run's trials go to: ``given`` (a run's ``--ray``), else the ``ADVISOR_RAY`` setting; None
    (or ``none``/``off``): this process.

    >>> ray_address("auto"), ray_address("none")
    ('auto', None)
    """
    if given is None:
        from advisor.core.settings import get_settings

        given = get_settings().ray
    given = (given or "").strip()
    return None if given.lower() in ("", "none", "off") else given


def open_executor(target: Any, *, parallel: int = 1, ray: str | None = None,
                  copies: Callable[[int], tuple[list[Any], Callable[[], None]]] | None = None,
                  recipe: Callable[[], Any] | None = None, say: Say = silent) -> Executor:
    """Where a run's trials go: on Ray (``ray``: an address or ``auto``) with ``parallel`` workers each building a
    target from ``recipe()``; else in this process on ``target`` and, for ``parallel`` > 1, ``copies(n)``: n more
    targets and what closes them (thin clones of the same replica, copies of a harness)."""
    if ray:
        if recipe is None:
            raise AdvisorError("this kind's trials cannot run on Ray")
        from advisor.tuning.executors.on_ray import RayExecutor

        return RayExecutor(recipe(), max(1, parallel), ray, say)
    if parallel <= 1 or copies is None:
        return InProcess([target])
    more, closing = copies(parallel - 1)
    return InProcess([target, *more], on_close=closing)
