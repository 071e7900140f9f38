"""The advisor's own state: the store (DuckDB default), its codec for domain objects, and the credentials vault."""
