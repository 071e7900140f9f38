"""PostgreSQL's own statements (catalog reads of pg_dump, psql, the advisor's extensions) are not the application's:
the connector's snapshot leaves them out, so that no engine-specific filter lives above connectors."""

from connectors.postgres import PostgresConnector
from connectors.postgres.internal import is_internal
from tests.conftest import run
from workloads.statements.capture import workload_delta


def test_catalog_and_tool_statements_are_the_engines_own():
    # pg_dump's catalog queries (in pg_stat_statements after every shadow copy) are not the application's
    assert is_internal("SELECT tableoid, oid, collname, collnamespace, collowner FROM pg_collation")
    assert is_internal("SELECT DISTINCT attrelid FROM pg_attribute WHERE attacl IS NOT NULL")
    assert is_internal("SELECT * FROM pg_stat_statements")
    assert not is_internal("SELECT * FROM orders WHERE id = $1")
    assert not is_internal("WITH x AS (SELECT 1) SELECT * FROM x")


def test_the_snapshot_leaves_the_engines_own_statements_out(db):
    run(db, "CREATE TABLE items (id int PRIMARY KEY, kind int)",
        "INSERT INTO items SELECT g, g % 7 FROM generate_series(1, 100) g")
    c = PostgresConnector(db)
    before = c.observe()
    run(db, "SELECT count(*) FROM items WHERE kind = 3",
        "SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND c.relname = 'items'",  # a tool's catalog read
        "SELECT hypopg_reset()", "SELECT current_setting('work_mem')")
    after = c.observe()
    texts = [s.query for s in after.statements]
    assert "SELECT count(*) FROM items WHERE kind = $1" in texts
    assert not [t for t in texts if is_internal(t)], texts
    assert [s.sql for s in workload_delta(after, before).statements] == ["SELECT count(*) FROM items WHERE kind = $1"]
