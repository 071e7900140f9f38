"""What an index set looks like once built on a shadow: each index's real size, and which statements' plans
scan which index (by name). Read by the validation (``inspect_built``) and by the advice on unused indexes
(``plans_use``)."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.core.domain import IndexChange
from connectors.base import Shadow
from workloads.binding import BoundStatement


def inspect_built(shadow: Shadow, statements: Sequence[BoundStatement], indexes: Sequence[IndexChange]):
    """Build ``indexes`` on the shadow, read their real sizes (bytes) and which statements' plans use each index
    (new or existing, by name), then drop them again."""
    applied = shadow.connector.apply(list(indexes))
    try:
        return shadow.connector.index_sizes(indexes), plans_use(shadow, statements)
    finally:
        shadow.connector.revert(applied)


def plans_use(shadow: Shadow, statements: Sequence[BoundStatement]) -> dict[str, set[str]]:
    """Per index name, the queryids whose plans on the shadow (as it is now) scan it."""
    used: dict[str, set[str]] = {}
    for st, plan in zip(statements, shadow.connector.plans([st.sql for st in statements])):
        for name in plan.indexes:
            used.setdefault(name, set()).add(st.queryid)
    return used
