"""PostgreSQL's indexes through the seam on a real server: existing indexes as structured columns (keys,
expressions, ordering and operator-class options, INCLUDE, partial predicate, method) under hostile names, the
index facts the server states, the indexes behind constraints, when scan counts started, and column type names."""

import re

from connectors.postgres import PostgresConnector
from optimizers.indexes.existing import find_drops
from tests.conftest import run


def _indexes(dsn):
    return {i.name: i for i in PostgresConnector(dsn).observe().indexes}


def test_existing_indexes_arrive_as_columns_not_text(db):
    run(db, 'CREATE SCHEMA "Sales Q1"',
        'CREATE TABLE "Sales Q1"."Order ""Lines""" (id int PRIMARY KEY, a int, "B c" text, c int, d int, r int4range)',
        'CREATE INDEX "odd, name" ON "Sales Q1"."Order ""Lines""" (coalesce(a, (0)::integer), "B c" DESC NULLS LAST) '
        'INCLUDE (c, d) WHERE a > 0 AND c < 3',
        'CREATE INDEX i2 ON "Sales Q1"."Order ""Lines""" ("B c" text_pattern_ops, a NULLS FIRST)',
        'CREATE INDEX i3 ON "Sales Q1"."Order ""Lines""" USING hash (a)',
        'CREATE INDEX i4 ON "Sales Q1"."Order ""Lines""" (a DESC)')
    found = _indexes(db)
    odd = found["odd, name"]
    assert (odd.schema, odd.table, odd.method) == ("Sales Q1", 'Order "Lines"', "btree")
    assert odd.columns == ("COALESCE(a, 0)", "B c") and odd.expressions == (True, False)
    assert odd.options == ("", "DESC NULLS LAST") and odd.include == ("c", "d")
    assert odd.predicate == "((a > 0) AND (c < 3))" and not odd.plain
    i2 = found["i2"]
    assert (i2.columns, i2.options, i2.plain) == (("B c", "a"), ("text_pattern_ops", "NULLS FIRST"), True)
    assert (found["i3"].method, found["i3"].columns) == ("hash", ("a",))
    assert found["i4"].options == ("DESC",)
    pkey = found['Order "Lines"_pkey']
    assert (pkey.columns, pkey.is_primary, pkey.is_unique, pkey.plain) == (("id",), True, True, True)
    assert "CREATE INDEX i3" in found["i3"].definition  # the display text stays


def test_index_facts_constraints_and_stats_come_from_the_server(db):
    run(db, "CREATE TABLE booking (id int PRIMARY KEY, room int, during int4range, amount numeric(10, 2), "
            "note varchar(20), EXCLUDE USING gist (during WITH &&))",
        "CREATE INDEX booking_room ON booking (room)", "CREATE INDEX booking_room2 ON booking (room)")
    connector = PostgresConnector(db)
    facts = connector.index_facts()
    assert (facts.page_bytes, facts.deduplication, facts.include, facts.partial) == (8192, True, True, True)
    assert (facts.max_key_columns, facts.name_limit) == (32, 63)
    behind = connector.constraint_indexes()
    assert "booking_pkey" in behind and "booking_during_excl" in behind and "booking_room" not in behind
    since = connector.stats_since()
    assert since is None or re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d \S+", since)
    types = connector.column_data_types()
    assert types[("public", "booking", "amount")] == "numeric"
    assert types[("public", "booking", "note")] == "character varying"
    # the drop finder, fed from the catalog: the exclusion constraint's index is never proposed, twins are
    drops = {d.name: d.why for d in find_drops(connector.observe().indexes, since=connector.stats_since(),
                                               protected=behind)}
    assert set(drops) == {"booking_room", "booking_room2"}  # unused; the exclusion and primary keys are never dropped
    assert drops["booking_room2"].endswith("covered by booking_room (same definition)")


def test_unqualified_names_resolve_to_the_first_schema_of_the_search_path(db):
    assert PostgresConnector(db).default_schema() == "public"
    run(db, 'CREATE SCHEMA "App Data"', "CREATE TABLE \"App Data\".t (a int)")
    dbname = db.rsplit("dbname=", 1)[1].split()[0]
    run(db, f'ALTER DATABASE "{dbname}" SET search_path = "App Data", public')
    assert PostgresConnector(db).default_schema() == "App Data"
