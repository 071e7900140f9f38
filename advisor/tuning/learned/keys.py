"""Where a learned index's keys come from (``--keys SOURCE``): ``synthetic:NAME[:N]`` (a generated key set of
``workloads.learned.keysets.SYNTHETIC``, N keys, default ``SYNTHETIC_KEYS``), ``[schema.]table.column`` (an integer
column of the target, read through its connector, at most ``MAX_KEYS`` distinct values), or a file (one uint64 per
line, or SOSD's binary format). Keys come back sorted, unique, uint64.

>>> kind_of("synthetic:books:20000"), kind_of("public.orders.o_orderkey"), kind_of("./keys.txt")
('synthetic', 'column', 'file')
>>> kind_of("books")
Traceback (most recent call last):
...
advisor.core.errors.AdvisorError: unknown key source 'books': give synthetic:NAME[:N], [schema.]table.column or a file path
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from advisor.core.errors import AdvisorError

SYNTHETIC_KEYS = 100_000
MAX_KEYS = 2_000_000
MIN_KEYS = 1_000
COLUMN = re.compile(r"^[A-Za-z_][\w$]*(\.[A-Za-z_][\w$]*){1,2}$")


def kind_of(source: str) -> str:
    """``synthetic``, ``column`` or ``file``; AdvisorError for anything else (nothing is read here)."""
    text = (source or "").strip()
    if text.startswith("synthetic:"):
        return "synthetic"
    if "/" in text or Path(text).is_file():
        return "file"
    if COLUMN.match(text):
        return "column"
    raise AdvisorError(f"unknown key source {text[:60]!r}: give synthetic:NAME[:N], [schema.]table.column or a "
                       "file path")


def check(source: str) -> None:
    """What can be checked of a source before any work: a known synthetic name and count, a readable file."""
    kind = kind_of(source)
    if kind == "synthetic":
        _synthetic_args(source)
    elif kind == "file":
        path = Path(source.strip())
        if not path.is_file():
            raise AdvisorError(f"key file {source.strip()[:80]!r} does not exist or is not a file")


def _synthetic_args(source: str) -> tuple[str, int]:
    from workloads.learned.keysets import SYNTHETIC

    _, name, *rest = source.strip().split(":")
    if name not in SYNTHETIC:
        raise AdvisorError(f"unknown synthetic key set {name!r}; choose one of {', '.join(SYNTHETIC)}")
    try:
        n = int(rest[0]) if rest else SYNTHETIC_KEYS
    except ValueError:
        raise AdvisorError(f"key count {rest[0][:20]!r} of {source.strip()[:40]!r} is not a whole number") from None
    if len(rest) > 1 or not MIN_KEYS <= n <= MAX_KEYS:
        raise AdvisorError(f"synthetic:{name}:N takes one key count from {MIN_KEYS} to {MAX_KEYS}")
    return name, n


def read(source: str, connector=None, seed: int = 0) -> np.ndarray:
    """The keys of ``source`` (``connector``: the target's, for a column); AdvisorError naming what is wrong."""
    kind = kind_of(source)
    text = source.strip()
    if kind == "synthetic":
        from workloads.learned.keysets import synthetic

        name, n = _synthetic_args(text)
        keys = synthetic(name, n, seed)
    elif kind == "file":
        from workloads.learned.keysets import read_keys

        check(text)
        try:
            keys = read_keys(text)
        except (OSError, ValueError) as e:
            raise AdvisorError(f"cannot read keys from {text[:80]!r}: {e}") from None
    else:
        if connector is None:
            raise AdvisorError(f"keys from column {text!r} need a target database")
        table, column = text.rsplit(".", 1)
        values = connector.column_keys(table, column, MAX_KEYS)
        if values and min(values) < 0:
            raise AdvisorError(f"column {text!r} holds negative values: a learned index's keys are unsigned")
        keys = np.asarray(values, dtype=np.uint64)
    keys = np.unique(np.asarray(keys, dtype=np.uint64))
    if len(keys) < MIN_KEYS:
        raise AdvisorError(f"{text[:60]!r} gives {len(keys)} distinct keys; a learned index needs at least "
                           f"{MIN_KEYS}")
    return keys
