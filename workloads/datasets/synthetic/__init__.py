"""Random application workloads over any schema, for the index and rewrite benches: statements nobody wrote the
advisor for, so its misses show before users find them.

``generate(target, n, seed, families)`` reads the database's tables, keys, edges (declared foreign keys, or
inferred from key names) and column statistics, draws ``n`` statements in the chosen families with constants from
real rows and the statistics, runs each once and keeps the ones that run (``Generated``: queryid, family, SQL,
weight, rows). ``INDEX_FAMILIES`` are what an index advisor should serve (lookups, composite filters with ORDER BY
... LIMIT, date windows written with casts and arithmetic, LIKE prefixes, joins along edges, aggregates);
``REWRITE_FAMILIES`` are what a rewriter meets (correlated scalar subqueries, EXISTS, IN, DISTINCT derived tables,
set operations, outer joins: ``rewrites``; NOT IN, correlated IN, OR-of-joins, joins aggregated on a key, CTEs read
twice, grouped derived tables joined back, filtered UNION ALLs: ``rewrite_shapes``). ``statements`` gives ``BoundStatement``s, ``rewrite_cases`` the rewrite bench's
(name, description, SQL) triples, ``drive`` runs them as an application would.
"""

from workloads.datasets.synthetic.catalog import Column, Edge, Schema, Table, read_schema
from workloads.datasets.synthetic.generator import (FAMILIES, INDEX_FAMILIES, REWRITE_FAMILIES, Generated, drive, generate,
                                           plan_families, rewrite_cases, statements)

__all__ = ["FAMILIES", "INDEX_FAMILIES", "REWRITE_FAMILIES", "Column", "Edge", "Generated", "Schema", "Table", "drive",
           "generate", "plan_families", "read_schema", "rewrite_cases", "statements"]
