"""The PostgreSQL engine (psycopg 3): connector, sandbox clusters, shadow cloning. Code above ``connectors`` reaches
it only through ``connectors.factory``."""

from connectors.postgres.connector import PostgresConnector

__all__ = ["PostgresConnector"]
