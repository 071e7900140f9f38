"""Progress lines on stderr (stdout stays clean for --json): ``[  12.3s] message``; ``heartbeat`` around a long
call says ``still <doing> (N s)`` whenever it has been silent for a few seconds, so no step is silent for more
than 5 s."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

Say = Callable[[str], None]


def reporter(stream=None, quiet: bool = False, watch: bool = False) -> Say:
    """Progress lines ``[  12.3s] message`` on ``stream`` (stderr). With ``watch`` (a command that runs long work
    it does not narrate itself: the benches, training), a watchdog for the process's life says ``still working``
    whenever nothing was said for ``HEARTBEAT_S`` seconds."""
    start = time.monotonic()
    out = stream or sys.stderr
    last = [start]

    def say(message: str) -> None:
        last[0] = time.monotonic()
        if not quiet:
            print(f"[{last[0] - start:7.1f}s] {message}", file=out, flush=True)

    def watchdog() -> None:
        while True:
            time.sleep(max(0.05, last[0] + HEARTBEAT_S - time.monotonic()))
            silent_s = time.monotonic() - last[0]
            if silent_s >= HEARTBEAT_S:
                try:
                    say(f"still working ({silent_s:.0f} s since the last line)")
                except (ValueError, OSError):  # the stream was closed (the command is over): the watch ends
                    return

    if watch and not quiet:
        threading.Thread(target=watchdog, daemon=True, name="progress-watchdog").start()
    return say


def silent(_message: str) -> None:
    return None


HEARTBEAT_S = 4.0  # a heartbeat speaks after this many silent seconds (the house rule: no step silent past 5 s)


@contextlib.contextmanager
def heartbeat(say: Say, doing: str, every_s: float = HEARTBEAT_S) -> Iterator[Say]:
    """Around a long call (compiling, reading keys, building a shadow, training): yields a ``say`` that passes
    its lines on; whenever neither it nor the heartbeat has spoken for ``every_s`` seconds, the heartbeat says
    ``still <doing> (N s)`` (N: seconds since the block began). Lines the block says itself reset the wait, so a
    step that reports on its own is not interrupted. The heartbeat's thread ends with the block. When ``say``
    raises on the heartbeat's thread (a cancelled run's callback), the error is raised on the block's thread at
    its next line, or when the block ends."""
    start = time.monotonic()
    last = [start]
    lock = threading.Lock()
    done = threading.Event()
    raised: list[BaseException] = []

    def passing(message: str) -> None:
        if raised:
            raise raised[0]
        with lock:
            last[0] = time.monotonic()
        say(message)

    def beat() -> None:
        while not done.wait(max(0.01, last[0] + every_s - time.monotonic())):
            now = time.monotonic()
            with lock:
                due = now - last[0] >= every_s
                if due:
                    last[0] = now
            if due and not done.is_set():
                try:
                    say(f"still {doing} ({now - start:.0f} s)")
                except BaseException as e:  # noqa: BLE001 - handed to the block's thread
                    raised.append(e)
                    return

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield passing
    finally:
        done.set()
        thread.join()
    if raised:
        raise raised[0]
