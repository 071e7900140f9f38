"""What an index advisor works on: the queries (bound, weighted), the candidate indexes, the storage budget and a
what-if coster. Pure types and arithmetic; the coster is a capability passed in (HypoPG on PostgreSQL).

Units: costs are the planner's cost units (arbitrary, comparable within one server), sizes are bytes.
A configuration is a frozenset of ``IndexChange``; its workload cost is ``sum(weight x cost(query, config))``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from advisor.core.domain import Costed, IndexChange

TableRef = tuple[str, str]  # (schema, table)
Config = frozenset[IndexChange]


@dataclass(frozen=True)
class Query:
    """One statement to cost: its id, executable SQL (parameters bound), weight (calls) and the tables it reads.
    ``samples``: more bindings of the same statement (other real or drawn constants); its cost is the mean over
    ``sql`` and its samples."""

    queryid: str
    sql: str
    weight: float
    tables: frozenset[TableRef]
    samples: tuple[str, ...] = ()


@dataclass(frozen=True)
class ColumnUse:
    """How a statement uses one column: compared with ``=``/IN (equality), with a range, in a join, in GROUP BY
    or ORDER BY."""

    table: TableRef
    column: str
    kind: str  # equality | range | join | group | order


@dataclass(frozen=True)
class Candidate:
    """An index that could be built and the queries whose columns it covers."""

    index: IndexChange
    queries: frozenset[str]

    @property
    def table(self) -> TableRef:
        return (self.index.schema, self.index.table)

    @property
    def width(self) -> int:
        return len(self.index.columns)


class WhatIf(Protocol):
    """Costs a query under a hypothetical index configuration. Implementations count ``calls`` (planner calls)
    and ``hits`` (answers from the cache)."""

    calls: int
    hits: int

    def cost(self, query: Query, config: Config) -> Costed: ...

    def size(self, index: IndexChange) -> int: ...


def relevant(query: Query, config: Iterable[IndexChange]) -> Config:
    """The indexes of ``config`` on tables that ``query`` reads: the only ones that can change its plan."""
    return frozenset(i for i in config if (i.schema, i.table) in query.tables)


@dataclass(frozen=True)
class IndexProblem:
    """One index-selection instance. ``existing`` indexes are always there and never count against the budget."""

    queries: tuple[Query, ...]
    candidates: tuple[Candidate, ...]
    budget_bytes: int
    whatif: WhatIf
    uses: tuple[tuple[str, ColumnUse], ...] = ()  # (queryid, use) from the statements' text
    # cost units each index on a table adds to the workload: the index entries its writes must maintain (the
    # planner does not cost index maintenance, so a write-heavy table would otherwise get every index for free)
    maintenance: tuple[tuple[TableRef, float], ...] = ()

    @cached_property
    def upkeep(self) -> dict[TableRef, float]:
        """``maintenance`` as a map: cost units per index on each written table."""
        return dict(self.maintenance)

    def cost(self, config: Iterable[IndexChange] = ()) -> float:
        """Weighted workload cost under ``config`` (planner cost units), index maintenance included."""
        cfg = frozenset(config)
        return sum(q.weight * self.whatif.cost(q, relevant(q, cfg)).total for q in self.queries) + \
            sum(self.upkeep.get((i.schema, i.table), 0.0) for i in cfg)

    def size(self, config: Iterable[IndexChange]) -> int:
        """Estimated bytes of ``config``."""
        return sum(self.whatif.size(i) for i in config)

    def with_weights(self, weights: dict[str, float], budget_bytes: int | None = None) -> "IndexProblem":
        """The same instance with other query frequencies (0 drops a query) and optionally another budget."""
        queries = tuple(Query(q.queryid, q.sql, weights[q.queryid], q.tables, q.samples) for q in self.queries
                        if weights.get(q.queryid, 0) > 0)
        ids = {q.queryid for q in queries}
        candidates = tuple(c for c in self.candidates if c.queries & ids)
        return IndexProblem(queries, candidates, self.budget_bytes if budget_bytes is None else budget_bytes,
                            self.whatif, tuple(u for u in self.uses if u[0] in ids), self.maintenance)
