"""The watch under the issue's own lock burst (issue 42, item 2), on both engines against real servers: a plain
session holds the whole table (PostgreSQL ``LOCK TABLE orders IN ACCESS EXCLUSIVE MODE``, MariaDB ``LOCK TABLES
orders WRITE``) across the check, with a watched statement waiting on it. The check must neither wait for the lock
(it reads the engine's statement statistics only, never a table) nor roll the change back: a slowdown while other
sessions wait for locks is not the change's. The figures are recorded measurements (the reference set 10x faster),
so that nothing depends on how long the lock is held."""

from __future__ import annotations

import threading
import time

import psycopg

from advisor.core.domain import IndexChange
from connectors import factory
from tests.advisor.service.test_change_ownership import LOOKUP, MariaDB, db, lookups, recommend, service  # noqa: F401
from tests.connectors.mariadb.conftest import _conn, mrows


class TableLock:
    """The whole ``orders`` table held by a plain session, and a lookup (a watched statement) waiting on it."""

    def __init__(self, db):
        self.db, self.maria = db, isinstance(db, MariaDB)

    def __enter__(self) -> TableLock:
        if self.maria:
            self.conn = _conn(self.db.dsn)
            self.conn.cursor().execute("LOCK TABLES orders WRITE")
        else:
            self.conn = psycopg.connect(self.db.dsn)  # a transaction: the lock is held until it ends
            self.conn.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
        self.waiter = threading.Thread(target=self.db.sql, args=(LOOKUP,))
        self.waiter.start()
        deadline = time.monotonic() + 60  # a bound on the poll, not a timing the test relies on
        while not self.waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.waiting(), "the lookup waits for the table lock"
        return self

    def waiting(self) -> bool:
        if self.maria:
            return mrows(self.db.dsn, "SELECT COUNT(*) FROM information_schema.processlist "
                                      "WHERE state LIKE 'Waiting for table%%lock'")[0][0] > 0
        with psycopg.connect(self.db.dsn) as conn:
            return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                "AND datname = current_database()").fetchone()[0] > 0

    def __exit__(self, *exc) -> None:
        if self.maria:
            self.conn.cursor().execute("UNLOCK TABLES")
        self.conn.close()
        self.waiter.join(60)


def test_a_table_held_by_another_session_across_the_check_neither_stalls_the_watch_nor_rolls_the_change_back(
        db, service, monkeypatch):
    monkeypatch.setenv("ADVISOR_TARGET_TIMEOUT_S", "20")  # what a check stuck on the lock would end with (d13bb40)
    lookups(db)
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    service.apply(rec.id)
    built = db.indexes()
    lookups(db)
    # recorded measurements: the lookups since the apply took 10x their time before it
    applied = service.recommendation(rec.id).applied
    start = applied["watch"]["start"]
    since = {s.queryid: (s.calls - start[s.queryid][0], s.total_ms - start[s.queryid][1])
             for s in factory.connector(db.dsn).statement_stats() if s.queryid in start}
    assert since, "the lookup is watched"
    service.store.set_applied(rec.id, {**applied, "statements_before": {q: [c, ms / 10] for q, (c, ms) in
                                                                        since.items()}})
    with TableLock(db):
        rows = service.check_watches()
        assert [(r["id"], r["state"]) for r in rows] == [(rec.id, "watching")], rows
        audit = service.audit_log(rec.id)
        actions = [a["action"] for a in audit]
        assert "watch_failed" not in actions and "watch_rollback" not in actions, audit
        deferred = [a["detail"] for a in audit if a["action"] == "watch_deferred"]
        assert len(deferred) == 1 and deferred[0]["lock_waits"] > 0 and deferred[0]["ratio"] > 5
        assert service.recommendation(rec.id).state == "applied"
    assert db.indexes() == built  # the change stands


def test_statement_stats_are_read_while_another_session_holds_a_table(db):
    connector = factory.connector(db.dsn)
    lookups(db, 3)
    with TableLock(db):
        stats = connector.statement_stats()
    assert any("customer_id" in s.query and s.calls >= 3 for s in stats)

