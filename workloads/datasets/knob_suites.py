"""Benchmark suites for the knob bench beyond ``workloads.datasets.suites``: workloads whose best configuration needs several
knobs moved at once, and the one lookup the knob bench uses for every suite (``get``).

* ``planner``: an application's reporting and lookups over TPC-H data (the foreign-key and date indexes of the
  ``joins`` and ``lookups`` suites), whose best configuration sets four planner settings together, each worth a
  share of the gain and none most of it:

  - three explicit ``JOIN`` chains of 10 relations written in ORM order (``joins.j1..j3``): the default
    ``join_collapse_limit = 8`` pins the bad written order; 10 or more lets the planner reorder them, but only
    with ``geqo_threshold`` above 10: at or under it the chains go to the genetic planner (over 100 ms of
    planning each);
  - a report joining two sub-selects listed in ``FROM`` (4 and 5 relations): planned apart, the big one without
    the other's selective filter, unless ``from_collapse_limit`` is 9 or more;
  - four indexed lookups of moderate selectivity (``lookups.l1, l2, l5, l8``) that take index scans only when
    ``random_page_cost`` is near 1 (at most about 1.5 on this data; the searched range is 1 to 8).

  One pass, measured on PostgreSQL 15 at scale 0.1 (2 shared cores; passes vary by +-25% here): defaults
  0.73-1.01 s; random_page_cost 1.5 alone 0.54 s (lookups 280 -> 35 ms); join_collapse_limit and
  from_collapse_limit 10 alone 0.40 s; both with random_page_cost 1.1 0.15-0.20 s (about -80%); the same with
  geqo_threshold 8 0.50 s. Of 48 random (Sobol) configurations of the 27-knob space, 5 came within 90% of the
  best gain; on the bench's surrogate random search reaches on average 74% of the best after 6 trials (91% on
  ``joins``, where one knob does it).

* ``memory``: reporting over data larger than a server's default cache (TPC-H SF 0.2 is 266 MB in MariaDB's InnoDB,
  against its 128 MB buffer pool): scans of lineitem, primary-key lookups into it, a GROUP BY with about 160,000
  groups and a DISTINCT over orders. Written without engine-specific knobs in mind, its gain comes from memory
  sizes: on MariaDB 10.11 at its defaults (measured here, SF 0.2, one pass each) a 1 GB buffer pool, a 64 MB sort
  buffer and 256 MB in-memory temporary tables took the lookups 0.51 -> 0.16 s, the GROUP BY 6.2 -> 3.7 s and the
  DISTINCT 11.9 -> 1.0 s (it no longer spills into an on-disk temporary table); the scan stayed at 2.2-2.5 s
  (the sandbox reads through the OS page cache).

>>> [s.queryid for s in get("planner").statements()]
['planner.j1', 'planner.j2', 'planner.j3', 'planner.f1', 'planner.l1', 'planner.l2', 'planner.l5', 'planner.l8']
>>> get("joins") is suites.get("joins")
True
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from workloads.datasets import suites
from workloads.datasets.suite_base import Suite, Value, region, template
from workloads.datasets.suites import JOINS, LOOKUPS

FROM_SUBSELECTS_1 = """SELECT oc.c_mktsegment, ls.n_name, count(*) AS lines,
  sum(ls.l_extendedprice * (1 - ls.l_discount)) AS revenue
FROM (SELECT o.o_orderkey, c.c_mktsegment
      FROM orders o JOIN customer c ON c.c_custkey = o.o_custkey
      JOIN nation cn ON cn.n_nationkey = c.c_nationkey
      JOIN region cr ON cr.r_regionkey = cn.n_regionkey
      WHERE cr.r_name = $1 AND o.o_orderdate >= $2 AND o.o_orderdate < $3) oc,
     (SELECT l.l_orderkey, l.l_extendedprice, l.l_discount, sn.n_name
      FROM lineitem l JOIN supplier s ON s.s_suppkey = l.l_suppkey
      JOIN nation sn ON sn.n_nationkey = s.s_nationkey
      JOIN region sr ON sr.r_regionkey = sn.n_regionkey
      JOIN part p ON p.p_partkey = l.l_partkey
      WHERE sr.r_name = $4 AND p.p_size < $5) ls
WHERE ls.l_orderkey = oc.o_orderkey
GROUP BY oc.c_mktsegment, ls.n_name
ORDER BY revenue DESC"""


def _month(r: random.Random) -> tuple[date, date]:
    start = date(r.randint(1993, 1997), r.randint(1, 12), 1)
    return start, start + timedelta(days=31)


def _subselects_1(r: random.Random) -> tuple[Value, ...]:
    first, last = _month(r)
    return region(r), first, last, region(r), r.randint(20, 30)


_JOIN_CHAINS = {t.key: t for t in JOINS.templates}

PLANNER = Suite(
    name="planner",
    description=("Reporting and lookups whose best configuration sets four planner settings together: join chains "
                 "of 10 relations need join_collapse_limit >= 10 with geqo_threshold > 10, a join of two sub-selects "
                 "needs from_collapse_limit >= 9, and indexed lookups need random_page_cost near 1."),
    scale=0.1,
    setup_sql=tuple(dict.fromkeys(JOINS.setup_sql + LOOKUPS.setup_sql)),
    templates=(
        _JOIN_CHAINS["j1"], _JOIN_CHAINS["j2"], _JOIN_CHAINS["j3"],
        template("f1", FROM_SUBSELECTS_1, _subselects_1),
        *(t for t in LOOKUPS.templates if t.key in ("l1", "l2", "l5", "l8")),
    ),
)

# --- memory: data larger than the default caches, sorts and groupings larger than the default sort memory -------

M_SCAN = """SELECT l_returnflag, l_linestatus, count(*) AS lines, sum(l_extendedprice) AS value
FROM lineitem
WHERE l_shipdate >= $1
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus"""

M_LOOKUP = """SELECT count(*) AS lines, sum(l.l_quantity) AS quantity
FROM orders o
JOIN lineitem l ON l.l_orderkey = o.o_orderkey
WHERE o.o_totalprice > $1"""

M_GROUPS = """SELECT l_partkey, l_suppkey, count(*) AS lines, sum(l_quantity) AS quantity
FROM lineitem
WHERE l_shipdate >= $1
GROUP BY l_partkey, l_suppkey
ORDER BY quantity DESC
LIMIT 10"""

M_DISTINCT = """SELECT count(*) AS pairs
FROM (SELECT DISTINCT o_custkey, o_clerk FROM orders WHERE o_orderdate >= $1) t"""


def _early(r: random.Random) -> tuple[Value, ...]:
    return (date(1992, 1, 1) + timedelta(days=r.randint(30, 120)),)


MEMORY = Suite(
    name="memory",
    description=("Reporting over data larger than a server's default cache (repeated scans of lineitem, key "
                 "lookups into it) and groupings with many groups (GROUP BY, DISTINCT): the buffer cache, the sort "
                 "memory and the in-memory temporary tables' sizes matter (primary keys only)."),
    scale=0.2,
    setup_sql=(),
    templates=(
        template("m1", M_SCAN, _early),
        template("m2", M_LOOKUP, lambda r: (r.randint(28, 34) * 10000,)),
        template("m3", M_GROUPS, _early),
        template("m4", M_DISTINCT, lambda r: (date(1992, 1, 1) + timedelta(days=r.randint(0, 20)),)),
    ),
)

SUITES: dict[str, Suite] = {**suites.SUITES, PLANNER.name: PLANNER, MEMORY.name: MEMORY}


def get(name: str) -> Suite:
    """A suite of ``workloads.datasets.suites`` or of this module, by name."""
    return suites.get(name, SUITES)
