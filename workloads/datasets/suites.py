"""Named benchmark query suites over TPC-H data, for the knob-tuning benchmark.

Each suite stands for one kind of application and has knobs that matter for it:

* ``joins``: ORM-generated reporting queries, explicit ``JOIN ... ON`` chains over 9-10 relations written in the
  order an ORM emits them (display joins from the small dimension tables first, the joins its filters need last).
  At the default ``join_collapse_limit = 8`` the planner plans the first eight relations as a unit, without the
  selective filters of the last ones; raising ``join_collapse_limit``/``from_collapse_limit`` lets it reorder.
  Two smaller queries (5 relations) do not depend on the knob.
* ``lookups``: an application's indexed lookups of moderate selectivity; with the data in memory the default
  ``random_page_cost = 4`` keeps the planner on sequential scans and hash joins where index scans are faster.
* ``tpch``: the TPC-H queries (Q17 and Q20 left out: without an ``l_partkey`` index they take minutes).

Statements are built from templates with ``$n`` parameters (``normalized``) and values drawn from
``random.Random(seed)`` in TPC-H's value domains, so the same seed gives the same statements. The parameters do not
depend on the scale (except TPC-H Q11's fraction, which uses ``Suite.scale``).

>>> [s.queryid for s in get("joins").statements()][:2]
['joins.j1', 'joins.j2']
>>> get("lookups").statements(1) == get("lookups").statements(1)
True
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Mapping
from datetime import date, timedelta

from advisor.core.errors import NotFound
from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.datasets import tpch
from workloads.datasets.sqlsource import all_to_dialect
from workloads.datasets.suite_base import Suite, Template, Value
from workloads.datasets.suite_base import brand as _brand
from workloads.datasets.suite_base import container as _container
from workloads.datasets.suite_base import day as _day
from workloads.datasets.suite_base import nation as _nation
from workloads.datasets.suite_base import nationkey as _nationkey
from workloads.datasets.suite_base import ptype as _ptype
from workloads.datasets.suite_base import region as _region
from workloads.datasets.suite_base import template as _template
from workloads.datasets.tpch.queries import CONTAINER_1, SEGMENTS, SHIPMODES, TEMPLATES, TYPE_1, TYPE_3

# --- joins --------------------------------------------------------------------------------------------------------

J1 = """SELECT sn.n_name AS supp_nation, cn.n_name AS cust_nation, count(*) AS lines,
  sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue
FROM region cr
JOIN nation cn ON cn.n_regionkey = cr.r_regionkey
JOIN customer c ON c.c_nationkey = cn.n_nationkey
JOIN orders o ON o.o_custkey = c.c_custkey
JOIN lineitem l ON l.l_orderkey = o.o_orderkey
JOIN supplier s ON s.s_suppkey = l.l_suppkey
JOIN nation sn ON sn.n_nationkey = s.s_nationkey
JOIN region sr ON sr.r_regionkey = sn.n_regionkey
JOIN partsupp ps ON ps.ps_partkey = l.l_partkey AND ps.ps_suppkey = l.l_suppkey
JOIN part p ON p.p_partkey = ps.ps_partkey
WHERE cr.r_name = $1 AND sr.r_name = $2 AND p.p_type = $3
GROUP BY sn.n_name, cn.n_name
ORDER BY revenue DESC"""

J2 = """SELECT s.s_name, c.c_name, cn.n_name, o.o_orderdate, p.p_name, l.l_quantity, ps.ps_supplycost
FROM region sr
JOIN nation sn ON sn.n_regionkey = sr.r_regionkey
JOIN supplier s ON s.s_nationkey = sn.n_nationkey
JOIN partsupp ps ON ps.ps_suppkey = s.s_suppkey
JOIN lineitem l ON l.l_partkey = ps.ps_partkey AND l.l_suppkey = ps.ps_suppkey
JOIN orders o ON o.o_orderkey = l.l_orderkey
JOIN customer c ON c.c_custkey = o.o_custkey
JOIN nation cn ON cn.n_nationkey = c.c_nationkey
JOIN part p ON p.p_partkey = ps.ps_partkey
WHERE sn.n_name = $1 AND o.o_orderdate >= $2 AND o.o_orderdate < $3 AND p.p_brand = $4 AND p.p_container = $5
ORDER BY o.o_orderdate DESC, l.l_quantity DESC
LIMIT 50"""

J3 = """SELECT c.c_name, cn.n_name AS nation, cr.r_name AS region, count(DISTINCT o.o_orderkey) AS orders,
  sum(l.l_extendedprice * (1 - l.l_discount)) AS spent
FROM region sr
JOIN nation sn ON sn.n_regionkey = sr.r_regionkey
JOIN supplier s ON s.s_nationkey = sn.n_nationkey
JOIN partsupp ps ON ps.ps_suppkey = s.s_suppkey
JOIN part p ON p.p_partkey = ps.ps_partkey
JOIN lineitem l ON l.l_partkey = ps.ps_partkey AND l.l_suppkey = ps.ps_suppkey
JOIN orders o ON o.o_orderkey = l.l_orderkey
JOIN customer c ON c.c_custkey = o.o_custkey
JOIN nation cn ON cn.n_nationkey = c.c_nationkey
JOIN region cr ON cr.r_regionkey = cn.n_regionkey
WHERE sn.n_name = $1 AND o.o_orderdate >= $2 AND o.o_orderdate < $3 AND c.c_mktsegment = $4 AND cn.n_name = $5
GROUP BY c.c_name, cn.n_name, cr.r_name
ORDER BY spent DESC
LIMIT 20"""

J4 = """SELECT sn.n_name AS supp_nation, p.p_type, count(*) AS late_lines, avg(ps.ps_supplycost) AS avg_cost
FROM region sr
JOIN nation sn ON sn.n_regionkey = sr.r_regionkey
JOIN supplier s ON s.s_nationkey = sn.n_nationkey
JOIN lineitem l ON l.l_suppkey = s.s_suppkey
JOIN orders o ON o.o_orderkey = l.l_orderkey
JOIN customer c ON c.c_custkey = o.o_custkey
JOIN nation cn ON cn.n_nationkey = c.c_nationkey
JOIN region cr ON cr.r_regionkey = cn.n_regionkey
JOIN part p ON p.p_partkey = l.l_partkey
JOIN partsupp ps ON ps.ps_partkey = l.l_partkey AND ps.ps_suppkey = l.l_suppkey
WHERE cr.r_name = $1 AND p.p_type LIKE $2 AND p.p_size = $3 AND l.l_receiptdate > l.l_commitdate
GROUP BY sn.n_name, p.p_type
ORDER BY late_lines DESC"""

J5 = """SELECT l.l_shipmode, sn.n_name AS supp_nation, count(*) AS lines, sum(l.l_quantity) AS quantity,
  max(o.o_orderdate) AS last_order
FROM region sr
JOIN nation sn ON sn.n_regionkey = sr.r_regionkey
JOIN supplier s ON s.s_nationkey = sn.n_nationkey
JOIN partsupp ps ON ps.ps_suppkey = s.s_suppkey
JOIN part p ON p.p_partkey = ps.ps_partkey
JOIN lineitem l ON l.l_partkey = ps.ps_partkey AND l.l_suppkey = ps.ps_suppkey
JOIN orders o ON o.o_orderkey = l.l_orderkey
JOIN customer c ON c.c_custkey = o.o_custkey
JOIN nation cn ON cn.n_nationkey = c.c_nationkey
WHERE sr.r_name = $1 AND l.l_shipmode IN ($2, $3) AND cn.n_name = $4
GROUP BY l.l_shipmode, sn.n_name
ORDER BY l.l_shipmode, quantity DESC"""

J6 = """SELECT n.n_name, sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue, count(DISTINCT o.o_orderkey) AS orders
FROM region r
JOIN nation n ON n.n_regionkey = r.r_regionkey
JOIN customer c ON c.c_nationkey = n.n_nationkey
JOIN orders o ON o.o_custkey = c.c_custkey
JOIN lineitem l ON l.l_orderkey = o.o_orderkey
WHERE r.r_name = $1 AND o.o_orderdate >= $2 AND o.o_orderdate < $3
GROUP BY n.n_name
ORDER BY revenue DESC"""

J7 = """SELECT s.s_name, n.n_name, p.p_partkey, p.p_name, ps.ps_supplycost, ps.ps_availqty
FROM region r
JOIN nation n ON n.n_regionkey = r.r_regionkey
JOIN supplier s ON s.s_nationkey = n.n_nationkey
JOIN partsupp ps ON ps.ps_suppkey = s.s_suppkey
JOIN part p ON p.p_partkey = ps.ps_partkey
WHERE r.r_name = $1 AND p.p_type LIKE $2 AND p.p_size = $3
ORDER BY ps.ps_supplycost, s.s_name
LIMIT 100"""


def _years(r: random.Random, years: int) -> tuple[date, date]:
    first = r.randint(1992, 1998 - years)
    return date(first, 1, 1), date(first + years, 1, 1)


def _j5(r: random.Random) -> tuple[Value, ...]:
    m1, m2 = r.sample(SHIPMODES, 2)
    return _region(r), m1, m2, _nation(r)


def _j6(r: random.Random) -> tuple[Value, ...]:
    start = _day(r, date(1993, 1, 1), date(1998, 6, 1))
    return _region(r), start, start + timedelta(days=31)


JOINS = Suite(
    name="joins",
    description=("ORM-generated reporting over 9-10 explicitly joined tables (with the foreign-key indexes an ORM "
                 "creates), where the default join_collapse_limit/from_collapse_limit of 8 pin a bad written join "
                 "order; raising them to 12 lets the planner reorder."),
    scale=0.1,
    setup_sql=(
        "CREATE INDEX nation_n_regionkey_idx ON nation (n_regionkey)",
        "CREATE INDEX supplier_s_nationkey_idx ON supplier (s_nationkey)",
        "CREATE INDEX customer_c_nationkey_idx ON customer (c_nationkey)",
        "CREATE INDEX partsupp_ps_suppkey_idx ON partsupp (ps_suppkey)",
        "CREATE INDEX orders_o_custkey_idx ON orders (o_custkey)",
        "CREATE INDEX lineitem_l_partkey_l_suppkey_idx ON lineitem (l_partkey, l_suppkey)",
        "CREATE INDEX lineitem_l_suppkey_idx ON lineitem (l_suppkey)",
    ),
    templates=(
        _template("j1", J1, lambda r: (_region(r), _region(r), _ptype(r))),
        _template("j2", J2, lambda r: (_nation(r), *_years(r, 1), _brand(r), _container(r))),
        _template("j3", J3, lambda r: (_nation(r), *_years(r, 2), r.choice(SEGMENTS), _nation(r))),
        _template("j4", J4, lambda r: (_region(r), r.choice(TYPE_1) + " %", r.randint(1, 50))),
        _template("j5", J5, _j5),
        _template("j6", J6, _j6),
        _template("j7", J7, lambda r: (_region(r), "%" + r.choice(TYPE_3), r.randint(1, 50))),
    ),
)

# --- lookups ------------------------------------------------------------------------------------------------------

L1 = """SELECT c.c_custkey, c.c_name, count(DISTINCT o.o_orderkey) AS orders,
  sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue
FROM customer c
JOIN orders o ON o.o_custkey = c.c_custkey
JOIN lineitem l ON l.l_orderkey = o.o_orderkey
WHERE c.c_nationkey = $1 AND c.c_mktsegment = $2 AND o.o_orderdate >= $3 AND o.o_orderdate < $4
GROUP BY c.c_custkey, c.c_name
ORDER BY revenue DESC
LIMIT 20"""

L2 = """SELECT p.p_partkey, p.p_name, count(*) AS lines, sum(l.l_quantity) AS quantity
FROM part p
JOIN lineitem l ON l.l_partkey = p.p_partkey
WHERE p.p_brand = $1 AND p.p_size BETWEEN $2 AND $3
GROUP BY p.p_partkey, p.p_name
ORDER BY quantity DESC
LIMIT 20"""

L3 = """SELECT s.s_name, count(*) AS parts, sum(ps.ps_availqty) AS stock, max(p.p_retailprice) AS top_price
FROM supplier s
JOIN partsupp ps ON ps.ps_suppkey = s.s_suppkey
JOIN part p ON p.p_partkey = ps.ps_partkey
WHERE s.s_nationkey = $1 AND ps.ps_availqty < $2
GROUP BY s.s_name
ORDER BY stock DESC
LIMIT 20"""

L4 = """SELECT o.o_orderpriority, count(*) AS lines, sum(l.l_extendedprice) AS value
FROM orders o
JOIN lineitem l ON l.l_orderkey = o.o_orderkey
WHERE o.o_orderdate >= $1 AND o.o_orderdate < $2
GROUP BY o.o_orderpriority
ORDER BY o.o_orderpriority"""

L5 = """SELECT s.s_name, l.l_shipmode, count(*) AS lines, sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue
FROM supplier s
JOIN lineitem l ON l.l_suppkey = s.s_suppkey
WHERE s.s_nationkey = $1 AND s.s_acctbal > $2 AND l.l_shipdate >= $3 AND l.l_shipdate < $4
GROUP BY s.s_name, l.l_shipmode
ORDER BY revenue DESC
LIMIT 20"""

L6 = """SELECT c.c_mktsegment, count(DISTINCT c.c_custkey) AS customers, count(*) AS orders,
  avg(o.o_totalprice) AS avg_price
FROM customer c
JOIN orders o ON o.o_custkey = c.c_custkey
WHERE c.c_nationkey = $1 AND c.c_acctbal > $2
GROUP BY c.c_mktsegment
ORDER BY c.c_mktsegment"""

L7 = """SELECT p.p_partkey, p.p_name, s.s_name, n.n_name, ps.ps_supplycost
FROM part p
JOIN partsupp ps ON ps.ps_partkey = p.p_partkey
JOIN supplier s ON s.s_suppkey = ps.ps_suppkey
JOIN nation n ON n.n_nationkey = s.s_nationkey
WHERE p.p_brand = $1 AND p.p_container LIKE $2
ORDER BY ps.ps_supplycost
LIMIT 100"""

L8 = """SELECT c.c_custkey, c.c_name, o.o_orderkey, o.o_orderdate, o.o_totalprice
FROM customer c
JOIN orders o ON o.o_custkey = c.c_custkey
WHERE c.c_nationkey = $1 AND c.c_mktsegment = $2
ORDER BY o.o_totalprice DESC
LIMIT 50"""


def _l1(r: random.Random) -> tuple[Value, ...]:
    start = _day(r, date(1993, 1, 1), date(1996, 12, 31))
    return _nationkey(r), r.choice(SEGMENTS), start, start + timedelta(days=365)


def _l2(r: random.Random) -> tuple[Value, ...]:
    low = r.randint(1, 30)
    return _brand(r), low, low + 20


def _window(days: int) -> Callable[[random.Random], tuple[Value, ...]]:
    def draw(r: random.Random) -> tuple[Value, ...]:
        start = _day(r, date(1992, 2, 1), date(1998, 6, 1))
        return start, start + timedelta(days=days)

    return draw


LOOKUPS = Suite(
    name="lookups",
    description=("An application's indexed lookups of moderate selectivity over cached data (secondary indexes on "
                 "the foreign keys and order dates), where a random_page_cost near seq_page_cost (1.1 instead of 4) "
                 "turns sequential scans and hash joins into faster index scans and nested loops."),
    scale=0.3,
    setup_sql=(
        "CREATE INDEX orders_o_custkey_idx ON orders (o_custkey)",
        "CREATE INDEX orders_o_orderdate_idx ON orders (o_orderdate)",
        "CREATE INDEX lineitem_l_partkey_idx ON lineitem (l_partkey)",
        "CREATE INDEX lineitem_l_suppkey_idx ON lineitem (l_suppkey)",
        "CREATE INDEX customer_c_nationkey_idx ON customer (c_nationkey)",
        "CREATE INDEX partsupp_ps_suppkey_idx ON partsupp (ps_suppkey)",
        "CREATE INDEX supplier_s_nationkey_idx ON supplier (s_nationkey)",
    ),
    templates=(
        _template("l1", L1, _l1),
        _template("l2", L2, _l2),
        _template("l3", L3, lambda r: (_nationkey(r), r.randint(5, 20) * 100)),
        _template("l4", L4, _window(21)),
        _template("l5", L5, lambda r: (_nationkey(r), r.randint(40, 60) * 100, *_years(r, 1))),
        _template("l6", L6, lambda r: (_nationkey(r), r.randint(0, 8) * 1000)),
        _template("l7", L7, lambda r: (_brand(r), r.choice(CONTAINER_1) + " %")),
        _template("l8", L8, lambda r: (_nationkey(r), r.choice(SEGMENTS))),
    ),
)

# --- tpch ---------------------------------------------------------------------------------------------------------

TPCH_NUMBERS = tuple(n for n in tpch.QUERY_NUMBERS if n not in (17, 20))
_FIELD = re.compile(r"\{(\w+)\}")


def _normalized_tpch(n: int) -> str:
    """TPC-H template ``n`` with its ``{name}`` fields as ``$1, $2 ...`` in order of first appearance."""
    names: list[str] = []
    for _, name, _, _ in string.Formatter().parse(TEMPLATES[n]):
        if name and name not in names:
            names.append(name)
    return _FIELD.sub(lambda m: f"${names.index(m.group(1)) + 1}", TEMPLATES[n])


def _tpch_template(n: int) -> Template:
    return Template(f"q{n}", _normalized_tpch(n), lambda rng, scale: tpch.query(n, rng, scale))


TPCH = Suite(
    name="tpch",
    description=("Decision-support analytics (the TPC-H queries but Q17 and Q20, primary keys only): large scans, "
                 "hash joins, sorts and aggregates, where work_mem and the parallel-query settings are in play."),
    scale=0.1,
    setup_sql=(),
    templates=tuple(_tpch_template(n) for n in TPCH_NUMBERS),
)

SUITES: dict[str, Suite] = {s.name: s for s in (JOINS, LOOKUPS, TPCH)}


def names() -> list[str]:
    return list(SUITES)


def get(name: str, among: Mapping[str, Suite] | None = None) -> Suite:
    """The suite ``name`` of ``among`` (default: this module's ``SUITES``); NotFound naming the ones there are."""
    among = SUITES if among is None else among
    try:
        return among[name]
    except KeyError:
        raise NotFound(f"no benchmark suite named {name!r} (available: {', '.join(among)})") from None


def prepare(target: Connector, suite: Suite, scale: float | None = None,
            progress: Callable[[str], None] | None = None) -> None:
    """Load TPC-H at ``scale`` (default: the suite's) into the empty database at ``target`` (its
    connector), run the suite's ``setup_sql`` (written in TPC-H's ``SOURCE_DIALECT``), then ANALYZE (every row
    where the tables are small: ``exact_statistics_target``)."""
    say = progress or (lambda _msg: None)
    connector = loader_connector(target)
    counts = tpch.load(connector, suite.scale if scale is None else scale, progress=say)
    setup = all_to_dialect(suite.setup_sql, tpch.SOURCE_DIALECT, connector.dialect)
    for i, statement in enumerate(setup, 1):
        say(f"setup {i}/{len(setup)}")
        connector.loader().run_script([statement])
    target = exact_statistics_target(max(counts.values(), default=0))
    say("analyzing" + (" every row" if target else ""))
    connector.loader().analyze(statistics_target=target)


def exact_statistics_target(rows: int, most: int = 300_000) -> int | None:
    """The statistics target (PostgreSQL's measure: ANALYZE samples 300 x target rows) at which a table of
    ``rows`` is analyzed whole, when that reads at most ``most`` rows; None (the engine's default) beyond. Two loads
    of the same small suite then plan alike, so a demo's verdicts do not hang on which rows a sample drew.

    >>> exact_statistics_target(120_000), exact_statistics_target(10_000), exact_statistics_target(6_000_000)
    (400, 100, None)
    """
    if rows > most:
        return None
    return max(100, -(-rows // 300))
