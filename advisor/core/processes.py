"""Which process owns something the store records (a tuning run, a claim on production), and whether that
process still runs: its PID, its start time (so a reused PID is not taken for the owner) and its host.

>>> me = this_process()
>>> alive(me), alive({**me, "started": me["started"] + 1}), alive({**me, "host": "elsewhere"})
(True, False, None)
>>> alive(None) is None
True
"""

from __future__ import annotations

import os
import socket


def _started(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in {"Z", "X"}:  # exited, not yet reaped
        return None
    return int(fields[19])


def this_process() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": _started(os.getpid())}


def alive(owner: dict | None) -> bool | None:
    """True when the owner process still runs, False when it is gone, None when that cannot be told (another
    host, or nothing recorded)."""
    if not owner or owner.get("host") != socket.gethostname() or not isinstance(owner.get("pid"), int):
        return None
    started = _started(owner["pid"])
    if started is None:
        return False
    return owner.get("started") in (None, started)
