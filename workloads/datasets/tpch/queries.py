"""The 22 TPC-H queries (PostgreSQL syntax) with substitution parameters drawn as qgen draws them (spec 2.4).

Q15's view is written as a CTE so that each query is one statement. Every substituted value comes from the
fixed lists below or from numbers, and is rendered as a quoted SQL literal.

>>> q = query(6, random.Random(1), scale=1.0)
>>> "l_discount between" in q
True
"""

from __future__ import annotations

import random
from datetime import date

QUERY_NUMBERS = tuple(range(1, 23))

REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
NATIONS = (("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
           ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2),
           ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2),
           ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3),
           ("UNITED STATES", 1))
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
TYPE_1 = ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
TYPE_2 = ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
TYPE_3 = ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")
CONTAINER_1 = ("SM", "LG", "MED", "JUMBO", "WRAP")
CONTAINER_2 = ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM")
SHIPMODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
WORDS_1 = ("special", "pending", "unusual", "express")
WORDS_2 = ("packages", "requests", "accounts", "deposits")
COLORS = ("almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
          "brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral", "cornflower",
          "cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick", "floral", "forest",
          "frosted", "gainsboro", "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory",
          "khaki", "lace", "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
          "metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid",
          "pale", "papaya", "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy",
          "royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring",
          "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow")


def lit(value: object) -> str:
    """A SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def _month(r: random.Random, first: tuple[int, int], last: tuple[int, int]) -> date:
    months = (last[0] - first[0]) * 12 + last[1] - first[1]
    k = r.randint(0, months)
    y, m = divmod(first[1] - 1 + k, 12)
    return date(first[0] + y, m + 1, 1)


def _params(n: int, r: random.Random, scale: float) -> dict[str, str]:
    nation = lambda: r.choice(NATIONS)[0]  # noqa: E731
    if n == 1:
        return {"delta": lit(r.randint(60, 120))}
    if n == 2:
        return {"size": str(r.randint(1, 50)), "type": lit("%" + r.choice(TYPE_3)), "region": lit(r.choice(REGIONS))}
    if n == 3:
        return {"segment": lit(r.choice(SEGMENTS)), "date": lit(date(1995, 3, r.randint(1, 31)))}
    if n == 4:
        return {"date": lit(_month(r, (1993, 1), (1997, 10)))}
    if n == 5:
        return {"region": lit(r.choice(REGIONS)), "date": lit(date(r.randint(1993, 1997), 1, 1))}
    if n == 6:
        return {"date": lit(date(r.randint(1993, 1997), 1, 1)), "discount": f"{r.randint(2, 9) / 100:.2f}",
                "quantity": str(r.randint(24, 25))}
    if n == 7:
        a, b = r.sample(NATIONS, 2)
        return {"nation1": lit(a[0]), "nation2": lit(b[0])}
    if n == 8:
        name, region = r.choice(NATIONS)
        return {"nation": lit(name), "region": lit(REGIONS[region]),
                "type": lit(f"{r.choice(TYPE_1)} {r.choice(TYPE_2)} {r.choice(TYPE_3)}")}
    if n == 9:
        return {"color": lit(f"%{r.choice(COLORS)}%")}
    if n == 10:
        return {"date": lit(_month(r, (1993, 2), (1995, 1)))}
    if n == 11:
        return {"nation": lit(nation()), "fraction": f"{0.0001 / max(scale, 1e-6):.10f}"}
    if n == 12:
        a, b = r.sample(SHIPMODES, 2)
        return {"mode1": lit(a), "mode2": lit(b), "date": lit(date(r.randint(1993, 1997), 1, 1))}
    if n == 13:
        return {"pattern": lit(f"%{r.choice(WORDS_1)}%{r.choice(WORDS_2)}%")}
    if n == 14:
        return {"date": lit(_month(r, (1993, 1), (1997, 12)))}
    if n == 15:
        return {"date": lit(_month(r, (1993, 1), (1997, 10)))}
    if n == 16:
        sizes = r.sample(range(1, 51), 8)
        return {"brand": lit(f"Brand#{r.randint(1, 5)}{r.randint(1, 5)}"),
                "type": lit(f"{r.choice(TYPE_1)} {r.choice(TYPE_2)}%"), "sizes": ", ".join(map(str, sizes))}
    if n == 17:
        return {"brand": lit(f"Brand#{r.randint(1, 5)}{r.randint(1, 5)}"),
                "container": lit(f"{r.choice(CONTAINER_1)} {r.choice(CONTAINER_2)}")}
    if n == 18:
        return {"quantity": str(r.randint(312, 315))}
    if n == 19:
        brands = [lit(f"Brand#{r.randint(1, 5)}{r.randint(1, 5)}") for _ in range(3)]
        return {"brand1": brands[0], "brand2": brands[1], "brand3": brands[2], "q1": str(r.randint(1, 10)),
                "q2": str(r.randint(10, 20)), "q3": str(r.randint(20, 30))}
    if n == 20:
        return {"color": lit(r.choice(COLORS) + "%"), "date": lit(date(r.randint(1993, 1997), 1, 1)),
                "nation": lit(nation())}
    if n == 21:
        return {"nation": lit(nation())}
    if n == 22:
        codes = r.sample(range(10, 35), 7)
        return {"codes": ", ".join(lit(c) for c in codes)}
    raise ValueError(f"TPC-H has queries 1..22, not {n}")


TEMPLATES: dict[int, str] = {
    1: """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
  avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem where l_shipdate <= date '1998-12-01' - interval {delta} day
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus""",
    2: """select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = {size} and p_type like {type}
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = {region}
  and ps_supplycost = (select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = {region})
order by s_acctbal desc, n_name, s_name, p_partkey limit 100""",
    3: """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = {segment} and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date {date} and l_shipdate > date {date}
group by l_orderkey, o_orderdate, o_shippriority order by revenue desc, o_orderdate limit 10""",
    4: """select o_orderpriority, count(*) as order_count from orders
where o_orderdate >= date {date} and o_orderdate < date {date} + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority order by o_orderpriority""",
    5: """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey and c_nationkey = s_nationkey
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = {region}
  and o_orderdate >= date {date} and o_orderdate < date {date} + interval '1' year
group by n_name order by revenue desc""",
    6: """select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date {date} and l_shipdate < date {date} + interval '1' year
  and l_discount between {discount} - 0.01 and {discount} + 0.01 and l_quantity < {quantity}""",
    7: """select supp_nation, cust_nation, l_year, sum(volume) as revenue from (
  select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = {nation1} and n2.n_name = {nation2}) or (n1.n_name = {nation2} and n2.n_name = {nation1}))
    and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year order by supp_nation, cust_nation, l_year""",
    8: """select o_year, sum(case when nation = {nation} then volume else 0 end) / sum(volume) as mkt_share from (
  select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey and o_custkey = c_custkey
    and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey and r_name = {region}
    and s_nationkey = n2.n_nationkey and o_orderdate between date '1995-01-01' and date '1996-12-31'
    and p_type = {type}) as all_nations
group by o_year order by o_year""",
    9: """select nation, o_year, sum(amount) as sum_profit from (
  select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey and p_partkey = l_partkey
    and o_orderkey = l_orderkey and s_nationkey = n_nationkey and p_name like {color}) as profit
group by nation, o_year order by nation, o_year desc""",
    10: """select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name, c_address,
  c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date {date}
  and o_orderdate < date {date} + interval '3' month and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment order by revenue desc limit 20""",
    11: """select ps_partkey, sum(ps_supplycost * ps_availqty) as value from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = {nation}
group by ps_partkey having sum(ps_supplycost * ps_availqty) > (
  select sum(ps_supplycost * ps_availqty) * {fraction} from partsupp, supplier, nation
  where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = {nation})
order by value desc""",
    12: """select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ({mode1}, {mode2}) and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date {date} and l_receiptdate < date {date} + interval '1' year
group by l_shipmode order by l_shipmode""",
    13: """select c_count, count(*) as custdist from (
  select c_custkey, count(o_orderkey) as c_count
  from customer left outer join orders on c_custkey = o_custkey and o_comment not like {pattern}
  group by c_custkey) as c_orders
group by c_count order by custdist desc, c_count desc""",
    14: """select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
  / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date {date} and l_shipdate < date {date} + interval '1' month""",
    15: """with revenue as (
  select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue from lineitem
  where l_shipdate >= date {date} and l_shipdate < date {date} + interval '3' month group by l_suppkey)
select s_suppkey, s_name, s_address, s_phone, total_revenue from supplier, revenue
where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue)
order by s_suppkey""",
    16: """select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt from partsupp, part
where p_partkey = ps_partkey and p_brand <> {brand} and p_type not like {type} and p_size in ({sizes})
  and ps_suppkey not in (select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size order by supplier_cnt desc, p_brand, p_type, p_size""",
    17: """select sum(l_extendedprice) / 7.0 as avg_yearly from lineitem, part
where p_partkey = l_partkey and p_brand = {brand} and p_container = {container}
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
    18: """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > {quantity})
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice order by o_totalprice desc, o_orderdate limit 100""",
    19: """select sum(l_extendedprice * (1 - l_discount)) as revenue from lineitem, part
where (p_partkey = l_partkey and p_brand = {brand1} and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
    and l_quantity >= {q1} and l_quantity <= {q1} + 10 and p_size between 1 and 5
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = {brand2} and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
    and l_quantity >= {q2} and l_quantity <= {q2} + 10 and p_size between 1 and 10
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = {brand3} and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
    and l_quantity >= {q3} and l_quantity <= {q3} + 10 and p_size between 1 and 15
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')""",
    20: """select s_name, s_address from supplier, nation
where s_suppkey in (select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like {color})
      and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey and l_shipdate >= date {date}
          and l_shipdate < date {date} + interval '1' year))
  and s_nationkey = n_nationkey and n_name = {nation}
order by s_name""",
    21: """select s_name, count(*) as numwait from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey
    and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = {nation}
group by s_name order by numwait desc, s_name limit 100""",
    22: """select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal from (
  select substring(c_phone from 1 for 2) as cntrycode, c_acctbal from customer
  where substring(c_phone from 1 for 2) in ({codes})
    and c_acctbal > (select avg(c_acctbal) from customer where c_acctbal > 0.00
      and substring(c_phone from 1 for 2) in ({codes}))
    and not exists (select * from orders where o_custkey = c_custkey)) as custsale
group by cntrycode order by cntrycode""",
}


def query(n: int, rng: random.Random, scale: float = 1.0) -> str:
    """TPC-H query ``n`` with fresh substitution parameters."""
    return TEMPLATES[n].format(**_params(n, rng, scale))


def stream(rng: random.Random, scale: float = 1.0, numbers: tuple[int, ...] = QUERY_NUMBERS) -> list[tuple[int, str]]:
    """One query stream: each query once, in a shuffled order, each with its own parameters."""
    order = list(numbers)
    rng.shuffle(order)
    return [(n, query(n, rng, scale)) for n in order]


