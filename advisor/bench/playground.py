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


# the shop's schema and rows in SQL every engine runs (``numbers`` numbers the rows)
SHOP_TABLE = ("CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL, amount numeric(10, 2) NOT NULL, "
              "note text)")
SHOP_ROWS = ("INSERT INTO orders SELECT x, x % {customers}, (x % 997) / 10.0, repeat('x', 40) FROM ({numbers}) n "
             "WHERE x <= {orders} ORDER BY x")
DIGITS = "(SELECT 0 AS d" + "".join(f" UNION ALL SELECT {d}" for d in range(1, 10)) + ")"


def numbers(upto: int) -> str:
    """A query every engine runs whose rows (column ``x``) are 1 .. at least ``upto``: a cross join of digit
    tables, the top one cut at the highest digit needed (no generate_series, and no recursive CTE, whose depth
    MariaDB limits to 1,000 by default).

    >>> numbers(20).startswith("SELECT 1 + t0.d + 10 * t1.d AS x FROM (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL")
    True
    >>> numbers(20).endswith(" t0 CROSS JOIN (SELECT 0 AS d UNION ALL SELECT 1) t1")  # 1 + 0..9 + 0..10
    True
    """
    places = len(str(max(upto - 1, 1)))
    top = max(upto - 1, 1) // 10 ** (places - 1)
    tables = [DIGITS] * (places - 1) + [DIGITS[:DIGITS.index(f" UNION ALL SELECT {top + 1}")] + ")"
                                        if top < 9 else DIGITS]
    total = " + ".join(["1"] + [f"t{i}.d" if i == 0 else f"{10 ** i} * t{i}.d" for i in range(places)])
    return f"SELECT {total} AS x FROM " + " CROSS JOIN ".join(f"{t} t{i}" for i, t in enumerate(tables))


def create_shop(sandbox: Sandbox, dbname: str = "shop", password: str | None = None, *, scale: float = 1.0,
                login: str | None = None) -> str:
    """Create and fill the shop database (``scale`` x 200,000 orders), run its workload once, and return a DSN
    for it over TCP. With ``login``, that user is created with ``password`` and the server asks for it, as a
    production server does (a wrong password is refused); a ``password`` without ``login`` is the password of the
    login ``<dbname>_owner``; without either, the DSN is the sandbox's own login's (with its own password: a
    sandbox admits no one else)."""
    if password and not login:
        login = f"{dbname}_owner"
    orders, customers = shop_size(scale)
    dsn = sandbox.create_database(dbname)
    connector = factory.connector(dsn)
    with connector.session() as session:
        session.run(SHOP_TABLE)
        session.run(SHOP_ROWS.format(orders=int(orders), customers=int(customers), numbers=numbers(int(orders))))
    connector.loader().analyze(["orders"])
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
