"""An application's workload over TPC-H data (primary keys only), for ``advisor bench indexes --workloads app``.

Fourteen parameterised statements as an order-management application sends them: point lookups, a customer's
recent orders, date columns compared with a cast parameter (``col = $1::date``, ``BETWEEN $1::date AND
$2::date + 6``, ``col >= $1::date`` with an equality on another column), a multi-column equality lookup ordered
by a third column, joins and aggregates. ``drive`` runs them the way the application does (server-side
parameters, varied constants), so pg_stat_statements and pg_qualstats fill; ``statements`` gives executable
copies with literal constants for measuring.

>>> len(TEMPLATES) >= 12 and all(t.key.startswith("app.") for t in TEMPLATES)
True
>>> statements(1)[0].sql == statements(1)[0].sql
True
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.datasets import tpch
from workloads.statements.binding import BoundStatement, substitute
from workloads.datasets.sqlsource import string_literal, to_dialect

Value = int | str | date
SCALE = 0.05  # the bench's default scale factor


@dataclass(frozen=True)
class AppTemplate:
    key: str
    text: str  # with $1..$n, each used once and in order
    draw: Callable[[random.Random, float], tuple[Value, ...]]


def _day(r: random.Random, first: date = date(1992, 1, 2), last: date = date(1998, 7, 31)) -> date:
    return first + timedelta(days=r.randint(0, (last - first).days))


def _cust(r: random.Random, sf: float) -> int:
    return r.randint(1, max(1, int(150_000 * sf)))


def _order(r: random.Random, sf: float) -> int:
    # TPC-H order keys are sparse: 8 used out of every 32
    n = r.randint(0, max(1, int(1_500_000 * sf)) - 1)
    return (n // 8) * 32 + n % 8 + 1


def _part(r: random.Random, sf: float) -> int:
    return r.randint(1, max(1, int(200_000 * sf)))


def _supp_of(part: int, i: int, sf: float) -> int:
    s = max(1, int(10_000 * sf))  # the specification's partsupp supplier formula
    return (part + (i * ((s // 4) + (part - 1) // s))) % s + 1


def _clerk(r: random.Random, sf: float) -> str:
    return f"Clerk#{r.randint(1, max(1, int(1000 * sf))):09d}"


def _line(r: random.Random, sf: float) -> tuple[Value, ...]:
    p = _part(r, sf)
    return p, _supp_of(p, r.randint(0, 3), sf)


MODES = ("AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK")
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
CONTAINERS = ("SM CASE", "SM BOX", "MED BAG", "MED BOX", "LG CASE", "LG BOX", "JUMBO PACK", "WRAP CASE")

TEMPLATES: tuple[AppTemplate, ...] = (
    AppTemplate("app.order", "SELECT o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate "
                "FROM orders WHERE o_orderkey = $1", lambda r, sf: (_order(r, sf),)),
    AppTemplate("app.customer_orders", "SELECT o_orderkey, o_orderdate, o_totalprice, o_orderstatus FROM orders "
                "WHERE o_custkey = $1 ORDER BY o_orderdate DESC LIMIT 10", lambda r, sf: (_cust(r, sf),)),
    AppTemplate("app.shipped_on", "SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice FROM lineitem "
                "WHERE l_shipdate = $1::date", lambda r, sf: (_day(r),)),
    AppTemplate("app.orders_week", "SELECT o_orderkey, o_custkey, o_totalprice FROM orders "
                "WHERE o_orderdate BETWEEN $1::date AND $2::date + 6 ORDER BY o_orderdate",
                lambda r, sf: (d := _day(r), d)),
    AppTemplate("app.clerk_since", "SELECT o_orderkey, o_orderdate, o_totalprice FROM orders "
                "WHERE o_orderdate >= $1::date AND o_clerk = $2",
                lambda r, sf: (_day(r, date(1997, 1, 1)), _clerk(r, sf))),
    AppTemplate("app.part_supplier_lines", "SELECT l_orderkey, l_linenumber, l_quantity, l_shipdate FROM lineitem "
                "WHERE l_partkey = $1 AND l_suppkey = $2 ORDER BY l_shipdate DESC LIMIT 20",
                lambda r, sf: _line(r, sf)),
    AppTemplate("app.received_by_mode", "SELECT count(*), sum(l_extendedprice * (1 - l_discount)) FROM lineitem "
                "WHERE l_receiptdate = $1::date AND l_shipmode = $2", lambda r, sf: (_day(r), r.choice(MODES))),
    AppTemplate("app.customer_lines", "SELECT o.o_orderkey, o.o_orderdate, l.l_linenumber, l.l_partkey, l.l_quantity "
                "FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey WHERE o.o_custkey = $1 "
                "ORDER BY o.o_orderdate DESC LIMIT 50", lambda r, sf: (_cust(r, sf),)),
    AppTemplate("app.supplier_parts", "SELECT p.p_partkey, p.p_name, ps.ps_availqty, ps.ps_supplycost "
                "FROM partsupp ps JOIN part p ON p.p_partkey = ps.ps_partkey WHERE ps.ps_suppkey = $1 "
                "ORDER BY ps.ps_supplycost LIMIT 25", lambda r, sf: (r.randint(1, max(1, int(10_000 * sf))),)),
    AppTemplate("app.month_by_priority", "SELECT o_orderpriority, count(*), sum(o_totalprice) FROM orders "
                "WHERE o_orderdate >= $1::date AND o_orderdate < $2::date + 30 GROUP BY o_orderpriority "
                "ORDER BY o_orderpriority", lambda r, sf: (d := _day(r), d)),
    AppTemplate("app.top_customers", "SELECT c_custkey, c_name, c_acctbal FROM customer "
                "WHERE c_nationkey = $1 AND c_mktsegment = $2 ORDER BY c_acctbal DESC LIMIT 20",
                lambda r, sf: (r.randint(0, 24), r.choice(SEGMENTS))),
    AppTemplate("app.part_search", "SELECT p_partkey, p_name, p_retailprice FROM part "
                "WHERE p_brand = $1 AND p_size = $2 AND p_container = $3",
                lambda r, sf: (f"Brand#{r.randint(1, 5)}{r.randint(1, 5)}", r.randint(1, 50), r.choice(CONTAINERS))),
    AppTemplate("app.late_lines", "SELECT o.o_orderkey, o.o_orderpriority, l.l_linenumber FROM lineitem l "
                "JOIN orders o ON o.o_orderkey = l.l_orderkey WHERE l.l_commitdate = $1::date "
                "AND o.o_orderpriority = $2", lambda r, sf: (_day(r), r.choice(PRIORITIES))),
    AppTemplate("app.customer_spend", "SELECT c.c_name, count(*), sum(o.o_totalprice) FROM customer c "
                "JOIN orders o ON o.o_custkey = c.c_custkey WHERE c.c_custkey = $1 AND o.o_orderdate >= $2::date "
                "GROUP BY c.c_name", lambda r, sf: (_cust(r, sf), _day(r, date(1995, 1, 1)))),
)


def _literal(value: Value) -> str:
    return repr(value) if isinstance(value, int) else string_literal(str(value))


def statements(seed: int = 0, scale: float = SCALE, per_template: int = 1) -> list[BoundStatement]:
    """Executable statements with literal constants drawn from ``random.Random(seed)``; with ``per_template``
    > 1 the template's other bindings are ``samples``."""
    rng = random.Random(seed)
    out = []
    for t in TEMPLATES:
        bound = [substitute(t.text, lambda k, v=t.draw(rng, scale): _literal(v[k - 1])) for _ in range(per_template)]
        out.append(BoundStatement(t.key, t.text, bound[0], 1.0, "literal", False, samples=tuple(bound[1:])))
    return out


def prepare(target: Connector, scale: float = SCALE, progress: Callable[[str], None] | None = None) -> None:
    """TPC-H at ``scale`` (primary keys only) in the empty database at ``target`` (its connector),
    analyzed."""
    connector = loader_connector(target)
    tpch.load(connector, scale, progress=progress)
    connector.loader().analyze()


def drive(target: Connector, rounds: int = 5, seed: int = 0, scale: float = SCALE,
          timeout_ms: int = 60_000) -> int:
    """Run every template ``rounds`` times with fresh constants as server-side parameters (as the application
    does; the templates are in TPC-H's ``SOURCE_DIALECT``); returns the statements run."""
    connector = loader_connector(target)
    rng = random.Random(seed)
    texts = {t.key: to_dialect(t.text, tpch.SOURCE_DIALECT, connector.dialect) for t in TEMPLATES}
    calls = [(texts[t.key], [str(v) if isinstance(v, date) else v for v in t.draw(rng, scale)])
             for _ in range(rounds) for t in TEMPLATES]
    return connector.loader().run_parameterized(calls, timeout_ms)
