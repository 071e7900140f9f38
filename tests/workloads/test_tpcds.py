"""The TPC-DS subset loader: tables at the smallest scale with the generator's row counts, primary keys, the foreign
keys between loaded tables (validated, so the data keeps them) and no other index."""

import psycopg
import pytest

from advisor.core.errors import AdvisorError
from connectors import factory
from workloads.datasets import tpcds

# six tables (a fact and five dimensions, about 1.5 s to load): tpcgen-cli's row counts at scale 0.01
TABLES = ("income_band", "household_demographics", "store", "reason", "item", "store_returns")
ROWS = {"income_band": 20, "household_demographics": 7200, "store": 2, "reason": 75, "item": 2000,
        "store_returns": 11925}


@pytest.fixture(scope="module")
def small(pg):
    dsn = pg.create_database("tpcds_loader")
    return dsn, tpcds.load(factory.connector(dsn), tpcds.MIN_SCALE, TABLES)


def test_subset_loads_with_the_generators_row_counts(small):
    dsn, counts = small
    assert counts == ROWS
    with psycopg.connect(dsn) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert tables == set(TABLES)
        assert conn.execute("SELECT count(*) FROM store_returns").fetchone()[0] == ROWS["store_returns"]
        # types from the specification, NULL for an empty field
        types = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = 'item'").fetchall())
        assert (types["i_item_sk"], types["i_rec_start_date"], types["i_current_price"], types["i_item_id"]) == \
            ("integer", "date", "numeric", "character")
        assert conn.execute("SELECT count(*) FROM item WHERE i_rec_end_date IS NULL").fetchone()[0] > 0
        # analyzed
        assert conn.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'store_returns'").fetchone()[0] > 10


def test_primary_and_foreign_keys_and_no_other_index(small):
    dsn, _ = small
    with psycopg.connect(dsn) as conn:
        pkeys = dict(conn.execute(
            "SELECT c.relname, array_agg(a.attname::text ORDER BY k.ord) FROM pg_constraint p "
            "JOIN pg_class c ON c.oid = p.conrelid CROSS JOIN LATERAL unnest(p.conkey) WITH ORDINALITY k(n, ord) "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.n WHERE p.contype = 'p' "
            "AND c.relnamespace = 'public'::regnamespace GROUP BY 1").fetchall())
        assert pkeys == {t: list(tpcds.PRIMARY_KEYS[t]) for t in TABLES}
        fkeys = {tuple(r) for r in conn.execute(
            "SELECT c.relname, a.attname, r.relname FROM pg_constraint f JOIN pg_class c ON c.oid = f.conrelid "
            "JOIN pg_class r ON r.oid = f.confrelid JOIN pg_attribute a ON a.attrelid = c.oid "
            "AND a.attnum = f.conkey[1] WHERE f.contype = 'f' AND f.convalidated")}
        assert fkeys == {fk for fk in tpcds.FOREIGN_KEYS if fk[0] in TABLES and fk[2] in TABLES}
        assert ("store_returns", "sr_item_sk", "item") in fkeys and ("store_returns", "sr_store_sk", "store") in fkeys
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' "
                            "AND indexname NOT LIKE '%pkey'").fetchone()[0] == 0


def test_unknown_table_is_refused_before_anything_runs(db):
    with pytest.raises(AdvisorError, match="unknown TPC-DS table"):
        tpcds.load(factory.connector(db), tpcds.MIN_SCALE, ("store_sales", "call_centre"))
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
