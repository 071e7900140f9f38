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
    """One statement to cost: its id, executable SQL (parameters bound), weight and the tables it reads.
    ``samples``: more bindings of the same statement (other real or drawn constants); its cost is the mean over
    ``sql`` and its samples. ``scale``: how much more each cost unit of this statement weighs than the workload's
    average (its observed time per cost unit over the workload's, ``time_scales``); ``weight`` is its calls times
    ``scale``, so that the weighted cost follows where the time goes, not where the planner's units do."""

    queryid: str
    sql: str
    weight: float
    tables: frozenset[TableRef]
    samples: tuple[str, ...] = ()
    scale: float = 1.0


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


def prefetch(whatif: WhatIf, pairs: Iterable[tuple[Query, Config]]) -> None:
    """Let ``whatif`` plan the (query, configuration) pairs about to be costed all at once, when it can
    (``CachedWhatIf.prefetch``: over several sessions); the costs asked after are the same either way."""
    ahead = getattr(whatif, "prefetch", None)
    if ahead is not None:
        ahead(pairs)


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
    # why a table's columns got no candidate, for the explanation: the tables too small to index (table, rows),
    # and the existing indexes' key columns (table, columns, index name)
    small: tuple[tuple[TableRef, float], ...] = ()
    existing: tuple[tuple[TableRef, tuple[str, ...], str], ...] = ()

    @cached_property
    def upkeep(self) -> dict[TableRef, float]:
        """``maintenance`` as a map: cost units per index on each written table."""
        return dict(self.maintenance)

    def cost(self, config: Iterable[IndexChange] = ()) -> float:
        """Weighted workload cost under ``config`` (planner cost units), index maintenance included."""
        cfg = frozenset(config)
        prefetch(self.whatif, ((q, relevant(q, cfg)) for q in self.queries))
        return sum(q.weight * self.whatif.cost(q, relevant(q, cfg)).total for q in self.queries) + \
            sum(self.upkeep.get((i.schema, i.table), 0.0) for i in cfg)

    def size(self, config: Iterable[IndexChange]) -> int:
        """Estimated bytes of ``config``."""
        return sum(self.whatif.size(i) for i in config)

    def with_weights(self, weights: dict[str, float], budget_bytes: int | None = None) -> "IndexProblem":
        """The same instance with other query frequencies (0 drops a query; each weighs its ``scale`` times its
        frequency) and optionally another budget."""
        queries = tuple(Query(q.queryid, q.sql, weights[q.queryid] * q.scale, q.tables, q.samples, q.scale)
                        for q in self.queries if weights.get(q.queryid, 0) > 0)
        ids = {q.queryid for q in queries}
        candidates = tuple(c for c in self.candidates if c.queries & ids)
        return IndexProblem(queries, candidates, self.budget_bytes if budget_bytes is None else budget_bytes,
                            self.whatif, tuple(u for u in self.uses if u[0] in ids), self.maintenance)


MAX_SCALE = 100.0  # a statement's cost units weigh at most this many times the workload's average, and at least 1/it


def time_scales(base_costs: dict[str, float], mean_ms: dict[str, float], calls: dict[str, float]) -> dict[str, float]:
    """Per statement, its observed milliseconds per planner cost unit over the workload's (calls-weighted), clipped
    to ``MAX_SCALE`` either way; 1.0 where its time or cost is unknown. The planner's units are not time: a join it
    prices at 10x a lookup may run 1,000x longer (misestimated rows) or 0.1x (a LIMIT that stops early), and an
    advisor that minimizes units spends the budget where the units are, not where the time goes. Scaled, the
    weighted cost of a configuration estimates the workload's time (each statement's observed time times its
    relative cost), kept in cost units: the scales average 1 over the workload.

    >>> s = time_scales({"join": 1000.0, "lookup": 100.0}, {"join": 500.0, "lookup": 5.0}, {"join": 1, "lookup": 10})
    >>> round(s["join"], 3), round(s["lookup"], 3)
    (1.818, 0.182)
    >>> time_scales({"a": 10.0, "b": 0.0}, {"a": 0.0, "b": 3.0}, {"a": 1, "b": 1})
    {'a': 1.0, 'b': 1.0}
    """
    known = [q for q in base_costs if base_costs[q] > 0 and mean_ms.get(q, 0) > 0]
    units = sum(calls.get(q, 0) * base_costs[q] for q in known)
    ms = sum(calls.get(q, 0) * mean_ms[q] for q in known)
    if units <= 0 or ms <= 0:
        return {q: 1.0 for q in base_costs}
    average = ms / units
    return {q: min(MAX_SCALE, max(1 / MAX_SCALE, mean_ms[q] / base_costs[q] / average)) if q in known else 1.0
            for q in base_costs}
