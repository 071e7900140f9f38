"""Batched what-if on a MariaDB shadow (``connectors.mariadb.whatif``), against a real server: the candidates
announced with ``expect`` are built a table at a time in one ALTER each, and a batch of configurations is planned
with shared toggles (``plan_many``); the costs are the ones the one-at-a-time path gives (within the few percent
by which InnoDB's sampled statistics move whenever a table's indexes change: two runs of the same path differ as
much, 2.5% measured, up to 10% for a join); one ADD INDEX the server refuses does not lose the others of its ALTER; the cache in front of it counts its hits; closing drops every
index built (one ALTER per table)."""

from __future__ import annotations

import pytest

from advisor.core.domain import IndexChange
from connectors.mariadb.visibility import batches
from connectors.mariadb.whatif import IgnoredIndexes
from optimizers.indexes.costing import CachedWhatIf
from optimizers.indexes.problem import Query
from tests.connectors.mariadb.conftest import mrows, mrun

SCHEMA = ("CREATE TABLE `cu stomers` (id int PRIMARY KEY, region int, tier int, bio text)",
          "CREATE TABLE orders (id int PRIMARY KEY, cid int NOT NULL, total int, day int, note varchar(20))",
          "INSERT INTO `cu stomers` SELECT seq, seq % 50, seq % 7, CONCAT('b', seq) FROM seq_1_to_20000",
          "INSERT INTO orders SELECT seq, 1 + seq % 20000, (seq * 13) % 100003, seq % 400, CONCAT('n', seq % 9) "
          "FROM seq_1_to_80000",
          "ANALYZE TABLE `cu stomers`, orders")
QUERIES = ("SELECT id FROM orders WHERE total = 4242",
           "SELECT count(*) FROM orders WHERE day BETWEEN 10 AND 12 AND total > 500",
           "SELECT o.id FROM orders o JOIN `cu stomers` c ON c.id = o.cid WHERE c.region = 3 AND o.day = 7",
           "SELECT id FROM `cu stomers` WHERE tier = 2 AND region = 9")


def _candidates(db: str) -> list[IndexChange]:
    o, c = (lambda *cols: IndexChange(db, "orders", cols)), (lambda *cols: IndexChange(db, "cu stomers", cols))
    return [o("total"), o("day"), o("day", "total"), o("cid"), o("cid", "day"), c("region"), c("tier", "region"),
            c("gone")]  # no such column (dropped since the workload was observed): the server refuses it


def _leftovers(dsn: str, db: str) -> list[str]:
    return [r[0] for r in mrows(dsn, "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                                     "AND INDEX_NAME LIKE 'db_advisor_whatif%%'", (db,))]


@pytest.fixture
def shop(maria, mdb):
    mrun(mdb, *SCHEMA)
    from connectors.mariadb.connection import parse_dsn

    return parse_dsn(mdb)["database"], mdb


def _jobs(db: str, cands: list[IndexChange]) -> list[tuple[str, list[IndexChange], frozenset]]:
    tables = frozenset({(db, "orders"), (db, "cu stomers")})
    configs = [[], [cands[0]], [cands[1]], [cands[2]], [cands[0], cands[1]], [cands[3], cands[5]],
               [cands[4], cands[6]], [cands[2], cands[6], cands[7]], cands]
    return [(q, cfg, tables) for q in QUERIES for cfg in configs]  # as a search asks: per statement


def test_batched_builds_and_plans_cost_what_one_at_a_time_does_and_a_refusal_loses_nothing_else(shop):
    db, dsn = shop
    cands = _candidates(db)
    jobs = _jobs(db, cands)
    with IgnoredIndexes(dsn, batch=False) as one:
        alone = [one.plan(*job).total for job in jobs]
        one_counts = (one.creates, one.builds, one.toggles)
    with IgnoredIndexes(dsn, batch=True) as w:
        w.expect(cands)
        batched = w.plan_many(jobs)
        assert w.creates == 7 and w.builds < w.creates  # built together, a table's in one ALTER ...
        assert set(w.refused) == {cands[7]} and "gone" in w.refused[cands[7]]  # ... save the refused one
        assert w.toggles < one_counts[2]  # configurations that agree share their toggles
        again = [w.plan(*job).total for job in jobs]  # and the one-at-a-time calls on the same session agree
        sizes = {ix: w.index_size(ix) for ix in cands[:7]}
    assert one_counts[:2] == (7, 7)
    # sampled statistics (see the docstring): the same costs within 25% (a join's move most), the big gains alike
    assert all(0.8 < b.total / a < 1.25 for b, a in zip(batched, alone))
    assert all(0.8 < b / a < 1.25 for b, a in zip(again, alone))
    assert alone[0] > 5 * alone[1]  # the first statement without an index, then with the one on total
    assert all(s >= 16384 for s in sizes.values())  # InnoDB sized each index of a combined build
    assert w.drops == 7 and not _leftovers(dsn, db)  # closing dropped all of them


def test_a_refused_index_in_a_batch_is_recorded_and_the_others_of_its_table_are_built(shop):
    db, dsn = shop
    good, bad, other = (IndexChange(db, "cu stomers", ("region",)), IndexChange(db, "cu stomers", ("gone",)),
                        IndexChange(db, "cu stomers", ("tier",)))
    with IgnoredIndexes(dsn) as w:
        w.build([good, bad, other])
        assert set(w.refused) == {bad} and w.creates == 2
        assert "gone" in w.refused[bad]
        names = {r[0] for r in mrows(dsn, "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE "
                                          "TABLE_SCHEMA = %s AND TABLE_NAME = 'cu stomers'", (db,))}
        assert len([n for n in names if n.startswith("db_advisor_whatif")]) == 2
        w.build([good, bad])  # built and refused before: nothing is tried again
        assert w.creates == 2 and w.builds == 2
    assert not _leftovers(dsn, db)


def test_the_cache_in_front_counts_hits_and_plans_a_prefetch_through_plan_many(shop):
    db, dsn = shop
    cands = _candidates(db)[:7]
    queries = [Query(f"q{k}", sql, 1.0, frozenset({(db, "orders"), (db, "cu stomers")}))
               for k, sql in enumerate(QUERIES)]
    with IgnoredIndexes(dsn) as w:
        w.expect(cands)
        cached = CachedWhatIf(w)
        configs = [frozenset(), frozenset(cands[:2]), frozenset(cands[2:5]), frozenset(cands)]
        planned = cached.prefetch((q, cfg) for q in queries for cfg in configs)
        assert planned == cached.calls and planned > 0 and cached.hits == 0 and w.creates == 7
        first = [cached.cost(q, cfg).total for q in queries for cfg in configs]
        calls = cached.calls
        second = [cached.cost(q, cfg).total for q in queries for cfg in configs]
        assert second == first and cached.calls == calls and cached.hits >= len(first)
        counters = cached.counters()
        assert counters["built"] == 7 and counters["batched"] and counters["build_s"] > 0
    assert not _leftovers(dsn, db)


def test_batches_group_jobs_that_agree_on_the_indexes_they_share():
    t, u = ("s", "t"), ("s", "u")
    needs = [{t: {"a": True}}, {u: {}}, {t: {"a": False}}, {t: {"a": True}, u: {"b": False}},
             {t: {"a": True}, u: {"b": True}}, {t: {"c": True}}]
    groups = batches(needs)
    assert sorted(k for g in groups for k in g) == [0, 1, 2, 3, 4, 5]
    for g in groups:  # within a group, no index is wanted both shown and hidden
        seen: dict = {}
        for k in g:
            for table, names in needs[k].items():
                for name, shown in names.items():
                    assert seen.setdefault((table, name), shown) == shown
    assert len(groups) == 3  # a shown or hidden, b shown or hidden: jobs 0, 2, 3 and 4 cannot all share
