"""The built-in TPC-H workload: schema, data generated offline (tpchgen-cli) and loaded through the connector (COPY on
PostgreSQL), and the 22 queries with parameters drawn as the specification's qgen draws them; all written in
``SOURCE_DIALECT``."""

from workloads.datasets.tpch.data import load
from workloads.datasets.tpch.schema import SOURCE_DIALECT
from workloads.datasets.tpch.queries import QUERY_NUMBERS, query, stream

__all__ = ["QUERY_NUMBERS", "SOURCE_DIALECT", "load", "query", "stream"]
