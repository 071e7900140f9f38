"""A change touches only what it created (issue 42, items 1, 2 and 6), on both engines, against real servers:
two recommendations that build one index cannot both be applied (the second is refused, naming the first, and the
first's index stays); an index that exists already, made by hand, is never built over nor dropped by a failed apply;
a rollback (by hand or by the watch) leaves alone an index that is no longer the one its apply built; a slowdown
while other sessions wait for locks is not held against the change; a target with an applied change cannot be
removed, and a watch whose target is gone ends once."""

from __future__ import annotations

import contextlib
import threading
import time

import psycopg
import pytest

from advisor.core.domain import Evidence, IndexChange, Recommendation, StatementEvidence
from advisor.core.errors import AlreadyExists, Conflict
from advisor.service.service import AdvisorService
from advisor.storage.store import Store, new_id
from connectors import factory
from tests.conftest import run, scalar
from tests.connectors.mariadb.conftest import _conn, mrows, mrun

LOOKUP = "SELECT v FROM orders WHERE customer_id = 42"


class Postgres:
    schema = "public"

    def __init__(self, pg, name):
        self.dsn = pg.create_database(name)
        run(self.dsn, "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, v text)",
            "INSERT INTO orders SELECT x, x % 500, md5(x::text) FROM generate_series(1, 20000) x", "ANALYZE orders")

    def sql(self, *statements):
        run(self.dsn, *statements)

    def indexes(self) -> set[str]:
        with psycopg.connect(self.dsn) as conn:
            return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'orders'")}

    def hold_lock(self):
        """A row lock held by an open transaction (what blocks writers; the catalog stays readable)."""
        conn = psycopg.connect(self.dsn)
        conn.execute("SELECT * FROM orders WHERE id = 1 FOR UPDATE")
        return conn

    def waiting(self) -> int:
        return scalar(self.dsn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")

    def blocked_query(self):
        """Waits for the row lock until the holder lets go, whatever timeouts other tests set on the shared
        server."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("SET lock_timeout = 0")
            conn.execute("SET statement_timeout = 0")
            conn.execute("UPDATE orders SET v = 'x' WHERE id = 1")


class MariaDB:
    def __init__(self, maria, name):
        self.dsn = maria.create_database(name)
        self.schema = name
        mrun(self.dsn, "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, v varchar(40))",
             "INSERT INTO orders SELECT seq, seq % 500, md5(seq) FROM seq_1_to_20000", "ANALYZE TABLE orders")

    def sql(self, *statements):
        mrun(self.dsn, *statements)

    def indexes(self) -> set[str]:
        return {r[0] for r in mrows(self.dsn, "SELECT DISTINCT index_name FROM information_schema.statistics "
                                              "WHERE table_schema = %s AND table_name = 'orders'", (self.schema,))}

    def hold_lock(self):
        conn = _conn(self.dsn)
        conn.autocommit(False)
        conn.cursor().execute("SELECT * FROM orders WHERE id = 1 FOR UPDATE")
        return conn

    def waiting(self) -> int:
        return mrows(self.dsn, "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'")[0][0]

    def blocked_query(self):
        mrun(self.dsn, "SET SESSION innodb_lock_wait_timeout = 600", "SET SESSION lock_wait_timeout = 600",
             "UPDATE orders SET v = 'x' WHERE id = 1")


_n = iter(range(10_000))


@pytest.fixture(params=["postgres", "mariadb"])
def db(request):
    name = f"own{next(_n)}"
    return Postgres(request.getfixturevalue("pg"), name) if request.param == "postgres" \
        else MariaDB(request.getfixturevalue("maria"), name)


@pytest.fixture
def service(tmp_path, monkeypatch, db):
    monkeypatch.setenv("ADVISOR_KEY_FILE", str(tmp_path / "secret.key"))
    monkeypatch.setenv("ADVISOR_WATCH_MIN_CALLS", "5")
    s = AdvisorService(Store(str(tmp_path / "advisor.duckdb")))
    s.add_target("shop", db.dsn)
    yield s
    s.store.close()


def recommend(service: AdvisorService, db, changes: tuple) -> Recommendation:
    """An approved index recommendation with accepted evidence on the lookup (its production queryid), as the real
    pipeline records one; the changes are the test's."""
    target_id = service.target("shop")["id"]
    connector = factory.connector(db.dsn)
    qid = next((s.queryid for s in connector.observe().statements if s.query.upper().startswith("SELECT") and "customer_id" in s.query), "q")
    evidence = Evidence(3, (10.0,) * 3, (5.0,) * 3, 0.5, (0.45, 0.55),
                        (StatementEvidence(qid, LOOKUP, 60, 0.1, 0.05, 0.5, (0.4, 0.6), False),), 0.02, 0.1)
    plan = connector.plan_changes(changes)
    rec = Recommendation(new_id(), target_id, "indexes", "test", plan.changes, plan.apply_sql, plan.revert_sql,
                         False, "proposed", time.time(), evidence=evidence)
    service.store.add_recommendation(rec)
    service.store.transition(rec.id, "validated", "advisor")
    service.approve(rec.id)
    return rec


@contextlib.contextmanager
def a_session_waiting(db):
    """A row lock held by one session and another session waiting for it, until the block ends."""
    holder = db.hold_lock()
    waiter = threading.Thread(target=db.blocked_query)
    waiter.start()
    try:
        deadline = time.monotonic() + 30
        while db.waiting() == 0 and time.monotonic() < deadline:
            time.sleep(0.3)  # InnoDB refreshes INNODB_TRX only when nobody read it for 0.1 s
        assert db.waiting() > 0
        yield
    finally:
        holder.close()
        waiter.join(30)


def lookups(db, n: int = 20) -> None:
    for _ in range(n):
        db.sql(LOOKUP)


def test_two_recommendations_of_one_index_cannot_both_be_applied_and_the_second_never_drops_the_first(db, service):
    change = IndexChange(db.schema, "orders", ("customer_id",))
    first, second = recommend(service, db, (change,)), recommend(service, db, (change,))
    service.apply(first.id)
    built = db.indexes() - {"orders_pkey", "PRIMARY"}
    assert len(built) == 1
    with pytest.raises(Conflict, match=f"collides with recommendation {first.id}"):
        service.apply(second.id)
    assert db.indexes() - {"orders_pkey", "PRIMARY"} == built  # the first's index is intact
    assert service.recommendation(first.id).state == "applied"
    assert service.recommendation(second.id).state == "approved"
    service.rollback(first.id)
    assert db.indexes() & built == set()


def test_an_index_of_that_name_made_by_hand_is_neither_built_over_nor_dropped(db, service):
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    name = next(k for k, _ in factory.connector(db.dsn).ownership((change,))).rsplit(".", 1)[-1]
    db.sql(f"CREATE INDEX {name} ON orders (customer_id, id)")  # someone else's, with the same name
    with pytest.raises(AlreadyExists, match="exists already"):
        service.apply(rec.id)
    with pytest.raises(AlreadyExists):  # the connector alone, too: a failed create never drops what it did not make
        factory.connector(db.dsn).apply((change,))
    assert name in db.indexes()
    assert service.recommendation(rec.id).state == "approved"


def test_a_rollback_leaves_alone_an_index_that_is_no_longer_the_one_its_apply_built(db, service):
    change = IndexChange(db.schema, "orders", ("customer_id",))
    rec = recommend(service, db, (change,))
    service.apply(rec.id)
    name = next(k for k, _ in factory.connector(db.dsn).ownership((change,))).rsplit(".", 1)[-1]
    # another hand drops it and builds its own under the name
    db.sql(f"DROP INDEX {name}" + (" ON orders" if isinstance(db, MariaDB) else ""),
           f"CREATE INDEX {name} ON orders (customer_id, v)")
    after = service.rollback(rec.id)
    assert after.state == "rolled_back" and name in db.indexes()  # not ours any more: left alone
    left = [a["detail"] for a in service.audit_log(rec.id) if a["action"] == "rollback_left_alone"]
    assert len(left) == 1 and name in left[0]["objects"][0]


def test_a_target_with_an_applied_change_cannot_be_removed_and_an_orphaned_watch_ends_once(db, service):
    rec = recommend(service, db, (IndexChange(db.schema, "orders", ("customer_id",)),))
    service.apply(rec.id)
    with pytest.raises(Conflict, match=rec.id):
        service.remove_target("shop")
    assert service.target("shop")
    # a store from an older version let the target go: the watch ends, once, with its reason
    service.store.remove_target(service.target("shop")["id"])
    rows = service.check_watches()
    assert [(r["id"], r["state"]) for r in rows] == [(rec.id, "ended")]
    assert "no longer registered" in rows[0]["note"]
    assert service.check_watches() == []
    assert sum(a["action"] == "watch_ended" for a in service.audit_log(rec.id)) == 1


def test_a_slowdown_under_other_sessions_lock_waits_is_not_rolled_back_and_one_without_them_is(db, service):
    lookups(db)
    rec = recommend(service, db, (IndexChange(db.schema, "orders", ("customer_id",)),))
    service.apply(rec.id)
    lookups(db)
    # what the counters would read had every lookup since the apply been 10x slower (only the reference is set)
    applied = service.recommendation(rec.id).applied
    start = applied["watch"]["start"]
    now = factory.connector(db.dsn).observe().statements
    since = {s.queryid: (s.calls - start[s.queryid][0], s.total_ms - start[s.queryid][1]) for s in now
             if s.queryid in start}
    assert since, "the lookup was watched"
    before = {q: [c, ms / 10] for q, (c, ms) in since.items()}
    service.store.set_applied(rec.id, {**applied, "statements_before": before})

    with a_session_waiting(db):
        rows = service.check_watches()
        assert [(r["id"], r["state"]) for r in rows] == [(rec.id, "watching")]
        assert any(a["action"] == "watch_deferred" for a in service.audit_log(rec.id))
        assert service.recommendation(rec.id).state == "applied"
    rows = service.check_watches()  # the same figures with nobody waiting: the change's own
    assert [(r["id"], r["state"]) for r in rows] == [(rec.id, "rolled_back")]
    assert service.recommendation(rec.id).state == "rolled_back"


def test_lock_waits_reads_other_sessions_waiting(db):
    connector = factory.connector(db.dsn)
    assert connector.lock_waits(samples=2, interval_s=0.01) == 0.0
    with a_session_waiting(db):
        assert connector.lock_waits(samples=3, interval_s=0.01) == 1.0

