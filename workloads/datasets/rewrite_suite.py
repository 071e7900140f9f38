"""Rewrite-prone statements over TPC-H data, for ``advisor bench rewrite`` beside the 22 TPC-H queries: the shapes
application code writes and planners handle badly or that rewriters get wrong. Each is (name, what it exercises,
SQL with its constants). Correlated aggregates that PostgreSQL runs once per outer row (it does not decorrelate
them), the COUNT bug (a count over no rows is 0, not NULL), NOT IN over NOT NULL and over nullable expressions,
EXISTS with filters to push, OR chains, joins whose table adds nothing, DISTINCT over a key, comma joins, and
correlated subqueries inside a UNION's branches and a derived table, IN over a grouped subquery, and subqueries in
the select list, a CASE, ORDER BY and HAVING.

>>> [name for name, _, _ in SUITE][:3]
['avg_per_customer', 'few_orders_count_bug', 'not_in_not_null']
>>> len(SUITE) == len({name for name, _, _ in SUITE})
True
"""

from __future__ import annotations

SUITE: tuple[tuple[str, str, str], ...] = (
    ("avg_per_customer", "correlated scalar aggregate (avg) on the outer table's own rows",
     "SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate < date '1992-02-01' AND o_totalprice > "
     "(SELECT 1.5 * avg(o2.o_totalprice) FROM orders o2 WHERE o2.o_custkey = orders.o_custkey)"),
    ("few_orders_count_bug", "correlated count compared so that customers without orders qualify (the COUNT bug)",
     "SELECT c_custkey, c_name FROM customer WHERE c_nationkey = 7 AND "
     "2 > (SELECT count(*) FROM orders WHERE o_custkey = c_custkey)"),
    ("not_in_not_null", "NOT IN over a NOT NULL column (an anti-join is NULL-safe)",
     "SELECT c_custkey, c_name FROM customer WHERE c_custkey NOT IN "
     "(SELECT o_custkey FROM orders WHERE o_orderdate >= date '1998-06-01')"),
    ("not_in_nullable", "NOT IN over a nullable expression (an anti-join would change the answer)",
     "SELECT s_suppkey FROM supplier WHERE s_nationkey NOT IN "
     "(SELECT CASE WHEN n_regionkey = 1 THEN NULL ELSE n_nationkey END FROM nation)"),
    ("max_supplycost", "correlated scalar aggregate (min) over the same table, TPC-H Q2 style",
     "SELECT ps_partkey, ps_suppkey, ps_supplycost FROM partsupp WHERE ps_partkey < 200 AND ps_supplycost = "
     "(SELECT min(ps2.ps_supplycost) FROM partsupp ps2 WHERE ps2.ps_partkey = partsupp.ps_partkey)"),
    ("supplier_volume", "correlated sum with a range filter inside the subquery",
     "SELECT s_suppkey, s_name FROM supplier WHERE s_acctbal > (SELECT 0.0005 * sum(l_extendedprice) FROM lineitem "
     "WHERE l_suppkey = s_suppkey AND l_shipdate >= date '1995-01-01' AND l_shipdate < date '1996-01-01')"),
    ("exists_with_filters", "EXISTS over a join with a filter on the inner side",
     "SELECT p_partkey, p_name FROM part WHERE p_size = 15 AND EXISTS (SELECT 1 FROM partsupp, supplier "
     "WHERE ps_partkey = p_partkey AND ps_suppkey = s_suppkey AND s_acctbal < 0)"),
    ("in_subquery", "uncorrelated IN with a selective outer filter",
     "SELECT o_orderkey, o_orderdate FROM orders WHERE o_custkey IN "
     "(SELECT c_custkey FROM customer WHERE c_mktsegment = 'BUILDING') AND o_orderdate < date '1992-03-15'"),
    ("or_chain", "an OR of predicates on two columns (UNION ALL of index lookups, given indexes)",
     "SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_partkey = 5 OR l_suppkey = 7"),
    ("useless_join", "a join to a table none of whose columns are used (removable with the foreign key)",
     "SELECT l_orderkey, l_quantity FROM lineitem JOIN orders ON o_orderkey = l_orderkey WHERE l_quantity > 49"),
    ("distinct_key", "DISTINCT over a key (the rows are distinct already)",
     "SELECT DISTINCT c_custkey, c_name FROM customer WHERE c_acctbal > 9000"),
    ("comma_joins", "comma joins with the filter on the last table",
     "SELECT count(*) FROM nation, region, supplier WHERE n_regionkey = r_regionkey AND s_nationkey = n_nationkey "
     "AND r_name = 'ASIA'"),
    ("left_join_filter", "a filter on a LEFT JOIN's nullable side in WHERE (the join is inner in effect)",
     "SELECT c_custkey, o_orderkey FROM customer LEFT JOIN orders ON o_custkey = c_custkey "
     "WHERE o_totalprice > 400000"),
    ("late_part_avg", "TPC-H Q17's shape on another brand: a correlated avg over lineitem per part",
     "SELECT sum(l_extendedprice) FROM lineitem, part WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' "
     "AND p_container = 'WRAP BOX' AND l_quantity < (SELECT 0.3 * avg(l_quantity) FROM lineitem l2 "
     "WHERE l2.l_partkey = p_partkey)"),
    ("union_correlated", "UNION ALL of two branches, each with a correlated scalar aggregate (both searched)",
     "SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate < date '1992-02-01' AND o_totalprice > "
     "(SELECT 1.5 * avg(o2.o_totalprice) FROM orders o2 WHERE o2.o_custkey = orders.o_custkey) UNION ALL "
     "SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate >= date '1998-07-01' AND o_totalprice < "
     "(SELECT 0.5 * avg(o3.o_totalprice) FROM orders o3 WHERE o3.o_custkey = orders.o_custkey)"),
    ("derived_correlated", "a derived table whose rows pass a correlated aggregate, filtered and grouped outside",
     "SELECT s.o_custkey, count(*) FROM (SELECT o_orderkey, o_custkey FROM orders WHERE o_totalprice > "
     "(SELECT 1.2 * avg(o2.o_totalprice) FROM orders o2 WHERE o2.o_custkey = orders.o_custkey)) AS s "
     "WHERE s.o_custkey < 300 GROUP BY s.o_custkey"),
    ("in_grouped", "IN over a grouped subquery (TPC-H Q18's shape): a semi-join with a view keyed on its column",
     "SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate < date '1993-01-01' AND o_orderkey IN "
     "(SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 250)"),
    # subqueries of the select list, ORDER BY and HAVING (an ORM's computed columns): PostgreSQL runs each once per
    # row; decorrelated, they are LEFT JOINs with grouped derived tables
    ("last_order_column", "an ORM's 'last order date per customer' column: a correlated max in the select list",
     "SELECT c_custkey, c_name, (SELECT max(o_orderdate) FROM orders WHERE o_custkey = c_custkey) AS last_order "
     "FROM customer WHERE c_nationkey = 7"),
    ("order_count_column", "a correlated count in the select list (customers without orders must show 0)",
     "SELECT c_custkey, (SELECT count(*) FROM orders WHERE o_custkey = c_custkey) AS orders FROM customer "
     "WHERE c_nationkey = 3"),
    ("spent_case_column", "a correlated sum in a CASE branch of the select list (the ELSE rows must stay)",
     "SELECT c_custkey, CASE WHEN c_acctbal > 0 THEN (SELECT sum(o_totalprice) FROM orders "
     "WHERE o_custkey = c_custkey) ELSE 0 END AS spent FROM customer WHERE c_nationkey = 11"),
    ("has_orders_column", "EXISTS in the select list, with a filter inside",
     "SELECT c_custkey, EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey AND o_orderstatus = 'F') "
     "AS has_finished FROM customer WHERE c_nationkey = 5"),
    ("no_urgent_case", "NOT EXISTS in a CASE of the select list",
     "SELECT c_custkey, CASE WHEN NOT EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey "
     "AND o_orderpriority = '1-URGENT') THEN 'calm' ELSE 'urgent' END AS kind FROM customer WHERE c_nationkey = 9"),
    ("top_by_largest_order", "ORDER BY a correlated max, with a LIMIT",
     "SELECT c_custkey, c_name FROM customer WHERE c_nationkey = 13 ORDER BY (SELECT max(o_totalprice) "
     "FROM orders WHERE o_custkey = c_custkey) DESC NULLS LAST, c_custkey LIMIT 10"),
    ("having_above_own_average", "HAVING compares each group with a correlated aggregate over its own key",
     "SELECT o_custkey, sum(o_totalprice) AS spent FROM orders WHERE o_orderdate < date '1992-02-01' "
     "GROUP BY o_custkey HAVING sum(o_totalprice) > "
     "(SELECT 2 * avg(o2.o_totalprice) FROM orders o2 WHERE o2.o_custkey = orders.o_custkey)"),
    ("first_and_last_order", "two correlated aggregates in one select list (a derived table each)",
     "SELECT c_custkey, (SELECT min(o_orderdate) FROM orders WHERE o_custkey = c_custkey) AS first_order, "
     "(SELECT max(o_orderdate) FROM orders WHERE o_custkey = c_custkey) AS last_order FROM customer "
     "WHERE c_nationkey = 1"),
    ("above_average_flag", "a comparison with a correlated avg in the select list",
     "SELECT o_orderkey, o_totalprice > (SELECT avg(o2.o_totalprice) FROM orders o2 "
     "WHERE o2.o_custkey = orders.o_custkey) AS above FROM orders WHERE o_orderdate < date '1992-01-15'"),
    ("supplier_name_lookup", "a scalar subquery on the supplier's key in the select list (at most one row)",
     "SELECT ps_partkey, ps_supplycost, (SELECT s_name FROM supplier WHERE s_suppkey = ps_suppkey) AS supplier "
     "FROM partsupp WHERE ps_availqty < 100"),
)
