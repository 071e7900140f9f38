"""A caching what-if coster. The planner underneath (HypoPG on PostgreSQL, see
``connectors.postgres.whatif.HypoPG``) is called only for a (statement text, relevant indexes) pair not seen
before, whichever query asks: indexes on tables the query does not read cannot change its plan, and neither can
an index whose leading column the statement never names (PostgreSQL 15 has no skip scan; the full-index scans
such an index could still offer are left out, so such an index is never credited a benefit), so they are not part
of the key. Nor, with ``prune`` (the default), is an index that alone left the statement's cost unchanged: the
planner did not use it, and it is taken as unable to change the statement's plan in any configuration (a cheap test
that rules out most candidates of a big join; an index useful only together with another is missed). A query with
``samples`` (other bindings of its parameters) costs the mean over its bindings.

``prefetch(pairs)`` plans, before they are asked for, the (query, configuration) pairs not cached yet, spread over
the ``helpers`` (more sessions of the same planner, each on a connection of its own) and the planner itself, one
thread each: the costs are the same as asked one at a time (each is one EXPLAIN of one statement under its
indexes), only the wall time falls with the server's cores. An optimizer prefetches what it is about to compare
(Extend a step's moves, IA2 a step's statements, the ILP its atoms); a pair the planner refuses is left to
``cost``, which raises as before. A planner with ``plan_many`` (MariaDB's IGNORED indexes, whose sessions share
the visible indexes and cannot plan side by side) plans the whole batch itself, ordered so that the configurations
it toggles between are as few as it can (``connectors.mariadb.whatif``).

>>> class Fake:
...     def plan(self, sql, indexes, tables): return Costed(100.0 - 10 * len(indexes))
...     def index_size(self, index): return 8192
>>> w = CachedWhatIf(Fake())
>>> q = Query("q1", "SELECT 1 FROM t WHERE a = 1", 1.0, frozenset({("public", "t")}))
>>> a, b = IndexChange("public", "t", ("a",)), IndexChange("public", "u", ("b",))
>>> w.cost(q, frozenset()).total, w.cost(q, frozenset({a})).total, w.cost(q, frozenset({a, b})).total
(100.0, 90.0, 90.0)
>>> w.calls, w.hits
(2, 1)
"""

from __future__ import annotations

import queue
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from advisor.core.domain import Costed, IndexChange
from advisor.core.errors import BadStatement
from optimizers.indexes.problem import Config, Query, TableRef, relevant


_WORD = re.compile(r'"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z_0-9$]*)')


class Planner(Protocol):
    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset[TableRef]) -> Costed: ...

    def index_size(self, index: IndexChange) -> int: ...


class CachedWhatIf:
    """``WhatIf`` over a planner, with a cache keyed by (statement text, the configuration's indexes that can
    change its plan). ``calls`` counts planner calls (one per binding of a query), ``hits`` answers from the
    cache."""

    def __init__(self, planner: Planner, prune: bool = True, helpers: Sequence[Planner] = ()):
        self.planner = planner
        self.prune = prune
        self.helpers = tuple(helpers)  # more sessions of the planner: ``prefetch`` plans on them all at once
        self._unused: dict[tuple[str, ...], set[IndexChange]] = {}  # per statement, indexes alone change nothing
        self.calls = 0
        self.hits = 0
        self._costs: dict[tuple[str, Config], Costed] = {}
        self._means: dict[tuple[tuple[str, ...], Config], Costed] = {}
        self._names: dict[tuple[str, ...], frozenset[str]] = {}
        self._sizes: dict[IndexChange, int] = {}
        self._refused: set[str] = set()  # samples the planner could not plan

    def cost(self, query: Query, config: Config) -> Costed:
        texts, key = self._key(query, config)
        found = self._means.get((texts, key))
        if found is not None:
            self.hits += 1
            return found
        base = None
        if self.prune and len(key) == 1:  # the statement without indexes first: what the index is compared with
            base = self._means.get((texts, frozenset()))
            if base is None:
                base = self._means[(texts, frozenset())] = self._mean(query, texts, frozenset())
        out = self._means[(texts, key)] = self._mean(query, texts, key)
        if base is not None and abs(out.total - base.total) <= 1e-9 * max(1.0, base.total):
            self._unused.setdefault(texts, set()).update(key)
        return out

    def _key(self, query: Query, config: Config) -> tuple[tuple[str, ...], Config]:
        """(the query's texts, the indexes of ``config`` that can change its plan): what its cost is cached by."""
        texts = (query.sql, *query.samples)
        names = self._names.get(texts)
        if names is None:
            names = self._names[texts] = frozenset((m.group(1) or m.group(2)).lower()
                                                        for t in texts for m in _WORD.finditer(t))
        unused = self._unused.get(texts, ())
        return texts, frozenset(i for i in relevant(query, config)
                                if i.columns and i.columns[0].lower() in names and i not in unused)

    def prefetch(self, pairs: Iterable[tuple[Query, Config]]) -> int:
        """Plan the planner calls that costing ``pairs`` would make and the cache lacks, all at once over the
        planner and its ``helpers``, or through the planner's ``plan_many`` (a no-op with neither); returns how
        many were planned. ``calls`` counts them as ``cost`` would have."""
        many = getattr(self.planner, "plan_many", None)
        if not self.helpers and many is None:
            return 0
        todo: dict[tuple[str, Config], tuple[str, Config, Query]] = {}
        for query, config in pairs:
            texts, key = self._key(query, config)
            if (texts, key) in self._means:
                continue
            keys = [key, frozenset()] if self.prune and len(key) == 1 else [key]
            for k in keys:
                for text in texts:
                    if (text, k) not in self._costs and text not in self._refused and (text, k) not in todo:
                        todo[(text, k)] = (text, k, query)
        if len(todo) < 2:
            return 0
        if many is not None:
            return self._keep(todo, many([(text, sorted(key, key=_order), query.tables)
                                          for text, key, query in todo.values()]))
        idle: queue.SimpleQueue = queue.SimpleQueue()
        for planner in (self.planner, *self.helpers):
            idle.put(planner)

        def plan(job: tuple[str, Config, Query]) -> Costed | None:
            text, key, query = job
            planner = idle.get()
            try:
                return planner.plan(text, sorted(key, key=_order), query.tables)
            except Exception:  # left to ``cost``, which plans it again and raises as it always did
                return None
            finally:
                idle.put(planner)

        with ThreadPoolExecutor(max_workers=1 + len(self.helpers)) as pool:
            answers = list(pool.map(plan, todo.values()))
        return self._keep(todo, answers)

    def _keep(self, todo: dict, answers: Sequence[Costed | None]) -> int:
        planned = 0
        for (text, key, _q), found in zip(todo.values(), answers):
            if found is not None:
                self._costs[(text, key)] = found
                planned += 1
        self.calls += planned
        return planned

    def _mean(self, query: Query, texts: tuple[str, ...], key: Config) -> Costed:
        costs = [self._plan(query.sql, key, query)]
        for text in query.samples:  # a sample the planner refuses is left out of the mean (the primary is not)
            if text not in self._refused:
                try:
                    costs.append(self._plan(text, key, query))
                except BadStatement:
                    self._refused.add(text)
        return costs[0] if len(costs) == 1 else mean(costs)

    def _plan(self, text: str, key: Config, query: Query) -> Costed:
        found = self._costs.get((text, key))
        if found is None:
            self.calls += 1
            found = self._costs[(text, key)] = self.planner.plan(text, sorted(key, key=_order), query.tables)
        return found

    def size(self, index: IndexChange) -> int:
        found = self._sizes.get(index)
        if found is None:
            found = self._sizes[index] = int(self.planner.index_size(index))
        return found

    def counters(self) -> dict[str, int]:
        return {"whatif_calls": self.calls, "cache_hits": self.hits, "cached": len(self._costs),
                "timeouts": sum(int(getattr(p, "timeouts", 0)) for p in (self.planner, *self.helpers)),
                "refused_samples": len(self._refused), "sessions": 1 + len(self.helpers),
                **getattr(self.planner, "session_counters", dict)()}  # the planner's own (MariaDB: builds, toggles)


def mean(costs: Sequence[Costed]) -> Costed:
    """The mean of several bindings' costs: total and, per table, sequential-scan cost (0 where a binding has none).

    >>> m = mean([Costed(10.0, {"t": 4.0}), Costed(20.0, {})])
    >>> m.total, m.seq_scans
    (15.0, {'t': 2.0})
    """
    tables = sorted({t for c in costs for t in c.seq_scans})
    return Costed(sum(c.total for c in costs) / len(costs),
                  {t: sum(c.seq_scans.get(t, 0.0) for c in costs) / len(costs) for t in tables})


def _order(index: IndexChange) -> tuple:
    return (index.schema, index.table, index.columns, index.method)
