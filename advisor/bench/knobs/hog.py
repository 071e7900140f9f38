"""Busy processes beside a bench run (``advisor bench knobs --cpu-hogs N``): the same run on a loaded machine, as
production servers are. Each hog is a child process spinning in a loop; all are ended when the run ends, however
it ends. The machine's load average is recorded at the start and the end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cpu_hogs(n: int) -> Iterator[dict]:
    """``n`` spinning processes while the block runs; yields the record of the load (filled in at the end)."""
    record: dict = {"hogs": n, "loadavg_start": _loadavg()}
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(max(0, n))]
    try:
        yield record
    finally:
        record["loadavg_end"] = _loadavg()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()


def _loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None
