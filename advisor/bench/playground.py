"""A "production" database to try db-advisor on: a self-started sandbox (PostgreSQL unless told) with a small shop
schema and a workload that an index clearly helps (lookups of orders by customer, unindexed) next to statements it
does not change (primary-key lookups, a range count). ``advisor playground`` starts it and prints its DSN; the API
benchmark and the web tests use the same database. Its SQL is what every engine runs; what differs (statistics,
the DSN's form, logins) is asked of the sandbox and its connector."""

from __future__ import annotations

import random

from connectors import factory
from connectors.base import Sandbox

ORDERS = 200_000
CUSTOMERS = 20_000


def playground_sandbox(name: str = "playground", settings: dict[str, str] | None = None,
                       engine: str = factory.DEFAULT_ENGINE) -> Sandbox:
    """A new, not yet started sandbox server of ``engine`` for the shop (use it as a context manager)."""
    return factory.sandbox(engine, name, settings)


def shop_size(scale: float = 1.0) -> tuple[int, int]:
    """(orders, customers) of a shop of ``scale`` (1: 200,000 orders of 20,000 customers).

    >>> shop_size(0.02)
    (4000, 400)
    """
    if not scale > 0:
        raise ValueError(f"the playground's scale must be above 0, not {scale}")
    return max(int(ORDERS * scale), 1000), max(int(CUSTOMERS * scale), 100)


# the shop's schema and rows in SQL every engine runs (a recursive CTE numbers the rows: no generate_series)
SHOP_TABLE = ("CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount numeric(10, 2) NOT NULL, "
              "note text)")
SHOP_ROWS = ("INSERT INTO orders WITH RECURSIVE n (x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < {orders}) "
             "SELECT x, x % {customers}, (x % 997) / 10.0, repeat('x', 40) FROM n")


def create_shop(sandbox: Sandbox, dbname: str = "shop", password: str | None = None, *, scale: float = 1.0,
                login: str | None = None) -> str:
    """Create and fill the shop database (``scale`` x 200,000 orders), run its workload once, and return a DSN
    for it over TCP. With ``login``, that user is created with ``password`` and the server asks for it, as a
    production server does (a wrong password is refused); without, the DSN carries ``password`` when given and
    the sandbox trusts any."""
    orders, customers = shop_size(scale)
    dsn = sandbox.create_database(dbname)
    connector = factory.connector(dsn)
    with connector.session() as session:
        session.run(SHOP_TABLE)
        session.run(SHOP_ROWS.format(orders=int(orders), customers=int(customers)))
    connector.analyze(["orders"])
    connector.reset_statement_stats()
    run_shop_workload(dsn, orders=orders, customers=customers)
    if login:
        if not password:
            raise ValueError("a playground login needs a password")
        sandbox.add_login(login, password)
    return sandbox.login_dsn(dbname, login, password)


def run_shop_workload(dsn: str, rounds: int = 40, seed: int = 0, *, orders: int = ORDERS,
                      customers: int = CUSTOMERS) -> None:
    """``rounds`` of the shop's three statements with random constants (``orders`` / ``customers``: the shop's
    size, as ``create_shop`` filled it)."""
    rng = random.Random(seed)
    span = min(5000, orders // 4)
    with factory.connector(dsn).session() as session:
        for _ in range(rounds):
            session.run(f"SELECT id, amount, note FROM orders WHERE customer = {rng.randrange(customers)}")
            session.run(f"SELECT amount FROM orders WHERE id = {rng.randrange(1, orders)}")
            low = rng.randrange(1, orders - span)
            session.run(f"SELECT count(*) FROM orders WHERE id BETWEEN {low} AND {low + span}")
