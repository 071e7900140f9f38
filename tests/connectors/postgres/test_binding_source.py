"""The PostgreSQL ``BindingSource`` (``connectors.postgres.binding``) against a real server with TPC-H SF 0.01:
pg_qualstats' examples and constants, PREPARE's parameter types, pg_stats' values, literals, and its errors as the
advisor's own (a statement that will not prepare, a lost connection)."""

import psycopg
import pytest

from advisor.core.domain import Statement
from advisor.core.errors import BadStatement, TargetUnreachable
from connectors.base import BindingSource
from connectors.postgres import PostgresConnector
from tests.conftest import run, scalar


def test_examples_and_real_constants_come_from_pg_qualstats(tpch_dsn):
    c = PostgresConnector(tpch_dsn)
    c.reset_statement_stats()
    # a statement shape of this test's own: pg_qualstats keeps an example across pg_qualstats_reset(), and other
    # tests of this session bind theirs
    with psycopg.connect(tpch_dsn, autocommit=True) as conn:
        conn.execute("EXPLAIN SELECT count(*) FROM orders WHERE o_custkey = 77 AND o_orderpriority = '1-URGENT'")
        conn.execute("SELECT count(*) FROM orders WHERE o_custkey = 77 AND o_orderpriority = '1-URGENT'").fetchall()
        queryid, text = conn.execute("SELECT queryid::text, query FROM pg_stat_statements WHERE query LIKE "
                                     "'SELECT count(*) FROM orders WHERE o_custkey = $1 AND o_orderpriority%'").fetchone()
    with c.binding_source() as source:
        assert isinstance(source, BindingSource)
        kept_under, example = source.example(Statement(queryid, text, 2, 1.0))
        assert kept_under == queryid
        # the EXPLAIN it was first seen in is removed: the statement alone, with its real constants
        assert example == "SELECT count(*) FROM orders WHERE o_custkey = 77 AND o_orderpriority = '1-URGENT'"
        # a merged entry's example serves when the statement's own queryid has none
        assert source.example(Statement("12345", text, 2, 1.0, merged=(queryid,)))[0] == queryid
        assert source.example(Statement("12345", text, 2, 1.0)) == ("12345", None)


def test_parameter_types_from_prepare_with_amounts_declared_where_needed(tpch_dsn):
    with PostgresConnector(tpch_dsn).binding_source() as source:
        assert source.parameter_types("SELECT 1 FROM orders WHERE o_orderdate >= $1 AND o_custkey = $2 LIMIT $3",
                                      3, {}) == ["date", "integer", "bigint"]
        week = "SELECT 1 FROM orders WHERE o_orderdate BETWEEN $1::date AND $2::date + $3"
        with pytest.raises(BadStatement, match="cannot prepare statement"):
            source.parameter_types(week, 3, {})  # date + unknown is ambiguous
        assert source.parameter_types(week, 3, {3: "date"}) == ["date", "date", "integer"]
        with pytest.raises(BadStatement, match='relation "nowhere" does not exist'):
            source.parameter_types("SELECT * FROM nowhere WHERE a = $1", 1, {})
        assert source.parameter_types("SELECT $1::text", 1, {}) == ["text"]  # still usable after a refusal


def test_column_values_are_the_statistics_histogram_and_most_common_values(tpch_dsn):
    with PostgresConnector(tpch_dsn).binding_source() as source:
        hist, mcv = source.column_values("orders", "o_orderdate")
        assert len(hist) > 10 and list(hist) == sorted(hist)
        assert scalar(tpch_dsn, "SELECT count(*) FROM orders WHERE o_orderdate = %s::date", (hist[len(hist) // 2],))
        _, statuses = source.column_values("", "o_orderstatus")  # any table's column of that name
        assert set(statuses) <= {"F", "O", "P"} and "F" in statuses
        assert source.column_values("orders", "no_such_column") == ((), ())


def test_literals_are_quoted_by_the_driver_and_numbers_stay_bare(db):
    run(db, "CREATE TABLE people (id int, name text)", "INSERT INTO people VALUES (1, 'O''Brien')")
    with PostgresConnector(db).binding_source() as source:
        assert source.literal("42", "integer") == "42" and source.literal("42", "text") == "'42'"
        hostile = "x'); DROP TABLE people; --"
        assert scalar(db, f"SELECT count(*) FROM people WHERE name = {source.literal(hostile, 'text')}") == 0
        irish = source.literal("O'Brien", "text")
        assert scalar(db, f"SELECT id FROM people WHERE name = {irish}") == 1
        assert source.default_value("numeric") == "1" and source.default_value("character(1)") == ""
        assert source.default_value("tsvector") is None


def test_a_lost_connection_is_target_unreachable(db):
    with PostgresConnector(db).binding_source() as source:
        pid = source.conn.info.backend_pid
        run(db, f"SELECT pg_terminate_backend({pid})")
        with pytest.raises(TargetUnreachable, match="lost the connection"):
            source.column_values("t", "a")
