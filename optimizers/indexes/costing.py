"""A caching what-if coster. The planner underneath (HypoPG on PostgreSQL, see
``connectors.postgres.whatif.HypoPG``) is called only for a (query id and text, relevant indexes) pair not seen
before:
indexes on tables the query does not read cannot change its plan, so they are not part of the key.

>>> class Fake:
...     def plan(self, sql, indexes, tables): return Costed(100.0 - 10 * len(indexes))
...     def index_size(self, index): return 8192
>>> w = CachedWhatIf(Fake())
>>> q = Query("q1", "SELECT 1 FROM t WHERE a = 1", 1.0, frozenset({("public", "t")}))
>>> a, b = IndexChange("public", "t", ("a",)), IndexChange("public", "u", ("b",))
>>> w.cost(q, frozenset({a})).total, w.cost(q, frozenset({a, b})).total, (w.calls, w.hits)
(90.0, 90.0, (1, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from advisor.core.domain import Costed, IndexChange
from optimizers.indexes.problem import Config, Query, TableRef, relevant


class Planner(Protocol):
    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset[TableRef]) -> Costed: ...

    def index_size(self, index: IndexChange) -> int: ...


class CachedWhatIf:
    """``WhatIf`` over a planner, with a cache keyed by (queryid, the configuration's indexes on its tables)."""

    def __init__(self, planner: Planner):
        self.planner = planner
        self.calls = 0
        self.hits = 0
        self._costs: dict[tuple[str, str, Config], Costed] = {}
        self._sizes: dict[IndexChange, int] = {}

    def cost(self, query: Query, config: Config) -> Costed:
        key = (query.queryid, query.sql, relevant(query, config))
        found = self._costs.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.calls += 1
        out = self.planner.plan(query.sql, sorted(key[2], key=_order), query.tables)
        self._costs[key] = out
        return out

    def size(self, index: IndexChange) -> int:
        found = self._sizes.get(index)
        if found is None:
            found = self._sizes[index] = int(self.planner.index_size(index))
        return found

    def counters(self) -> dict[str, int]:
        return {"whatif_calls": self.calls, "cache_hits": self.hits, "cached": len(self._costs)}


def _order(index: IndexChange) -> tuple:
    return (index.schema, index.table, index.columns, index.method)
