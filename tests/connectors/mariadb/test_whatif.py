"""What-if indexes on a MariaDB shadow (built once as IGNORED indexes, toggled per configuration), timings
without built indexes, the index facts, the constraint indexes and index usage, against a real server, with
hostile identifiers (a table and columns that need quoting)."""

from __future__ import annotations

import re

import pytest

from advisor.core.domain import IndexChange
from advisor.core.errors import AdvisorError
from connectors import factory
from connectors.base import WhatIf
from connectors.mariadb.connection import parse_dsn
from connectors.mariadb.whatif import UNBUILDABLE_BYTES, whatif_name
from optimizers.indexes.existing import find_drops
from tests.connectors.mariadb.conftest import mrows, mrun

T = "we`ird tab"  # a table name with a backquote and a blank
SCHEMA = ("CREATE TABLE customers (id int PRIMARY KEY, email varchar(40) UNIQUE, region int)",
          "CREATE TABLE `we``ird tab` (id int PRIMARY KEY, `cu st` int NOT NULL, `sel``ect` int, note varchar(20), "
          "CONSTRAINT fk_c FOREIGN KEY (`cu st`) REFERENCES customers (id))",
          "CREATE INDEX spare ON `we``ird tab` (note)",
          "INSERT INTO customers SELECT seq, CONCAT('c', seq), seq % 10 FROM seq_1_to_2000",
          "INSERT INTO `we``ird tab` SELECT seq, 1 + seq % 2000, seq % 5000, CONCAT('n', seq % 7) "
          "FROM seq_1_to_60000",
          "ANALYZE TABLE customers, `we``ird tab`")
QUERY = "SELECT id FROM `we``ird tab` WHERE `sel``ect` = 42"


@pytest.fixture
def shop(maria, mdb):
    mrun(mdb, *SCHEMA)
    db = parse_dsn(mdb)["database"]
    return maria.connector(db), db, mdb


def _ignored(dsn: str, db: str) -> dict[str, str]:
    return {name: ignored for name, ignored in mrows(
        dsn, "SELECT INDEX_NAME, IGNORED FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (db, T))}


def test_whatif_costs_fall_with_a_visible_index_and_rise_back_when_ignored(shop):
    c, db, dsn = shop
    ix = IndexChange(db, T, ("sel`ect",))
    useless = IndexChange(db, T, ("note", "sel`ect"))
    tables = frozenset({(db, T)})
    with c.whatif() as w:
        assert isinstance(w, WhatIf)
        none = w.plan(QUERY, [], tables)
        assert none.seq_scans.get(T, 0) > 0  # read whole without the index
        with_ix = w.plan(QUERY, [ix], tables)
        assert with_ix.total < none.total / 10 and not with_ix.seq_scans
        assert _ignored(dsn, db)[whatif_name(ix)] == "NO"
        again = w.plan(QUERY, [useless], tables)  # ix is ignored again; useless cannot help the query
        assert again.total == pytest.approx(none.total, rel=0.05)
        assert _ignored(dsn, db)[whatif_name(ix)] == "YES"
        for _ in range(3):  # toggled many times, built once each
            w.plan(QUERY, [ix], tables)
            w.plan(QUERY, [], tables)
        assert w.creates == 2 and w.toggles >= 7
        size = w.index_size(ix)
        stat = mrows(dsn, "SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE "
                     "database_name = %s AND table_name = %s AND index_name = %s AND stat_name = 'size'",
                     (db, T, whatif_name(ix)))
        assert size == stat[0][0] and size >= 16384  # the built index's real size, in 16 KiB pages
        assert w.index_size(IndexChange(db, T, ("note",))) > 0  # the existing index answers; nothing built
        assert w.creates == 2
        assert w.index_size(IndexChange(db, T, ("no such column",))) == UNBUILDABLE_BYTES
        assert w.plan(QUERY, [IndexChange(db, T, ("no such column",))], tables).total == pytest.approx(
            none.total, rel=0.05)
    assert w.drops == 2
    assert not [n for n in _ignored(dsn, db) if n.startswith("db_advisor_whatif")]  # close dropped them
    assert set(_ignored(dsn, db)) == {"PRIMARY", "fk_c", "spare"}


def test_whatif_and_timings_are_refused_on_a_server_that_is_not_a_sandbox(shop):
    _, db, dsn = shop
    target = factory.connector(dsn)
    for call in (target.whatif, lambda: target.timings_without(QUERY, []),
                 lambda: target.explain_cost(QUERY, [IndexChange(db, T, ("sel`ect",))])):
        with pytest.raises(AdvisorError, match="shadow only"):
            call()
    assert target.explain_cost(QUERY) > 0  # without hypothetical indexes it plans anywhere


def test_explain_cost_with_hypothetical_indexes_builds_and_drops_them(shop):
    c, db, dsn = shop
    assert c.explain_cost(QUERY, [IndexChange(db, T, ("sel`ect",))]) < c.explain_cost(QUERY) / 10
    assert not [n for n in _ignored(dsn, db) if n.startswith("db_advisor_whatif")]


def test_timings_without_hides_built_indexes_and_restores_them(shop):
    c, db, dsn = shop
    ix = IndexChange(db, T, ("sel`ect",))
    c.apply([ix])
    name = c.index_name(ix)
    assert name in c.plan(QUERY).indexes
    times = c.timings_without(QUERY, [ix], repeats=2, timeout_ms=10_000)
    assert len(times) == 2 and all(t > 0 for t in times)
    assert _ignored(dsn, db)[name] == "NO" and name in c.plan(QUERY).indexes  # visible again
    capped = c.timings_without("SELECT SLEEP(2) FROM `we``ird tab` LIMIT 1", [ix], repeats=3, timeout_ms=200)
    assert capped == [200.0, 200.0, 200.0]
    assert _ignored(dsn, db)[name] == "NO"


def test_index_facts_constraints_usage_and_types(shop):
    c, db, dsn = shop
    facts = c.index_facts()
    assert (facts.page_bytes, facts.deduplication, facts.include, facts.partial) == (16384, False, False, False)
    assert facts.max_key_columns == 32 and facts.name_limit == 64 and not facts.allows(where="a > 0")
    # the primary keys, the unique email, the index behind the foreign key; never the spare one
    assert c.constraint_indexes() == {"PRIMARY", "email", "fk_c"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d \S+", c.stats_since())
    assert c.default_schema() == db
    types = c.column_data_types()
    assert types[(db, T, "cu st")] == "int" and types[(db, T, "note")] == "varchar"
    mrun(dsn, "SELECT count(*) FROM `we``ird tab` WHERE `cu st` = 5")  # the application reads through fk_c
    infos = {i.name: i for i in c.observe().indexes if i.table == T}
    assert infos["fk_c"].scans > 0 and infos["spare"].scans == 0
    assert infos["fk_c"].columns == ("cu st",) and infos["fk_c"].method == "btree" and infos["fk_c"].plain
    drops = find_drops(c.observe().indexes, since=c.stats_since(), protected=c.constraint_indexes())
    assert [d.name for d in drops] == ["spare"]
    plans = c.plans([QUERY, "SELECT * FROM customers WHERE id = 3"])
    assert len(plans) == 2 and plans[0].full_scans() and "PRIMARY" in plans[1].indexes
