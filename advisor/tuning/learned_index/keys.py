"""Where a learned index's keys come from (``--keys SOURCE``): ``synthetic:NAME[:N]`` (a generated key set of
``workloads.datasets.learned.keysets.SYNTHETIC``, N keys, default ``SYNTHETIC_KEYS``), ``[schema.]table.column`` (an integer
column of the target, read through its connector, at most ``MAX_KEYS`` distinct values), or a file (one uint64 per
line, or SOSD's binary format). Keys come back sorted, unique, uint64.

Limits, checked before the keys are read: at most ``MAX_KEYS`` keys whatever the source (a SOSD file's count is read
from its header, a text file is read line by line and refused past the cap) and a key file of at most
``MAX_KEY_FILE_BYTES``. No message quotes a key file's content.

A remote face (REST, the web UI, a schedule, which the server runs as its own OS user) takes a key file only from
the directory the server's settings name (``key_files_dir``, ``confined``): none by default, and then only columns
and synthetic sets. The command line reads the invoking user's files.

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
MAX_KEY_FILE_BYTES = 64 * 2**20  # 2M keys of 20 digits a line, with room for blank lines and CRLF
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


def confined(source: str, directory: str | None) -> str:
    """The source a remote face may give: a synthetic set or a column unchanged; a key file only inside
    ``directory`` (the server's ``key_files_dir``; None: no file at all), named by a path relative to it or an
    absolute one, without ``..``, resolved (symbolic links followed) to a path that must lie inside it; the resolved
    path comes back, so the run reads that file. A file outside it, a missing one and a link out of it get the same
    answer, so nothing is learnt of files outside it."""
    import os

    text = (source or "").strip()
    if text.startswith("synthetic:"):
        return text
    inside, entry = None, False
    if directory and ".." not in Path(text).parts:
        root = os.path.realpath(directory)
        entry = os.path.lexists(os.path.join(root, text))  # a file of the directory, or a link there
        inside = os.path.realpath(os.path.join(root, text))
        if os.path.commonpath([root, inside]) != root:
            inside = None
    if inside is not None and os.path.isfile(inside):
        return inside
    if "/" not in text and not entry:
        if COLUMN.match(text):
            return text  # a column (no file or link of that name in the directory)
        raise AdvisorError(f"unknown key source {text[:60]!r}: give synthetic:NAME[:N], [schema.]table.column or "
                           "a file of the server's key files directory")
    if not directory:
        raise AdvisorError("key files are not taken over the API, the web UI or a schedule: this server names no "
                           "key files directory (ADVISOR_KEY_FILES_DIR); give synthetic:NAME[:N] or a "
                           "[schema.]table.column of the target")
    raise AdvisorError(f"no key file {text[:80]!r} in the server's key files directory (ADVISOR_KEY_FILES_DIR); over "
                       "the API, the web UI or a schedule a key file is one of that directory's files")


def check(source: str) -> None:
    """What can be checked of a source before any work: a known synthetic name and count, a readable file within
    the limits (its size, a SOSD header's count)."""
    kind = kind_of(source)
    if kind == "synthetic":
        _synthetic_args(source)
    elif kind == "file":
        from workloads.datasets.learned.keysets import check_key_file

        path = Path(source.strip())
        if not path.is_file():
            raise AdvisorError(f"key file {source.strip()[:80]!r} does not exist or is not a file")
        check_key_file(path, MAX_KEYS, MAX_KEY_FILE_BYTES)


def _synthetic_args(source: str) -> tuple[str, int]:
    from workloads.datasets.learned.keysets import SYNTHETIC

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
        from workloads.datasets.learned.keysets import synthetic

        name, n = _synthetic_args(text)
        keys = synthetic(name, n, seed)
    elif kind == "file":
        from workloads.datasets.learned.keysets import read_keys

        check(text)
        try:
            keys = read_keys(text, MAX_KEYS, MAX_KEY_FILE_BYTES)
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
