"""Progress lines on stderr (stdout stays clean for --json): ``[  12.3s] message``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Say = Callable[[str], None]


def reporter(stream=None, quiet: bool = False) -> Say:
    start = time.monotonic()
    out = stream or sys.stderr

    def say(message: str) -> None:
        if not quiet:
            print(f"[{time.monotonic() - start:7.1f}s] {message}", file=out, flush=True)

    return say


def silent(_message: str) -> None:
    return None
