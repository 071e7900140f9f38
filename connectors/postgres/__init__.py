"""PostgreSQL connector (psycopg 3)."""

from connectors.postgres.connector import PostgresConnector

__all__ = ["PostgresConnector"]
