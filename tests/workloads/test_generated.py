"""Generated workloads over schemas nobody wrote the advisor for (TPC-H with no foreign key declared, a tiny TPC-DS
with its foreign keys): the same seed gives the same statements, every family comes out, every statement runs and
returns what it returned when validated, and constants come from the data."""

import re

import psycopg
import pytest
import sqlglot

from connectors import factory
from workloads.datasets import synthetic as generated, tpcds
from workloads.statements.binding import BoundStatement
from workloads.datasets.synthetic import FAMILIES, INDEX_FAMILIES, REWRITE_FAMILIES

# the store channel with its dimensions at the smallest scale (store_sales 120k rows), about 4 s to load
TPCDS_TABLES = ("date_dim", "income_band", "household_demographics", "customer_address", "customer", "item",
                "store", "promotion", "store_sales", "store_returns")
N = 2 * len(FAMILIES)
# a statement slower than the generator's timeout is drawn again, so the same seed gives the same statements only
# when no statement comes near it: the tests give a timeout that a loaded machine cannot reach (5 s by default)
NO_TIMEOUT_MS = 300_000


@pytest.fixture(scope="module")
def tpcds_dsn(pg):
    dsn = pg.create_database("tpcds_gen")
    tpcds.load(factory.connector(dsn), tpcds.MIN_SCALE, TPCDS_TABLES)
    return dsn


@pytest.fixture(scope="module")
def tpch_workload(tpch_dsn):
    return generated.generate(factory.connector(tpch_dsn), N, seed=3, timeout_ms=NO_TIMEOUT_MS)


@pytest.fixture(scope="module")
def tpcds_workload(tpcds_dsn):
    return generated.generate(factory.connector(tpcds_dsn), N, seed=11, timeout_ms=NO_TIMEOUT_MS)


def _rerun(dsn, workload):
    with psycopg.connect(dsn) as conn:
        return [len(conn.execute(g.sql).fetchall()) for g in workload]


@pytest.mark.parametrize("name", ["tpch", "tpcds"])
def test_every_family_every_statement_runs_and_returns_what_it_did(name, request):
    dsn = request.getfixturevalue(f"{name}_dsn")
    workload = request.getfixturevalue(f"{name}_workload")
    assert len(workload) == N
    assert {g.family for g in workload} == set(FAMILIES)
    assert _rerun(dsn, workload) == [g.rows for g in workload]  # the data is only read
    for g in workload:
        assert re.fullmatch(rf"gen\.s\d+\.{g.family}\.\d+", g.queryid) and 1 <= g.weight <= 1000
        sqlglot.parse_one(g.sql, read="postgres")  # what the advisor's analysis reads
    assert len({g.queryid for g in workload}) == N and len({g.sql for g in workload}) == N


@pytest.mark.parametrize("name", ["tpch", "tpcds"])
def test_constants_come_from_the_data(name, request):
    workload = request.getfixturevalue(f"{name}_workload")
    found = [g.rows > 0 for g in workload if g.family in ("lookup", "composite", "prefix", "join", "date_range")]
    assert sum(found) >= 0.9 * len(found)
    assert sum(g.rows > 0 for g in workload) >= 0.8 * len(workload)


@pytest.mark.parametrize("name", ["tpch", "tpcds"])
def test_the_same_seed_gives_the_same_statements(name, request):
    dsn = request.getfixturevalue(f"{name}_dsn")
    workload = request.getfixturevalue(f"{name}_workload")
    seed = int(workload[0].queryid.split(".")[1][1:])
    again = generated.generate(factory.connector(dsn), N, seed=seed, timeout_ms=NO_TIMEOUT_MS)
    assert again == workload
    other = generated.generate(factory.connector(dsn), 6, seed=seed + 1, timeout_ms=NO_TIMEOUT_MS)
    assert [g.sql for g in other] != [g.sql for g in workload[:6]]


def test_family_filter_and_bound_statements(tpch_dsn):
    index = generated.statements(factory.connector(tpch_dsn), 8, seed=5, families=INDEX_FAMILIES)
    assert all(isinstance(s, BoundStatement) and s.sql == s.normalized for s in index)
    assert {s.queryid.split(".")[2] for s in index} <= set(INDEX_FAMILIES)
    assert {s.queryid.split(".")[2] for s in index} >= set(INDEX_FAMILIES)  # 8 statements: each family once first
    n = len(REWRITE_FAMILIES)  # each family once
    rewrites = generated.generate(factory.connector(tpch_dsn), n, seed=5, families=REWRITE_FAMILIES)
    assert {g.family for g in rewrites} == set(REWRITE_FAMILIES)
    cases = generated.rewrite_cases(rewrites)
    assert [name for name, _, _ in cases] == [g.queryid for g in rewrites] and all(c[2] for c in cases)
    with pytest.raises(ValueError, match="unknown families"):
        generated.generate(factory.connector(tpch_dsn), 2, families=("lookup", "window"))


def test_schema_edges_declared_or_inferred(tpch_dsn, tpcds_dsn):
    tpch = generated.read_schema(factory.connector(tpch_dsn))
    edges = {(e.child, e.columns, e.parent, e.declared) for e in tpch.edges}
    assert ("lineitem", ("l_orderkey",), "orders", False) in edges  # no foreign key declared: from the key names
    assert ("nation", ("n_regionkey",), "region", False) in edges
    ds = generated.read_schema(factory.connector(tpcds_dsn))
    assert all(e.declared for e in ds.edges)
    assert ("store_sales", ("ss_sold_date_sk",), "date_dim", True) in {(e.child, e.columns, e.parent, e.declared)
                                                                        for e in ds.edges}
    sales = ds.table("store_sales")
    assert sales.keys[0] == ("ss_item_sk", "ss_ticket_number") and sales.rows > 100_000
    assert sales.column("ss_net_paid").histogram and sales.column("ss_quantity").mcv  # statistics read


def test_drive_runs_each_statement_by_its_calls(tpch_dsn, tpch_workload):
    few = tpch_workload[:4]
    assert generated.drive(factory.connector(tpch_dsn), few, max_calls=2) == sum(min(int(g.weight), 2) for g in few)


ODD = """
CREATE SCHEMA shop;
CREATE TABLE shop."Customer" ("Id" integer PRIMARY KEY, "user" text NOT NULL, email text, created_at timestamptz,
  active boolean, "group" smallint);
INSERT INTO shop."Customer" SELECT i, 'user ' || i, 'u' || i || '@mail' || (i % 7) || '.org',
  timestamptz '2020-01-01 00:00+00' + i * interval '3 hours', i % 3 = 0, i % 17 FROM generate_series(1, 2000) i;
CREATE TABLE shop.orders (order_id bigint PRIMARY KEY, customer_id integer REFERENCES shop."Customer",
  placed timestamp, amount numeric(10,2), note text, status varchar(12), "Select" integer);
INSERT INTO shop.orders SELECT i, CASE WHEN i % 20 <> 0 THEN 1 + (i * 7919) % 2000 END,
  timestamp '2021-06-01' + i * interval '37 minutes', (i % 500) * 1.25,
  (ARRAY['O''Brien''s order', '50% off_sale', 'back\\slash', 'plain'])[1 + i % 4],
  (ARRAY['new', 'paid', 'shipped', 'returned'])[1 + (i * i) % 4], i % 1000 FROM generate_series(1, 20000) i;
CREATE TABLE events (at date, kind text, n integer);
INSERT INTO events SELECT date '2022-01-01' + i % 400, 'kind-' || (i % 30), i FROM generate_series(1, 5000) i;
CREATE TABLE empty_t (id integer PRIMARY KEY);
ANALYZE;
"""


def test_an_odd_schema_quoted_names_no_keys_nulls_and_quotes(db):
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(ODD)
    schema = generated.read_schema(factory.connector(db))
    assert {t.qualified for t in schema.tables} == {"shop.Customer", "shop.orders", "events", "empty_t"}
    assert [(e.child, e.parent) for e in schema.edges] == [("shop.orders", "shop.Customer")]
    workload = generated.generate(factory.connector(db), N, seed=1)
    assert {g.family for g in workload} == set(FAMILIES)
    assert len(workload) >= N - 2
    assert _rerun(db, workload) == [g.rows for g in workload]
    text = " ".join(g.sql for g in workload)
    assert 'shop."Customer"' in text and "empty_t" not in text
