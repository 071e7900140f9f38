"""The built-in TPC-H workload: schema, data generated offline (tpchgen-cli) and loaded with COPY, and the 22
queries with parameters drawn as the specification's qgen draws them."""

from workloads.tpch.data import load
from workloads.tpch.queries import QUERY_NUMBERS, query, stream

__all__ = ["QUERY_NUMBERS", "load", "query", "stream"]
