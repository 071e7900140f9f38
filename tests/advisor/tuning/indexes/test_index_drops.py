"""Dropping existing indexes through the whole index pipeline on a real server: a table with an unused index and
an index that another one covers (its columns are a prefix of the other's) gets their DROPs in the validated
recommendation, next to the new index the workload needs; applying it drops them, reverting recreates them as
they were. The index behind an exclusion constraint is never proposed. Which drops are kept does not depend on
timing: no plan uses either index, so no regression can condemn them."""

import psycopg

from advisor.core.domain import DropIndexChange
from advisor.storage.store import Store
from advisor.tuning.indexes.pipeline import IndexPlan, tune_indexes
from advisor.tuning.observe import observe
from advisor.tuning.validation import ValidationOptions
from connectors.postgres import PostgresConnector
from tests.conftest import run

DEFS = {"t_a": "CREATE INDEX t_a ON public.t USING btree (a)",
        "t_a_b": "CREATE INDEX t_a_b ON public.t USING btree (a, b)",
        "t_c_unused": "CREATE INDEX t_c_unused ON public.t USING btree (c)"}


def indexes(db):
    with psycopg.connect(db) as conn:
        return dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 't' "
                                 "AND indexname <> 't_pkey'").fetchall())


def advise(target, tmp_path):
    """Extend through the whole index pipeline, validated (3 rounds), budget 50 MB."""
    with Store(tmp_path / "s.duckdb") as store:
        plan = IndexPlan("extend", budget_mb=50, validation=ValidationOptions(rounds=3))
        return tune_indexes(store, target, observe(store, target), plan, model_dir=tmp_path / "model")


def test_unused_and_covered_indexes_are_dropped_validated_and_reverted(db, tmp_path):
    run(db, "CREATE TABLE t (id int PRIMARY KEY, a int, b int, c int, d int, pad text)",
        "INSERT INTO t SELECT x, x % 100, (x / 100) % 50, x % 7, x % 20000, repeat('p', 60) "
        "FROM generate_series(1, 200000) x",
        *DEFS.values(), "CREATE TABLE booking (during int4range, EXCLUDE USING gist (during WITH &&))",
        "INSERT INTO booking VALUES ('[1,5)'), ('[5,9)')",  # its index is unused but backs a constraint
        "ANALYZE", "SELECT pg_stat_reset()", "SELECT pg_stat_statements_reset()")
    for k in range(5):
        run(db, f"SELECT * FROM t WHERE a = {k * 7} AND b = {k * 3}", f"SELECT * FROM t WHERE d = {k * 11}")
    target = PostgresConnector(db)
    res = advise(target, tmp_path)
    rec = res.recommendation
    assert rec is not None and rec.state == "validated", res.message
    drops = {c.name: c for c in rec.changes if isinstance(c, DropIndexChange)}
    assert set(drops) == {"t_a", "t_c_unused"}  # t_a_b serves the workload and stays; booking's backs a constraint
    assert drops["t_a"].why.endswith("covered by t_a_b (its columns are a prefix of it)")
    assert drops["t_c_unused"].why.startswith("unused: 0 scans since 20")  # the statistics reset's date
    assert 'DROP INDEX CONCURRENTLY IF EXISTS "public"."t_c_unused"' in " ".join(rec.apply_sql)
    report = {d["index"]: d for d in rec.details["drops"]}
    assert report["t_a"]["kept"] and report["t_a"]["statements"] == [] and report["t_a"]["size_bytes"] > 0
    assert report["t_c_unused"]["kept"]
    created = [ix for ix in rec.details["indexes"] if ix["kept"]]
    assert [ix["columns"] for ix in created] == [["d"]]
    print({k: created[0][k] for k in ("estimated_bytes", "calibrated_bytes", "built_bytes")}, rec.apply_sql)
    assert created[0]["estimated_bytes"] and created[0]["calibrated_bytes"] and created[0]["built_bytes"]
    assert (tmp_path / "model" / "index_sizes.json").is_file()  # built sizes kept for the next run

    applied = target.apply(list(rec.changes))
    after = indexes(db)
    assert "t_a" not in after and "t_c_unused" not in after and after["t_a_b"] == DEFS["t_a_b"]
    target.revert(applied)
    back = indexes(db)
    assert all(back[name] == definition for name, definition in DEFS.items())
    assert len(back) == 3


def test_drops_alone_are_recommended_when_no_new_index_is_worth_it(db, tmp_path):
    """The workload is served by the indexes it has (primary key and t_a_b): no new index is chosen, yet the
    unused and the covered index still get a validated drop-only recommendation, not a silent 'nothing'."""
    run(db, "CREATE TABLE t (id int PRIMARY KEY, a int, b int, c int, pad text)",
        "INSERT INTO t SELECT x, x % 100, (x / 100) % 50, x % 7, repeat('p', 60) FROM generate_series(1, 100000) x",
        DEFS["t_a"], DEFS["t_a_b"], DEFS["t_c_unused"], "ANALYZE", "SELECT pg_stat_reset()",
        "SELECT pg_stat_statements_reset()")
    for k in range(5):
        run(db, f"SELECT * FROM t WHERE a = {k * 7} AND b = {k * 3}", f"SELECT pad FROM t WHERE id = {k * 101}")
    target = PostgresConnector(db)
    res = advise(target, tmp_path)
    assert res.chosen == ()
    rec = res.recommendation
    assert rec is not None and rec.state == "validated", res.message
    assert sorted(c.name for c in rec.changes) == ["t_a", "t_c_unused"]
    assert all(isinstance(c, DropIndexChange) for c in rec.changes)
    assert "no new index is kept" in res.message and "freeing" in res.message
    assert len(res.explain) == 2 and rec.details["explain"]  # every statement still explained
