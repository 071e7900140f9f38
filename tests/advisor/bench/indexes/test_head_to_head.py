"""IA2's set against a peer's measured head to head (``advisor.bench.indexes.head_to_head``) on a real PostgreSQL
shadow: both sets built at once, each read timed with the other set's indexes hidden, the shadow left as it was."""

from __future__ import annotations

import pytest

from advisor.bench.indexes import head_to_head
from advisor.core.domain import IndexChange
from connectors.factory import clone, connector
from tests.conftest import run, scalar
from workloads.statements.binding import BoundStatement


@pytest.fixture(scope="module")
def events(pg):
    dsn = pg.create_database("duel")
    run(dsn, "CREATE TABLE events (id int PRIMARY KEY, account int NOT NULL, payload text NOT NULL)",
        "INSERT INTO events SELECT g, g % 5000, md5(g::text) FROM generate_series(1, 300000) g", "ANALYZE events")
    return dsn


def _read(key: str, sql: str, weight: float = 10) -> BoundStatement:
    return BoundStatement(key, sql, sql, weight, "literal", False)


def test_the_set_that_serves_the_reads_wins_head_to_head_and_the_shadow_is_left_as_it_was(events):
    by_account = IndexChange("public", "events", ("account",))
    by_payload = IndexChange("public", "events", ("payload",))
    reads = [_read("a", "SELECT count(*) FROM events WHERE account = 42"),
             _read("b", "SELECT count(*) FROM events WHERE account = 4242")]
    said: list[str] = []
    with clone(connector(events)) as shadow:
        before = scalar(shadow.dsn, "SELECT count(*) FROM pg_indexes WHERE tablename = 'events'")
        found = head_to_head.measure(shadow, reads, [by_account], [by_payload], rounds=2, repeats=3, say=said.append)
        back = head_to_head.measure(shadow, reads, [by_payload], [by_account], rounds=2, repeats=3, say=said.append)
        after = scalar(shadow.dsn, "SELECT count(*) FROM pg_indexes WHERE tablename = 'events'")
    # a scan of 300,000 rows against an index lookup: far apart on any machine
    assert found["ratio"] < 0.5 < 2 < back["ratio"] and len(found["rounds"]) == 2 and found["reads"] == 2
    assert after == before and any("head to head round 2/2" in line for line in said)


def test_nothing_to_compare_gives_none(events):
    ix = IndexChange("public", "events", ("account",))
    write = BoundStatement("w", "UPDATE events SET payload = payload WHERE id = 1",
                           "UPDATE events SET payload = payload WHERE id = 1", 1, "literal", True)
    with clone(connector(events)) as shadow:
        assert head_to_head.measure(shadow, [_read("a", "SELECT 1")], [ix], [ix], say=print) is None  # the same set
        assert head_to_head.measure(shadow, [write], [ix], [], say=print) is None  # no read, an empty set
