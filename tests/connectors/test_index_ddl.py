"""Index DDL on a real server: INCLUDE and partial indexes (built by apply, removed by revert, and in what-if with
HypoPG), partial predicates re-generated or refused, and dropping an existing index with its revert."""

from datetime import date, timedelta
from hashlib import md5

import psycopg
import pytest
from psycopg import sql

from advisor.core.domain import DropIndexChange, IndexChange
from advisor.core.errors import BadStatement
from connectors.postgres import PostgresConnector
from connectors.postgres.changes import index_ddl, index_name
from tests.conftest import run, scalar

DEFS = "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s ORDER BY indexname"


def _tickets(dsn: str) -> None:
    # COPY FREEZE into a table made in the same transaction writes its pages all-visible and frozen at once (index-only
    # scans pay in what-if). A VACUUM could not mark them while any session of the shared server, or a replication
    # slot of another test, held back the cluster's xmin horizon.
    rows = "".join(f"{x}\t{x % 500}\t{'open' if x % 50 == 0 else 'closed'}\t{date(2020, 1, 1) + timedelta(x % 1000)}"
                   f"\t{md5(str(x).encode()).hexdigest()}\t{'p' * 200}\n" for x in range(1, 50001))
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE tickets (id int PRIMARY KEY, tenant int, status text, opened_on date, title text, "
                     "pad text)")
        with conn.cursor().copy("COPY tickets FROM STDIN WITH (FREEZE)") as copy:
            copy.write(rows)
    run(dsn, "ANALYZE tickets")


def _defs(dsn: str, table: str, schema: str = "public") -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute(DEFS, (schema, table)).fetchall()]


def test_variants_have_names_of_their_own():
    plain = IndexChange("public", "t", ("a",))
    names = {index_name(plain), index_name(IndexChange("public", "t", ("a",), include=("b",))),
             index_name(IndexChange("public", "t", ("a",), where='"b" IS NULL')),
             index_name(IndexChange("public", "t", ("a",), where='"b" IS NOT NULL'))}
    assert len(names) == 4 and index_name(plain) == "t_a_advisor_idx"
    long = IndexChange("public", "t" * 60, ("a",), where='"b" IS NULL')
    assert len(index_name(long)) <= 63 and index_name(long) != index_name(IndexChange("public", "t" * 60, ("a",)))


def test_include_and_partial_indexes_are_built_by_apply_and_removed_by_revert(db):
    _tickets(db)
    c = PostgresConnector(db)
    covering = IndexChange("public", "tickets", ("tenant", "opened_on"), include=("title",))
    partial = IndexChange("public", "tickets", ("tenant",), where="\"status\" = 'open' AND opened_on IS NOT NULL")
    applied = c.apply([covering, partial])
    try:
        defs = _defs(db, "tickets")
        assert f"CREATE INDEX {index_name(covering)} ON public.tickets USING btree (tenant, opened_on) " \
               "INCLUDE (title)" in defs
        assert f"CREATE INDEX {index_name(partial)} ON public.tickets USING btree (tenant) " \
               "WHERE ((status = 'open'::text) AND (opened_on IS NOT NULL))" in defs
        assert c.plans(["SELECT * FROM tickets WHERE tenant = 7 AND status = 'open' "
                        "AND opened_on IS NOT NULL"])[0].indexes == {index_name(partial)}
        sizes = c.index_sizes([covering, partial])
        assert 0 < sizes[partial] < sizes[covering]
    finally:
        c.revert(applied)
    assert _defs(db, "tickets") == ["CREATE UNIQUE INDEX tickets_pkey ON public.tickets USING btree (id)"]


@pytest.mark.parametrize("where", [
    "status = 'open'; DROP TABLE tickets",
    "status = (SELECT 'open')",
    "pg_sleep(1) IS NULL",
    "other.status = 'open'",
    "status = $1",
    "status::text = 'open'",
    "status IN ('open', 'new')",
    "status = 'open' -- ' ) ; DROP TABLE tickets",
])
def test_a_predicate_that_is_not_columns_and_literals_is_refused_before_anything_runs(db, where):
    _tickets(db)
    c = PostgresConnector(db)
    if where.startswith("status = 'open' --"):  # a comment is dropped by the parse: only the predicate is left
        ddl = index_ddl(IndexChange("public", "tickets", ("tenant",), where=where), named=False)
        with psycopg.connect(db) as conn:
            assert ddl.as_string(conn).endswith("""WHERE ("status" = 'open')""")
        return
    with pytest.raises(BadStatement, match="index predicate"):
        c.apply([IndexChange("public", "tickets", ("opened_on",)),
                 IndexChange("public", "tickets", ("tenant",), where=where)])
    assert len(_defs(db, "tickets")) == 1 and scalar(db, "SELECT count(*) FROM tickets") == 50000


def test_hostile_identifiers_and_literals_in_include_and_where_are_quoted(db):
    hostile = 'x"); DROP TABLE y; --'
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE TABLE y (id int)")
        conn.execute(sql.SQL("CREATE TABLE h (a int, {} text)").format(sql.Identifier(hostile)))
    c = PostgresConnector(db)
    where = '"x""); DROP TABLE y; --" = \'it\'\'s\'\'); DROP TABLE y; --\''
    change = IndexChange("public", "h", ("a",), include=(hostile,), where=where)
    applied = c.apply([change])
    try:
        (definition,) = _defs(db, "h")
        assert 'INCLUDE ("x""); DROP TABLE y; --")' in definition
        assert """WHERE ("x""); DROP TABLE y; --" = 'it''s''); DROP TABLE y; --'::text)""" in definition
    finally:
        c.revert(applied)
    assert _defs(db, "h") == [] and scalar(db, "SELECT count(*) FROM y") == 0  # table y survived


def test_dropping_an_existing_index_and_putting_it_back(db):
    _tickets(db)
    run(db, "CREATE SCHEMA \"Odd Schema\"", "CREATE TABLE \"Odd Schema\".t (a int, b text, deleted_at date)",
        "CREATE INDEX \"Odd Idx\" ON \"Odd Schema\".t (a DESC NULLS LAST, lower(b)) INCLUDE (b) "
        "WHERE deleted_at IS NULL")
    (definition,) = _defs(db, "t", "Odd Schema")
    c = PostgresConnector(db)
    change = DropIndexChange("Odd Schema", "t", "Odd Idx", definition, "unused")
    applied = c.apply([change])
    assert applied.apply_sql == ('DROP INDEX CONCURRENTLY IF EXISTS "Odd Schema"."Odd Idx"',)
    assert applied.revert_sql[0].startswith('CREATE INDEX CONCURRENTLY "Odd Idx" ON "Odd Schema".t')
    assert _defs(db, "t", "Odd Schema") == []
    c.revert(applied)
    assert _defs(db, "t", "Odd Schema") == [definition]


@pytest.mark.parametrize("definition", [
    "CREATE INDEX tickets_tenant ON public.other USING btree (tenant)",
    "CREATE INDEX another ON public.tickets USING btree (tenant)",
    "CREATE INDEX tickets_tenant ON public.tickets USING btree (tenant); DROP TABLE tickets",
    "DROP TABLE tickets",
])
def test_a_drop_whose_definition_is_not_that_index_is_refused(db, definition):
    _tickets(db)
    run(db, "CREATE INDEX tickets_tenant ON tickets (tenant)")
    with pytest.raises(BadStatement, match="is not a CREATE INDEX"):
        PostgresConnector(db).apply([DropIndexChange("public", "tickets", "tickets_tenant", definition)])
    assert len(_defs(db, "tickets")) == 2 and scalar(db, "SELECT count(*) FROM tickets") == 50000


def test_whatif_with_include_and_partial_indexes(db):
    _tickets(db)
    key = IndexChange("public", "tickets", ("tenant",))
    covering = IndexChange("public", "tickets", ("tenant",), include=("title",))
    partial = IndexChange("public", "tickets", ("tenant",), where="status = 'open'")
    reads = frozenset({("public", "tickets")})
    only = "SELECT title FROM tickets WHERE tenant = 7"
    open_ = "SELECT * FROM tickets WHERE tenant = 7 AND status = 'open'"
    assert scalar(db, "SELECT relallvisible FROM pg_class WHERE relname = 'tickets'") > 0  # index-only scans pay
    with PostgresConnector(db).whatif() as w:
        assert w.plan(only, [covering], reads).total < 0.7 * w.plan(only, [key], reads).total  # index-only
        none = w.plan(open_, [], reads).total
        assert w.plan(open_, [partial], reads).total < 0.2 * none
        assert w.index_size(partial) < 0.2 * w.index_size(key)
        # a statement without the predicate cannot use the partial index
        assert w.plan(only, [partial], reads).total == pytest.approx(w.plan(only, [], reads).total)


def test_timing_a_statement_without_a_built_index_leaves_the_index_in_place(db):
    """The validation's diagnosis: the statement runs with the index dropped inside a rolled-back transaction
    (its plan then scans the table), the index is never rebuilt, and an execution over the limit counts as the
    limit."""
    run(db, "CREATE TABLE w (id int, k int)", "INSERT INTO w SELECT x, x % 1000 FROM generate_series(1, 50000) x",
        "ANALYZE w")
    c = PostgresConnector(db)
    ix = IndexChange("public", "w", ("k",))
    applied = c.apply([ix])
    try:
        oid = scalar(db, f"SELECT '{c.index_name(ix)}'::regclass::oid")
        times = c.timings_without("SELECT count(*) FROM w WHERE k = 7", [ix], repeats=3, timeout_ms=60_000)
        assert len(times) == 3 and all(t > 0 for t in times)
        assert scalar(db, f"SELECT '{c.index_name(ix)}'::regclass::oid") == oid  # the same index, not rebuilt
        assert [p.indexes for p in c.plans(["SELECT count(*) FROM w WHERE k = 7"])] == [{c.index_name(ix)}]
        run(db, "CREATE SEQUENCE runs")  # nextval is not rolled back: it counts the executions
        slow = "SELECT nextval('runs'), pg_sleep(0.3)"
        assert c.timings_without(slow, [ix], repeats=2, timeout_ms=20) == [20.0, 20.0]
        assert scalar(db, "SELECT last_value FROM runs") == 1  # cut once, the other runs were not made
    finally:
        c.revert(applied)
