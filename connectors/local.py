"""Engine-neutral plumbing for local sandbox servers: free loopback ports, process liveness, and the registry of
running sandboxes that an ``atexit`` hook stops (the CLI turns SIGTERM/SIGHUP into a normal exit, so it runs).

Every engine's sandbox registers itself here on start and unregisters on stop, so one ``stop_all()`` cleans up
PostgreSQL and MariaDB servers alike.
"""

from __future__ import annotations

import atexit
import contextlib
import socket
import threading
from typing import Protocol


class _Stoppable(Protocol):
    def stop(self) -> None: ...


_live: set[_Stoppable] = set()
_live_lock = threading.Lock()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid: int) -> bool:
    """Whether a process runs (a zombie, exited but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


def register(sandbox: _Stoppable) -> None:
    """Remember a started sandbox, so that ``stop_all`` stops it."""
    with _live_lock:
        _live.add(sandbox)


def unregister(sandbox: _Stoppable) -> None:
    with _live_lock:
        _live.discard(sandbox)


def stop_all() -> None:
    """Stop every sandbox this process still has running (of any engine)."""
    with _live_lock:
        live = list(_live)
    for sandbox in live:
        with contextlib.suppress(Exception):
            sandbox.stop()


atexit.register(stop_all)
