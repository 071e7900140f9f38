import time

import psycopg
import pytest

from advisor.core.domain import IndexChange, KnobChange
from advisor.core.errors import BadStatement, InvalidKnobValue, MissingExtension, TargetUnreachable, UnknownKnob
from connectors.postgres import PostgresConnector, applying
from connectors.postgres.sandbox import free_port
from tests.conftest import run, scalar
from workloads.statements.capture import workload_delta


def test_snapshot_delta_counts_exactly_the_statements_run_in_between(db):
    run(db, "CREATE TABLE items (id int PRIMARY KEY, kind int)", "INSERT INTO items SELECT g, g % 7 FROM generate_series(1, 1000) g")
    c = PostgresConnector(db)
    before = c.observe()
    for k in range(5):
        run(db, f"SELECT count(*) FROM items WHERE kind = {k}")
    run(db, "UPDATE items SET kind = 1 WHERE id = 3")
    after = c.observe()
    w = workload_delta(after, before)
    by_sql = {s.sql: s for s in w.statements}
    assert by_sql["SELECT count(*) FROM items WHERE kind = $1"].calls == 5
    assert by_sql["UPDATE items SET kind = $1 WHERE id = $2"].calls == 1
    assert all("db-advisor" not in s.sql and "pg_stat" not in s.sql for s in w.statements)
    assert w.write_share() == pytest.approx(1 / 6)


def test_a_table_never_analyzed_is_observed_with_its_live_rows(db):
    """pg_class.reltuples is -1 until the first ANALYZE: the rows the statistics counted stand in for it (a 20,000
    row table was otherwise a "small table" that got no index candidate)."""
    run(db, "CREATE TABLE fresh (id int, a int) WITH (autovacuum_enabled = off)",  # no ANALYZE behind our back
        "INSERT INTO fresh SELECT g, g % 7 FROM generate_series(1, 20000) g")
    c = PostgresConnector(db)
    deadline = time.monotonic() + 30  # the inserting session's counts reach the statistics when it ends
    while True:
        rows = next(t.rows for t in c.observe().tables if t.name == "fresh")
        if rows >= 20000 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert rows == 20000 and scalar(db, "SELECT reltuples FROM pg_class WHERE relname = 'fresh'") < 1


def test_snapshot_has_schema_stats_indexes_and_metrics(tpch_dsn):
    snap = PostgresConnector(tpch_dsn).observe()
    tables = {t.name: t for t in snap.tables}
    assert tables["lineitem"].rows > 50_000 and tables["lineitem"].total_bytes > 1_000_000
    assert any(c.table == "orders" and c.column == "o_orderdate" for c in snap.columns)
    assert any(i.table == "orders" and i.is_primary for i in snap.indexes)
    assert snap.metrics["database_bytes"] > 0 and "xact_commit" in snap.metrics
    assert snap.server_version.startswith("15")


def test_catalog_knows_units_bounds_and_restart_needs(db):
    cat = PostgresConnector(db).knob_catalog()
    assert cat["shared_buffers"].needs_restart and cat["shared_buffers"].unit == "8kB"
    assert not cat["work_mem"].needs_restart and cat["work_mem"].reload_only and cat["work_mem"].unit == "kB"
    assert cat["random_page_cost"].vartype == "real" and cat["random_page_cost"].min_value == 0
    assert "on" in cat["jit"].setting or cat["jit"].vartype == "bool"
    assert "try" in cat["huge_pages"].enum_values


def test_hypothetical_index_lowers_the_cost_of_a_selective_query(tpch_dsn):
    c = PostgresConnector(tpch_dsn)
    q = "SELECT * FROM lineitem WHERE l_partkey = 42"
    plain = c.explain_cost(q)
    hypo = c.explain_cost(q, [IndexChange("public", "lineitem", ("l_partkey",))])
    assert hypo < plain / 10
    assert c.explain_cost(q) == pytest.approx(plain)  # hypothetical indexes do not outlive the call


def test_malformed_sql_gets_a_clear_error(tpch_dsn):
    c = PostgresConnector(tpch_dsn)
    with pytest.raises(BadStatement, match="syntax error"):
        c.explain_cost("SELEC * FROM lineitem")
    with pytest.raises(BadStatement):
        c.explain_cost("SELECT 1; DROP TABLE lineitem")
    assert scalar(tpch_dsn, "SELECT count(*) FROM lineitem") > 0


def test_apply_then_revert_a_reload_setting_restores_the_original(db):
    c = PostgresConnector(db)
    original = scalar(db, "SHOW work_mem")
    applied = c.apply([KnobChange("work_mem", "64MB")])
    assert not applied.needs_restart
    assert scalar(db, "SHOW work_mem") == "64MB"  # a new session sees it
    c.revert(applied)
    applying.wait_visible(c, [KnobChange("work_mem", original)], restart_pending=False)
    assert scalar(db, "SHOW work_mem") == original
    assert scalar(db, "SELECT count(*) FROM pg_file_settings WHERE name = 'work_mem' AND sourcefile LIKE '%auto.conf'") == 0


def test_revert_restores_a_value_that_was_already_in_auto_conf(db):
    run(db, "ALTER SYSTEM SET random_page_cost = 2.5", "SELECT pg_reload_conf()")
    c = PostgresConnector(db)
    applying.wait_visible(c, [KnobChange("random_page_cost", "2.5")], restart_pending=False)
    try:
        applied = c.apply([KnobChange("random_page_cost", "1.1")])
        assert scalar(db, "SHOW random_page_cost") == "1.1"
        c.revert(applied)
        applying.wait_visible(c, [KnobChange("random_page_cost", "2.5")], restart_pending=False)
        assert scalar(db, "SHOW random_page_cost") == "2.5"
    finally:
        run(db, "ALTER SYSTEM RESET random_page_cost", "SELECT pg_reload_conf()")


def test_restart_setting_is_applied_and_reverted_with_a_restart(restartable):
    sb, c = restartable
    applied = c.apply([KnobChange("shared_buffers", "48MB")])
    assert applied.needs_restart and applied.restarted
    assert scalar(sb.dsn(), "SHOW shared_buffers") == "48MB"
    c.revert(applied)
    assert scalar(sb.dsn(), "SHOW shared_buffers") == "128MB"


def test_restart_setting_without_a_restarter_is_reported_pending(db):
    c = PostgresConnector(db)
    applied = c.apply([KnobChange("max_wal_senders", "7")])
    try:
        assert applied.needs_restart and not applied.restarted
        assert scalar(db, "SELECT pending_restart FROM pg_settings WHERE name = 'max_wal_senders'")
    finally:
        c.revert(applied)


@pytest.mark.parametrize("change, error", [
    (KnobChange("no_such_knob", "1"), UnknownKnob),
    (KnobChange("work_mem", "1PB"), InvalidKnobValue),
    (KnobChange("work_mem", "-5"), InvalidKnobValue),
    (KnobChange("random_page_cost", "cheap"), InvalidKnobValue),
    (KnobChange("jit", "perhaps"), InvalidKnobValue),
    (KnobChange("server_version", "99"), InvalidKnobValue),
])
def test_bad_changes_are_refused_before_anything_runs(db, change, error):
    c = PostgresConnector(db)
    before = scalar(db, "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%auto.conf'")
    with pytest.raises(error):
        c.apply([KnobChange("work_mem", "8MB"), change])
    assert scalar(db, "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%auto.conf'") == before


def test_index_apply_and_revert_with_hostile_identifiers(db):
    hostile = 'a"; drop table x; --'
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute('CREATE TABLE x (id int)')
        conn.execute(psycopg.sql.SQL("CREATE TABLE {} ({} int, b int)").format(
            psycopg.sql.Identifier(hostile), psycopg.sql.Identifier(hostile)))
    c = PostgresConnector(db)
    change = IndexChange("public", hostile, (hostile, "b"))
    applied = c.apply([change])
    assert applied.apply_sql[0].startswith("CREATE INDEX CONCURRENTLY")
    assert scalar(db, "SELECT count(*) FROM pg_indexes WHERE tablename = %s", (hostile,)) == 1
    assert c.explain_cost(f'SELECT * FROM "a""; drop table x; --" WHERE b = 1', [change]) > 0
    c.revert(applied)
    assert scalar(db, "SELECT count(*) FROM pg_indexes WHERE tablename = %s", (hostile,)) == 0
    assert scalar(db, "SELECT count(*) FROM x") == 0  # table x survived


def test_unreachable_server_and_bad_dsn_give_one_line_errors():
    with pytest.raises(TargetUnreachable, match="cannot connect to 127.0.0.1"):
        PostgresConnector(f"host=127.0.0.1 port={free_port()} dbname=x user=postgres").observe()
    with pytest.raises(TargetUnreachable, match="invalid DSN"):
        PostgresConnector("host=127.0.0.1 port 5432")


def test_missing_pg_stat_statements_is_named(pg):
    dsn = pg.create_database("no_ext", extensions=False)
    with pytest.raises(MissingExtension, match="pg_stat_statements"):
        PostgresConnector(dsn).observe()


def test_plans_name_the_indexes_they_use_and_built_sizes_are_read(db):
    run(db, "CREATE TABLE p (id int PRIMARY KEY, a int)",
        "INSERT INTO p SELECT g, g % 1000 FROM generate_series(1, 20000) g", "ANALYZE p")
    c = PostgresConnector(db)
    ix = IndexChange("public", "p", ("a",))
    applied = c.apply([ix])
    try:
        used = [p.indexes for p in c.plans(["SELECT * FROM p WHERE a = 5", "SELECT * FROM p WHERE id = 5",
                                             "SELECT count(*) FROM p"])]
        assert used[0] == {c.index_name(ix)} and used[1] == {"p_pkey"}
        sizes = c.index_sizes([ix, IndexChange("public", "p", ("id", "a"))])
        assert sizes[ix] > 8192 and sizes[IndexChange("public", "p", ("id", "a"))] is None
    finally:
        c.revert(applied)


def test_plan_index_names_walks_the_whole_plan():
    from connectors.postgres.whatif import plan_index_names

    plan = {"Plan": {"Node Type": "Nested Loop", "Plans": [
        {"Node Type": "Index Scan", "Index Name": "a_idx"},
        {"Node Type": "Bitmap Heap Scan", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "b_idx"}]}]}}
    assert plan_index_names(plan) == {"a_idx", "b_idx"}
