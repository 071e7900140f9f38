"""What to say of a name that is not one of the choices: the closest choices as a suggestion ("did you mean")."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str], limit: int = 3) -> str:
    """``"; did you mean 'indexes'?"`` for the closest of ``choices`` to ``name``, or "" when none is close.

    >>> did_you_mean("indexs", ("knobs", "indexes", "rewrites"))
    "; did you mean 'indexes'?"
    >>> did_you_mean("shared_bufers", ("shared_buffers", "temp_buffers", "wal_buffers"))
    "; did you mean 'shared_buffers'?"
    >>> did_you_mean("xyz", ("knobs", "indexes"))
    ''
    """
    close = difflib.get_close_matches(name, list(choices), n=limit, cutoff=0.75)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
