"""The MariaDB connector against a real server: capture from statement digests (``$n`` placeholders, counts, the
advisor's own statements left out), the variable catalog, plans of a join, check_sql, identity, and apply/revert
of a dynamic variable, of an online index and of a drop, with the rollback of a change that fails midway."""

from __future__ import annotations

import pytest

from advisor.core.domain import DropIndexChange, IndexChange, KnobChange
from advisor.core.errors import AdvisorError, BadStatement, InvalidKnobValue, UnknownKnob
from advisor.core.plans import FULL_SCAN, INDEX_ONLY
from connectors import factory
from connectors.base import TAG, Connector
from connectors.mariadb.connection import parse_dsn
from tests.connectors.mariadb.conftest import mrows, mrun

SCHEMA = ("CREATE TABLE customers (id int PRIMARY KEY, name varchar(40), region int)",
          "CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, total int, "
          "CONSTRAINT fk_c FOREIGN KEY (customer_id) REFERENCES customers (id))",
          "INSERT INTO customers SELECT seq, CONCAT('c', seq), seq % 10 FROM seq_1_to_2000",
          "INSERT INTO orders SELECT seq, 1 + seq % 2000, seq % 97 FROM seq_1_to_20000",
          "ANALYZE TABLE customers, orders")


@pytest.fixture
def shop(mdb):
    mrun(mdb, *SCHEMA)
    return mdb


def test_it_satisfies_the_protocol_and_knows_its_schema(shop):
    c = factory.connector(shop)
    db = parse_dsn(shop)["database"]
    assert isinstance(c, Connector) and c.engine == "mariadb" and c.dialect == "mariadb"
    assert c.table_columns()[(db, "orders")] == ("id", "customer_id", "total")
    assert c.column_types()[(db, "orders")][1] == ("customer_id", "int(11)", True)
    assert c.unique_keys()[(db, "customers")] == (("id",),)
    assert c.foreign_keys() == ((db, "orders", ("customer_id",), "customers", ("id",)),)
    ident = c.identity()
    assert ident["engine"] == "mariadb" and ident["database"] == db and ident["system_identifier"]
    assert c.has_extension("performance_schema") and not c.has_extension("no_such_plugin")


def test_observe_captures_one_digest_per_statement_shape_with_dollar_placeholders(shop):
    c = factory.connector(shop)
    c.reset_statement_stats()
    for region in (1, 2, 3):
        mrun(shop, f"SELECT name FROM customers WHERE region = {region} AND id > {region * 10}")
    mrun(shop, "SELECT COUNT(*) FROM orders WHERE total = 5")
    c.check_sql("SELECT name FROM customers WHERE region = $1")  # the advisor's own: not workload
    c.plan("SELECT name FROM customers WHERE region = 4 AND id > 0")
    with c.session() as s:  # outside SQL the advisor sends with its tag: left out ...
        s.run(TAG + "SELECT MAX(total) FROM orders WHERE customer_id = 3")
        s.run(TAG + "SELECT COUNT(*) FROM orders WHERE total = 6")  # ... unless the application runs it too
    snap = c.observe()
    by_text = {s.query: s for s in snap.statements}
    q = "SELECT NAME FROM `customers` WHERE `region` = $1 AND ID > $2"  # the server writes keywords upper case
    assert set(by_text) == {q, "SELECT COUNT( * ) FROM `orders` WHERE `total` = $1"}
    assert by_text["SELECT COUNT( * ) FROM `orders` WHERE `total` = $1"].calls == 2
    assert by_text[q].calls == 3 and by_text[q].total_ms > 0 and by_text[q].rows == sum(
        mrows(shop, f"SELECT COUNT(*) FROM customers WHERE region = {r} AND id > {r * 10}")[0][0] for r in (1, 2, 3))
    assert {t.name: t.rows > 0 for t in snap.tables} == {"customers": True, "orders": True}
    assert {i.name for i in snap.indexes if i.table == "orders"} == {"PRIMARY", "fk_c"}
    assert snap.metrics["questions"] > 0 and snap.database == parse_dsn(shop)["database"]
    region = next(s for s in snap.columns if s.table == "customers" and s.column == "id")
    assert region.n_distinct > 1000
    c.reset_statement_stats()
    assert c.observe().statements == ()


def test_the_catalog_has_types_ranges_enums_and_restart_needs(maria):
    cat = factory.connector(maria.dsn()).knob_catalog()
    sort = cat["sort_buffer_size"]
    assert (sort.vartype, sort.unit, sort.min_value, sort.needs_restart) == ("integer", "B", 1024.0, False)
    assert cat["innodb_buffer_pool_size"].unit == "B" and cat["innodb_buffer_pool_size"].context == "sighup"
    flush = cat["innodb_flush_method"]
    assert flush.vartype == "enum" and "O_DIRECT" in flush.enum_values and flush.needs_restart
    assert flush.setting == "fsync" and flush.source == "configuration file"
    assert cat["optimizer_search_depth"].max_value == 62 and cat["long_query_time"].vartype == "real"
    assert cat["autocommit"].vartype == "bool" and cat["autocommit"].setting == "on"
    assert "timestamp" not in cat  # session-only: nothing to tune


def test_plan_of_a_join_is_neutral(shop):
    c = factory.connector(shop)
    plan = c.plan("SELECT c.name, SUM(o.total) FROM orders o JOIN customers c ON c.id = o.customer_id "
                  "WHERE c.region = 3 GROUP BY c.name")
    tables = {n.table: n for n in plan.nodes() if n.table}
    assert set(tables) == {"orders", "customers"} and plan.cost > 0
    assert tables["customers"].access == FULL_SCAN or tables["orders"].access == FULL_SCAN
    assert "PRIMARY" in plan.indexes or "fk_c" in plan.indexes
    only = c.plan("SELECT customer_id FROM orders WHERE customer_id = 5")
    assert [n.access for n in only.nodes() if n.table] == [INDEX_ONLY] and only.indexes == {"fk_c"}
    assert c.used_indexes(["SELECT * FROM orders WHERE customer_id = 5", "SELECT * FROM orders"]) == [{"fk_c"}, set()]
    with pytest.raises(BadStatement, match="doesn't exist"):
        c.plan("SELECT * FROM nowhere")


def test_check_sql_parses_without_running_and_says_where_it_stopped(shop):
    c = factory.connector(shop)
    c.check_sql("DELETE FROM orders WHERE customer_id = $1")
    assert mrows(shop, "SELECT COUNT(*) FROM orders") == [(20000,)]  # nothing ran
    with pytest.raises(BadStatement, match="syntax") as e:
        c.check_sql("SELECT id FRM orders")
    assert e.value.position == 15  # FRM reads as an alias: the server stops at "orders"
    with pytest.raises(BadStatement, match="Unknown column 'nope'"):
        c.check_sql("SELECT nope FROM orders")
    with pytest.raises(BadStatement):
        c.check_sql("SELECT 1; DROP TABLE orders")
    assert mrows(shop, "SELECT COUNT(*) FROM orders") == [(20000,)]


def test_a_dynamic_variable_is_applied_and_reverted(maria):
    c = factory.connector(maria.dsn())
    before = mrows(maria.dsn(), "SELECT @@GLOBAL.sort_buffer_size")[0][0]
    applied = c.apply([KnobChange("sort_buffer_size", "4M")])
    assert applied.apply_sql == ("SET GLOBAL sort_buffer_size = 4194304",) and not applied.needs_restart
    assert mrows(maria.dsn(), "SELECT @@GLOBAL.sort_buffer_size") == [(4194304,)]
    c.revert(applied)
    assert mrows(maria.dsn(), "SELECT @@GLOBAL.sort_buffer_size") == [(before,)]
    with pytest.raises(InvalidKnobValue):
        c.plan_changes([KnobChange("sort_buffer_size", "12")])  # under its minimum
    with pytest.raises(UnknownKnob):
        c.plan_changes([KnobChange("no_such_variable", "1")])


def test_a_read_only_variable_is_persisted_and_the_server_restarted(maria):
    c = maria.connector()
    applied = c.apply([KnobChange("innodb_flush_method", "O_DIRECT")])
    assert applied.needs_restart and applied.restarted
    assert mrows(maria.dsn(), "SELECT @@innodb_flush_method") == [("O_DIRECT",)]
    c.revert(applied)
    assert mrows(maria.dsn(), "SELECT @@innodb_flush_method") == [("fsync",)]
    pending = factory.connector(maria.dsn()).apply([KnobChange("innodb_flush_method", "O_DIRECT")])
    assert pending.needs_restart and not pending.restarted  # no way to restart: left pending
    assert mrows(maria.dsn(), "SELECT @@innodb_flush_method") == [("fsync",)]


def test_an_index_is_built_online_measured_and_dropped_and_a_failure_midway_is_undone(shop):
    c = factory.connector(shop)
    db = parse_dsn(shop)["database"]
    ix = IndexChange(db, "orders", ("total", "customer_id"))
    applied = c.apply([ix], lock_timeout_s=2)
    assert "ALGORITHM=INPLACE, LOCK=NONE" in applied.apply_sql[0]
    assert c.plan("SELECT customer_id FROM orders WHERE total = 5").indexes == {c.index_name(ix)}
    assert c.index_sizes([ix])[ix] >= 16384
    c.revert(applied)
    assert c.index_sizes([ix])[ix] is None
    bad = IndexChange(db, "orders", ("no_such_column",))
    with pytest.raises(BadStatement, match="no_such_column"):
        c.apply([ix, bad])
    assert {i.name for i in c.observe().indexes if i.table == "orders"} == {"PRIMARY", "fk_c"}  # ix undone
    with pytest.raises(BadStatement, match="partial"):
        c.plan_changes([IndexChange(db, "orders", ("total",), where="total > 5")])


def test_an_existing_index_is_dropped_and_put_back(shop):
    c = factory.connector(shop)
    db = parse_dsn(shop)["database"]
    mrun(shop, "CREATE UNIQUE INDEX u_name ON customers (name, region)")
    applied = c.apply([DropIndexChange(db, "customers", "u_name", "", why="unused")])
    assert "u_name" not in {i.name for i in c.observe().indexes}
    c.revert(applied)
    back = next(i for i in c.observe().indexes if i.name == "u_name")
    assert back.is_unique and "(`name`, `region`)" in back.definition
    with pytest.raises(BadStatement, match="primary key"):
        c.plan_changes([DropIndexChange(db, "customers", "PRIMARY", "")])


def test_whatif_on_a_target_is_refused(shop):
    c = factory.connector(shop)  # what-if builds indexes: a shadow's only (tests/connectors/mariadb/test_whatif.py)
    with pytest.raises(AdvisorError, match="shadow only"):
        c.whatif()


def test_changes_and_plans_on_hostile_identifiers(mdb):
    c = factory.connector(mdb)
    db = parse_dsn(mdb)["database"]
    table, column = "we`ird tab'le", "c\"ol `x`"
    mrun(mdb, f"CREATE TABLE {c.quote(table)} (id int PRIMARY KEY, {c.quote(column)} int)",
         f"INSERT INTO {c.quote(table)} SELECT seq, seq % 50 FROM seq_1_to_3000", f"ANALYZE TABLE {c.quote(table)}")
    ix = IndexChange(db, table, (column,), name="ix `odd` 'name'")
    applied = c.apply([ix])
    plan = c.plan(f"SELECT id FROM {c.quote(table)} WHERE {c.quote(column)} = 7")
    assert plan.indexes == {"ix `odd` 'name'"} and {n.table for n in plan.nodes() if n.table} == {table}
    c.revert(applied)
    assert c.plan(f"SELECT id FROM {c.quote(table)} WHERE {c.quote(column)} = 7").full_scans().keys() == {table}


def test_a_freshly_loaded_table_is_observed_at_its_size_on_disk(mdb):
    """InnoDB's persistent statistics lag a bulk load (DATA_LENGTH read 64 kB for 200,000 rows): the table's own
    tablespace file gives its bytes."""
    mrun(mdb, "CREATE TABLE fresh (id int PRIMARY KEY, a int, pad varchar(100), KEY (a))",
         "INSERT INTO fresh SELECT seq, seq % 1000, REPEAT('x', 80) FROM seq_1_to_200000")
    table = next(t for t in factory.connector(mdb).observe().tables if t.name == "fresh")
    assert table.rows > 100_000 and table.total_bytes > 10 * 2**20  # 200,000 rows of ~90 bytes
