"""A "production" database to try db-advisor on: a self-started PostgreSQL sandbox with a small shop schema and
a workload that an index clearly helps (lookups of orders by customer, unindexed) next to statements it does not
change (primary-key lookups, a range count). ``advisor playground`` starts it and prints its DSN; the API
benchmark and the web tests use the same database."""

from __future__ import annotations

import random

from connectors import factory
from connectors.base import Sandbox

ORDERS = 200_000
CUSTOMERS = 20_000


def playground_sandbox(name: str = "playground", settings: dict[str, str] | None = None) -> Sandbox:
    """A new, not yet started sandbox server for the shop (use it as a context manager)."""
    return factory.sandbox("postgres", name, settings)


def create_shop(sandbox: Sandbox, dbname: str = "shop", password: str | None = None) -> str:
    """Create and fill the shop database, run its workload once, and return a DSN for it (over TCP, with
    ``password`` in it when given: sandboxes trust local logins, so any password works)."""
    dsn = sandbox.create_database(dbname)
    with factory.connect(dsn) as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount numeric(10, 2) NOT NULL, "
                     "note text)")
        conn.execute("INSERT INTO orders SELECT x, x %% %s, (x %% 997) / 10.0, repeat('x', 40) "
                     "FROM generate_series(1, %s) x", [CUSTOMERS, ORDERS])
        conn.execute("ANALYZE orders")
        conn.execute("SELECT pg_stat_statements_reset()")
    run_shop_workload(dsn)
    params = dict(part.split("=", 1) for part in dsn.split())
    tail = f" password={password}" if password else ""
    return f"host=127.0.0.1 port={params['port']} dbname={dbname} user={params['user']}{tail}"


def run_shop_workload(dsn: str, rounds: int = 40, seed: int = 0) -> None:
    rng = random.Random(seed)
    with factory.connect(dsn) as conn:
        for _ in range(rounds):
            conn.execute("SELECT id, amount, note FROM orders WHERE customer = %s", [rng.randrange(CUSTOMERS)])
            conn.execute("SELECT amount FROM orders WHERE id = %s", [rng.randrange(1, ORDERS)])
            low = rng.randrange(1, ORDERS - 5000)
            conn.execute("SELECT count(*) FROM orders WHERE id BETWEEN %s AND %s", [low, low + 5000])
