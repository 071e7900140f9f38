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


def shop_size(scale: float = 1.0) -> tuple[int, int]:
    """(orders, customers) of a shop of ``scale`` (1: 200,000 orders of 20,000 customers).

    >>> shop_size(0.02)
    (4000, 400)
    """
    if not scale > 0:
        raise ValueError(f"the playground's scale must be above 0, not {scale}")
    return max(int(ORDERS * scale), 1000), max(int(CUSTOMERS * scale), 100)


def create_shop(sandbox: Sandbox, dbname: str = "shop", password: str | None = None, *, scale: float = 1.0,
                login: str | None = None) -> str:
    """Create and fill the shop database (``scale`` x 200,000 orders), run its workload once, and return a DSN
    for it over TCP. With ``login``, that user is created with ``password`` and the server asks for it, as a
    production server does (a wrong password is refused); without, the DSN carries ``password`` when given and
    the sandbox trusts any."""
    orders, customers = shop_size(scale)
    dsn = sandbox.create_database(dbname)
    with factory.connect(dsn) as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount numeric(10, 2) NOT NULL, "
                     "note text)")
        conn.execute("INSERT INTO orders SELECT x, x %% %s, (x %% 997) / 10.0, repeat('x', 40) "
                     "FROM generate_series(1, %s) x", [customers, orders])
        conn.execute("ANALYZE orders")
        conn.execute("SELECT pg_stat_statements_reset()")
    run_shop_workload(dsn, orders=orders, customers=customers)
    params = dict(part.split("=", 1) for part in dsn.split())
    user = params["user"]
    if login:
        if not password:
            raise ValueError("a playground login needs a password")
        sandbox.add_login(login, password)
        user = login
    tail = f" password={_quoted(password)}" if password else ""
    return f"host=127.0.0.1 port={params['port']} dbname={dbname} user={user}{tail}"


def _quoted(value: str) -> str:
    r"""A libpq keyword value: as it is when it is one plain word, else in single quotes with ' and \\ escaped.

    >>> _quoted("playground"), _quoted("it's a pw")
    ('playground', "'it\\'s a pw'")
    """
    if value and all(c.isalnum() or c in "-_.+/@:" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def run_shop_workload(dsn: str, rounds: int = 40, seed: int = 0, *, orders: int = ORDERS,
                      customers: int = CUSTOMERS) -> None:
    """``rounds`` of the shop's three statements with random constants (``orders`` / ``customers``: the shop's
    size, as ``create_shop`` filled it)."""
    rng = random.Random(seed)
    span = min(5000, orders // 4)
    with factory.connect(dsn) as conn:
        for _ in range(rounds):
            conn.execute("SELECT id, amount, note FROM orders WHERE customer = %s", [rng.randrange(customers)])
            conn.execute("SELECT amount FROM orders WHERE id = %s", [rng.randrange(1, orders)])
            low = rng.randrange(1, orders - span)
            conn.execute("SELECT count(*) FROM orders WHERE id BETWEEN %s AND %s", [low, low + span])
