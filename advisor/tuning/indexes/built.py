"""An index set built on a shadow: held built for a block (``held``), what it looks like once built (each index's
real size, and which statements' plans scan which index, by name: ``inspect_built``, ``plans_use``).

A pass of the index validation holds its set built from its first look to its last re-timing: every step inside
(the sizes and plans, the rounds, the re-timings, the diagnosis) asks for the set with ``held`` and builds nothing
when it is held already, and the baseline is the set hidden from the planner inside a rolled-back transaction. A
build is what grows with the database (7 indexes on TPC-H at 4.3 GB: ~40 s), and a pass used to make four.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from advisor.core.domain import IndexChange
from connectors.base import Shadow
from workloads.statements.binding import BoundStatement


_HELD: dict[int, tuple[IndexChange, ...]] = {}  # id(shadow) -> the index set held built on it now


@contextlib.contextmanager
def held(shadow: Shadow, indexes: Sequence[IndexChange]) -> Iterator[None]:
    """``indexes`` built on the shadow for the block and dropped after it; nothing is built when a block around it
    holds them (or more) already."""
    key = id(shadow)
    if key in _HELD and set(indexes) <= set(_HELD[key]):
        yield
        return
    if key in _HELD:
        raise RuntimeError("another index set is held built on this shadow")
    applied = shadow.connector.apply(list(indexes))
    _HELD[key] = tuple(indexes)
    try:
        yield
    finally:
        _HELD.pop(key, None)
        shadow.connector.revert(applied)


def held_set(shadow: Shadow) -> tuple[IndexChange, ...]:
    """The index set held built on the shadow now (``held``), or ()."""
    return _HELD.get(id(shadow), ())


def inspect_built(shadow: Shadow, statements: Sequence[BoundStatement], indexes: Sequence[IndexChange]):
    """``indexes`` built on the shadow (``held``): their real sizes (bytes) and which statements' plans use each
    index (new or existing, by name)."""
    with held(shadow, indexes):
        return shadow.connector.index_sizes(indexes), plans_use(shadow, statements)


def plans_use(shadow: Shadow, statements: Sequence[BoundStatement]) -> dict[str, set[str]]:
    """Per index name, the queryids whose plans on the shadow (as it is now) scan it."""
    used: dict[str, set[str]] = {}
    for st, plan in zip(statements, shadow.connector.plans([st.sql for st in statements])):
        for name in plan.indexes:
            used.setdefault(name, set()).add(st.queryid)
    return used
