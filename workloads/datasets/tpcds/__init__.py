"""A TPC-DS subset: the schema from the specification (primary and foreign keys, no other index), data generated
offline by tpcgen-cli and loaded through the connector (COPY on PostgreSQL). Schemas nobody wrote the advisor for: ``workloads.datasets.synthetic`` draws
application workloads over it."""

from workloads.datasets.tpcds.data import MIN_SCALE, SCALE, generate, load
from workloads.datasets.tpcds.schema import DEFAULT_TABLES, FOREIGN_KEYS, PRIMARY_KEYS, TABLES

__all__ = ["DEFAULT_TABLES", "FOREIGN_KEYS", "MIN_SCALE", "PRIMARY_KEYS", "SCALE", "TABLES", "generate", "load"]
