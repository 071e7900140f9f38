"""The CPU priority measurements run at, so that a busy machine slows the measurement less than it slows its
neighbours.

On a shared host, every process that wants a core gets a fair share of it: beside two processes that keep both
cores busy, a shadow's server gets about two thirds of a core, in slices, and a statement of a few milliseconds
waits a slice or two at random. That noise is the same in both arms on average, but it widens every interval and
lets a few rounds decide by luck. Linux gives a process with a lower nice value a larger share: at nice -10 against
nice 0 the weights are about 9 to 1, so the measured process runs almost as if it were alone.

So every server the project starts (shadows, clones, sandboxes: ``server_prefix`` before its start command, which
its processes inherit) and every thread that times statements (``raise_this_thread``, or ``raised`` for a block of a thread that lives on) run at
``ADVISOR_MEASURE_NICE`` (-10 by default; 0 leaves priorities alone, as a positive value does). Warm replicas,
which only follow their targets, keep the usual priority. Lowering a nice value needs root or
CAP_SYS_NICE; where the advisor has neither, nothing is changed and ``status()`` says so, which the measured line
of every verdict shows.

>>> status_for(-10, True), status_for(-10, False), status_for(0, True)
('nice -10', 'nice 0 (raising the priority is not permitted)', 'nice 0')
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import threading
from collections.abc import Iterator

from advisor.core.settings import get_settings


def wanted() -> int:
    """The nice value measurements should run at (``ADVISOR_MEASURE_NICE``), within -20..0: a positive value would
    lower a thread's priority for good (raising it back needs the privilege a raise needs), so it counts as 0."""
    return max(-20, min(0, int(get_settings().measure_nice)))


@functools.lru_cache(maxsize=4)
def permitted(nice: int) -> bool:
    """Whether this process may run a thread at ``nice``: tried on a short-lived thread of its own, so nothing
    of the caller's changes."""
    if nice >= 0:
        return True
    if not hasattr(os, "setpriority"):
        return False
    answer: list[bool] = []

    def probe() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
            answer.append(True)
        except OSError:
            answer.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join()
    return bool(answer and answer[0])


def status_for(nice: int, allowed: bool) -> str:
    """What the measured line says of the priority."""
    if nice >= 0:
        return "nice 0"
    return f"nice {nice}" if allowed else "nice 0 (raising the priority is not permitted)"


def status() -> str:
    """The priority measurements run at here, as the measured line shows it."""
    nice = wanted()
    return status_for(nice, permitted(nice))


def raise_this_thread() -> bool:
    """Run the calling thread at the wanted nice value (a thread that times statements; Linux keeps a nice value
    per thread, so no other thread changes). False when it was not permitted or not wanted."""
    nice = wanted()
    if nice == 0 or not permitted(nice):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        return True
    except OSError:
        return False


@contextlib.contextmanager
def raised() -> Iterator[bool]:
    """The calling thread at the wanted nice value while the block runs, and back at its own after (a thread that
    lives on, such as an in-process harness's); yields whether it was raised."""
    tid = threading.get_native_id()
    try:
        before = os.getpriority(os.PRIO_PROCESS, tid)
    except (OSError, AttributeError):
        yield False
        return
    up = raise_this_thread()
    try:
        yield up
    finally:
        if up:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, before)


def server_prefix() -> list[str]:
    """The words to put before a server's start command so that the server and every process it starts run at the
    wanted nice value (``nice -n N``); none when not wanted or not permitted."""
    nice = wanted()
    if nice == 0 or not permitted(nice) or shutil.which("nice") is None:
        return []
    return ["nice", "-n", str(nice)]
