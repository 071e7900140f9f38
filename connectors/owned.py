"""The engine-neutral parts of ``Connector.ownership`` and ``Connector.lock_waits`` (each engine's ``owning``
module reads its own catalog): the key of a change that makes no object, and a share of samples taken apart."""

from __future__ import annotations

import time
from collections.abc import Callable

from advisor.core.domain import Change, KnobChange


def setting_entry(change: Change) -> tuple[str, str]:
    """The ownership entry of a change that creates or drops no object: its key, and ``""`` (nothing to identify).

    >>> setting_entry(KnobChange("work_mem", "8MB"))
    ('setting work_mem', '')
    """
    return (f"setting {change.name}" if isinstance(change, KnobChange) else repr(change)), ""


def sampled_share(sample: Callable[[], bool], samples: int, gap_s: float) -> float:
    """The share of ``samples`` calls of ``sample`` (``gap_s`` apart) that answered True.

    >>> sampled_share(lambda: True, 3, 0.0), sampled_share(lambda: False, 2, 0.0), sampled_share(bool, 0, 0.0)
    (1.0, 0.0, 0.0)
    """
    hits = 0
    for i in range(samples):
        if i:
            time.sleep(gap_s)
        hits += bool(sample())
    return hits / samples if samples else 0.0
