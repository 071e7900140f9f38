"""Several advisor processes on one store: a PostgreSQL store shared by many (each ``Store`` here stands for a
process: its own connections), and the DuckDB default, which one process holds and whose lock error says which.

Races are made certain rather than likely: a third connection holds a row or catalog lock, the test waits until
both stores are blocked behind it (polling pg_stat_activity, no fixed sleep), then lets them go."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psycopg
import pytest

from advisor.core.errors import InvalidTransition, StoreError
from advisor.storage.store import SCHEMA_VERSION, Store
from tests.advisor.storage.test_store import STORE_PASSWORD, _rec, pg_schema_version, pg_url

WAIT_S = 60.0  # an upper bound for a condition polled for, never a delay


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _blocked(admin: psycopg.Connection, dbname: str) -> int:
    """How many store sessions on ``dbname`` wait for a lock."""
    return admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock' "
                         "AND application_name = 'db-advisor store'", [dbname]).fetchone()[0]


def _in_threads(*calls) -> tuple[list[threading.Thread], list]:
    """Start each call in its own thread: the threads, and the list that gets each one's result or exception."""
    out: list = [None] * len(calls)

    def go(i, call):
        try:
            out[i] = call()
        except Exception as e:  # noqa: BLE001 - returned to the test
            out[i] = e

    threads = [threading.Thread(target=go, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    return threads, out


@pytest.fixture
def url(pg):
    return pg_url(pg)


def _dbname(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_two_processes_share_a_postgres_store(url):
    with Store(url) as a, Store(url) as b:
        tid = a.upsert_target("prod", "postgres", "host=x")
        assert [t["name"] for t in b.targets()] == ["prod"]
        b.add_recommendation(_rec())
        assert a.recommendation("r1").state == "proposed"
        a.transition("r1", "validated", "advisor")
        assert b.recommendation("r1").state == "validated"
        b.add_run("run1", tid, "knobs", "hibo", {})
        assert [r["id"] for r in a.runs(tid)] == ["run1"]
    assert pg_schema_version(url) == SCHEMA_VERSION  # in the PostgreSQL database, not a file named like the URL


def test_version_changes_when_another_process_writes(url):
    with Store(url) as a, Store(url) as b:
        seen = a.version
        b.add_recommendation(_rec())
        assert a.version != seen
        seen = a.version
        b.transition("r1", "rejected", "bob")
        assert a.version != seen
        assert a.version == b.version


def test_a_concurrent_transition_has_exactly_one_winner(pg, url):
    """Two processes approve and reject the same validated recommendation at the same moment: both read it
    validated, then both update it; exactly one succeeds, the other is told, and the audit log has one entry."""
    with Store(url) as a, Store(url) as b, psycopg.connect(pg.dsn(), autocommit=True) as admin:
        a.add_recommendation(_rec())
        a.transition("r1", "validated", "advisor")
        with psycopg.connect(url, autocommit=False) as holder:
            holder.execute("SELECT 1 FROM recommendations WHERE id = 'r1' FOR UPDATE")  # both updates wait on it
            threads, out = _in_threads(lambda: a.transition("r1", "approved", "alice"),
                                       lambda: b.transition("r1", "rejected", "bob"))
            _wait_for(lambda: _blocked(admin, _dbname(url)) == 2, "both transitions to wait on the row")
            holder.rollback()
        for t in threads:
            t.join()
        winners = [r for r in out if not isinstance(r, Exception)]
        losers = [r for r in out if isinstance(r, Exception)]
        assert len(winners) == 1 and len(losers) == 1, out
        assert isinstance(losers[0], InvalidTransition) and "another process" in str(losers[0])
        final = a.recommendation("r1").state
        assert winners[0].state == final and b.recommendation("r1").state == final
        assert [e["action"] for e in a.audit_log("r1")] == ["recommend", "validated", final]


def test_a_fresh_postgres_store_migrates_once_when_two_processes_open_it(pg, url):
    """Both open the empty database at once (held back behind a third session's uncommitted ``meta`` table until
    both wait): one migrates, the other finds it done; neither fails on the other's tables."""
    with psycopg.connect(pg.dsn(), autocommit=True) as admin, psycopg.connect(url, autocommit=False) as holder:
        holder.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
        threads, out = _in_threads(lambda: Store(url), lambda: Store(url))
        _wait_for(lambda: _blocked(admin, _dbname(url)) == 2, "both stores to wait while opening")
        holder.rollback()
        for t in threads:
            t.join()
    try:
        assert all(isinstance(s, Store) for s in out), out
        assert [s.schema_version for s in out] == [SCHEMA_VERSION] * 2
        out[0].add_recommendation(_rec())
        assert out[1].recommendation("r1").id == "r1"
    finally:
        for s in out:
            if isinstance(s, Store):
                s.close()


@pytest.mark.parametrize("url", [f"postgresql://advisor:{STORE_PASSWORD}@127.0.0.1:1/advisor",
                                 f"postgresql://advisor:{STORE_PASSWORD}%ZZ@127.0.0.1:1/advisor",
                                 f"postgres://127.0.0.1:1/advisor?password={STORE_PASSWORD}&connect_timeout=abc"])
def test_a_bad_postgres_store_fails_clearly_without_its_password(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # were the URL taken for a file path, nothing lands in the working tree
    with pytest.raises(StoreError) as err:
        Store(url)
    message = str(err.value)
    assert "cannot open the store postgres" in message and STORE_PASSWORD not in message
    assert "127.0.0.1" in message


def test_the_duckdb_lock_error_names_the_process_holding_the_store(tmp_path):
    """A second process opening a DuckDB store itself (a bare ``Store``) is told which process holds it (id and
    command line) and what to do, never DuckDB's own lock message (``open_store(remote=True)``, which every
    command and the server use, asks the holder instead: tests/advisor/storage/test_store_holder.py)."""
    path, ready = tmp_path / "held.duckdb", tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", "import pathlib, sys, threading; "
                               "from advisor.storage.store import Store; s = Store(sys.argv[2]); "
                               "pathlib.Path(sys.argv[3]).write_text('ok'); threading.Event().wait()",
                               "--marker-holding-the-store", str(path), str(ready)])
    try:
        _wait_for(lambda: ready.exists() or holder.poll() is not None, "the holder to open the store")
        assert holder.poll() is None, "the holder exited"
        with pytest.raises(StoreError) as err:
            Store(path)
    finally:
        holder.kill()
        holder.wait()
    message = str(err.value)
    assert f"process {holder.pid}" in message and "--marker-holding-the-store" in message, message
    assert "ADVISOR_STORE=postgresql://" in message and err.value.pid == holder.pid
    assert "Conflicting lock" not in message and "IO Error" not in message
    with Store(path) as s:  # free again once the holder is gone
        assert s.schema_version == SCHEMA_VERSION


def test_a_service_runs_on_a_postgres_store(pg, url, monkeypatch):
    """Two services (two processes' worth) on one PostgreSQL store: one registers a target, the other lists it
    and can use its credentials (the same ADVISOR_SECRET_KEY); nothing shows the store's or the target's
    password."""
    from cryptography.fernet import Fernet

    from advisor.bench.playground import create_shop
    from advisor.service import factory

    monkeypatch.setenv("ADVISOR_SECRET_KEY", Fernet.generate_key().decode())
    monkeypatch.delenv("ADVISOR_KEY_FILE", raising=False)
    target_password = "target-Pa55-never-shown"
    prod = create_shop(pg, "shop_" + _dbname(url), password=target_password)
    one, two = factory.build_service(url), factory.build_service(url)
    try:
        one.add_target("prod", prod)
        listed = two.targets()
        assert [t["name"] for t in listed] == ["prod"] and listed[0]["registered"]
        assert target_password not in str(listed) and STORE_PASSWORD not in two.store.path
        assert two._dsn(listed[0]) == prod
        assert two.store.count_snapshots(listed[0]["id"]) == 1
    finally:
        factory.stop(one)
        factory.stop(two)


def test_a_server_start_interrupts_only_runs_whose_process_is_gone(url):
    """On a shared store, a starting server leaves the runs of live processes alone."""
    import json
    import subprocess
    import sys

    from advisor.service.service import AdvisorService

    with Store(url) as store:
        service = AdvisorService(store)
        store.add_run("mine", "t1", "knobs", "hibo", {}, state="running")  # owned by this live process
        store.add_run("gone", "t1", "knobs", "hibo", {}, state="running")
        dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                                  text=True, check=True).stdout)
        owner = {**store.run("gone")["owner"], "pid": dead}
        store.db.execute("UPDATE tuning_runs SET owner = ? WHERE id = 'gone'", [json.dumps(owner)])
        assert service.recover_runs() == ["gone"]
        assert store.run("gone")["state"] == "interrupted" and store.run("mine")["state"] == "running"


def test_one_cron_firing_runs_in_one_process_of_a_shared_store(url):
    """Two servers on one store both see a schedule's cron slot come; only one runs it."""
    with Store(url) as one, Store(url) as two:
        sid = one.add_schedule("t1", "0 2 * * *", "UTC", {"runs": []}, "admin")
        assert one.claim_firing(sid, 1_000_000.0) is True
        assert two.claim_firing(sid, 1_000_002.5) is False  # the same slot, seconds later, elsewhere
        assert two.claim_firing(sid, 1_000_000.0 + 86_400) is True  # the next day's slot
