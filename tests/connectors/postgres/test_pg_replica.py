"""A warm replica of a real PostgreSQL primary (a physical standby on a loopback XFS volume) and its thin clones:
what a clone holds, that clones are independent and writable, lag, a broken replica, a killed one, a killed clone
owner, removal, and what a target lacking replication rights is told."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psycopg
import pytest

from connectors import cow, factory, local
from connectors.replica import CLONES, ReplicaUnavailable
from connectors.postgres.sandbox import PostgresSandbox
from tests.conftest import FAST, run, scalar
from tests.connectors.volumes import left_behind

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a loopback volume needs root")


@pytest.fixture(scope="module")
def primary():
    with PostgresSandbox("primary", settings=FAST) as sandbox:
        dsn = sandbox.create_database("shop")
        run(dsn, "CREATE TABLE orders (id int PRIMARY KEY, note text)",
            "INSERT INTO orders SELECT x, md5(x::text) FROM generate_series(1, 5000) x")
        yield sandbox


@pytest.fixture(scope="module")
def replica(primary, tmp_path_factory):
    said = []
    built = factory.build_replica(primary.connector("shop"), tmp_path_factory.mktemp("replicas") / "shop", said.append)
    assert any("pg_basebackup" in m for m in said)
    yield built
    built.remove()


def _processes_under(path: Path) -> list[int]:
    return local.server_processes(path)


def test_a_clone_holds_what_the_primary_committed_and_its_writes_stay_its_own(primary, replica):
    target = primary.connector("shop")
    run(primary.dsn("shop"), "INSERT INTO orders VALUES (9001, 'just before the question')")
    lag = replica.wait_for(replica.position(target), 60, lambda m: None)
    assert lag.state == "streaming" and lag.behind_bytes == 0
    with factory.clone(target, replica=replica) as one, factory.clone(target, replica=replica) as two:
        assert one.method == "thin clone" and "streaming" in one.note
        assert one.dsn != two.dsn  # two servers side by side
        assert scalar(one.dsn, "SELECT note FROM orders WHERE id = 9001") == "just before the question"
        run(one.dsn, "DELETE FROM orders WHERE id <= 100", "CREATE INDEX orders_note ON orders (note)")
        assert scalar(one.dsn, "SELECT count(*) FROM orders") == 4901
        assert scalar(two.dsn, "SELECT count(*) FROM orders") == 5001
        assert scalar(one.dsn, "SELECT count(*) FROM pg_extension WHERE extname = 'hypopg'") == 1
        clone_root = one.sandbox.root
        assert clone_root.parent == replica.volume / CLONES
    assert not clone_root.exists()  # closing a clone deletes it
    assert scalar(primary.dsn("shop"), "SELECT count(*) FROM orders") == 5001
    assert scalar(primary.dsn("shop"), "SELECT count(*) FROM pg_indexes WHERE indexname = 'orders_note'") == 0
    assert replica.lag().state == "streaming"  # resumed after each cut


def test_a_clone_admits_only_the_advisor(primary, replica):
    with factory.clone(primary.connector("shop"), replica=replica) as shadow:
        params = {"host": "127.0.0.1", "port": shadow.sandbox.port, "dbname": "shop", "connect_timeout": 5}
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(**params, user="postgres", password="wrong").close()
        with pytest.raises(psycopg.OperationalError):  # the primary's own password does not open a clone
            psycopg.connect(**params, user="postgres", password=primary.password).close()
        psycopg.connect(shadow.dsn).close()
        for d in (shadow.sandbox.root, shadow.sandbox.run_dir):  # its socket trusts: only its owner gets there
            assert oct(d.stat().st_mode & 0o777) == "0o700"


def test_the_standby_follows_a_restarted_primary(primary, replica):
    primary.restart()
    run(primary.dsn("shop"), "INSERT INTO orders VALUES (9002, 'after the restart')")
    lag = replica.wait_for(replica.position(primary.connector("shop")), 60, lambda m: None)
    assert lag.behind_bytes == 0
    with factory.clone(primary.connector("shop"), replica=replica) as shadow:
        assert scalar(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 9002") == 1


def test_a_killed_replica_is_started_again_for_the_next_clone(primary, replica):
    pid = int((replica.data / "postmaster.pid").read_text().splitlines()[0])
    os.kill(pid, signal.SIGKILL)
    local.wait_gone(lambda: [pid], 10)
    assert replica.lag().state in ("stopped", ) or replica.lag().broken
    with factory.clone(primary.connector("shop"), replica=replica) as shadow:
        assert scalar(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 9001") == 1
    assert replica.running()


def test_clones_of_a_killed_owner_are_reaped_the_replica_is_not(primary, replica):
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from connectors import factory
        r = factory.open_replica("postgres", Path({str(replica.directory)!r}))
        s = r.clone()
        print(s.sandbox.root, flush=True)
        time.sleep(600)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[3])
    try:
        root = Path(child.stdout.readline().strip())
        assert root.is_dir() and _processes_under(root / "data")
    finally:
        child.kill()
        child.wait()
    with factory.clone(primary.connector("shop"), replica=replica):  # a new clone reaps the killed owner's
        assert not root.exists() and not _processes_under(root / "data")
    assert replica.running()


def test_a_broken_replica_says_so_and_its_clones_still_work_from_what_it_has(primary, tmp_path):
    target = primary.connector("shop")
    broken = factory.build_replica(target, tmp_path / "broken", lambda m: None)
    try:
        broken.stop()
        scalar(primary.dsn(), "SELECT pg_drop_replication_slot(%s)::text", (broken.record["slot"],))
        broken.ensure_running(lambda m: None)
        deadline = time.monotonic() + 60
        while not broken.lag().broken and time.monotonic() < deadline:
            time.sleep(0.5)
        assert broken.lag().broken and "slot" in broken.lag().state
        with factory.clone(target, replica=broken) as shadow:
            assert scalar(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 9001") == 1
    finally:
        broken.remove()
    assert not (tmp_path / "broken").exists()


def test_remove_leaves_no_server_mount_loop_device_or_slot(primary, tmp_path):
    r = factory.build_replica(primary.connector("shop"), tmp_path / "gone", lambda m: None)
    volume, data, slot = r.volume, r.data, r.record["slot"]
    with factory.clone(primary.connector("shop"), replica=r):
        pass
    r.remove()
    assert not _processes_under(data)
    assert str(volume) not in Path("/proc/self/mounts").read_text()
    assert not (tmp_path / "gone").exists() and not volume.exists()
    assert scalar(primary.dsn(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", (slot,)) == 0
    assert str(tmp_path) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def test_a_target_without_replication_rights_is_told_what_to_fix(primary, tmp_path):
    run(primary.dsn(), "CREATE ROLE clerk LOGIN PASSWORD 'pw-of-clerk'", "GRANT CONNECT ON DATABASE shop TO clerk")
    try:
        clerk = factory.connector(primary.login_dsn("shop", "clerk", "pw-of-clerk"))
        missing = clerk.replica_requirements()
        assert [what for what, _fix in missing] == ["the login clerk may not replicate"]
        assert missing[0][1].startswith('ALTER ROLE "clerk" REPLICATION')
        with pytest.raises(ReplicaUnavailable, match='may not replicate.*ALTER ROLE "clerk" REPLICATION'):
            factory.build_replica(clerk, tmp_path / "refused", lambda m: None)
        assert not (tmp_path / "refused").exists()
        assert "pw-of-clerk" not in str(missing)
    finally:
        run(primary.dsn(), "REVOKE CONNECT ON DATABASE shop FROM clerk", "DROP ROLE clerk")


def test_an_idle_target_is_caught_up_with_at_once(primary, tmp_path):
    """After the base copy, an idle target's insert position sits just past a WAL page header that no record
    reaches: the standby counts as caught up at the page's start (it waited until the next write before)."""
    target = primary.connector("shop")
    r = factory.build_replica(target, tmp_path / "idle", lambda m: None)
    try:
        point = r.position(target)
        r.wait_for(point, 60, lambda m: None)
        assert r.replayed(point)
    finally:
        r.remove()


def _dead(r) -> Path:
    """``r`` stopped, its configuration broken (it cannot start; its link to the target in it is unreadable) and its
    volume unmounted, as after a reboot: its directory, to open it again."""
    r.stop()
    (r.data / "postgresql.auto.conf").write_text("primary_conninfo = 'port=\n", encoding="utf-8")
    (r.data / "postgresql.conf").write_text("no_such_setting_at_all = on\n", encoding="utf-8")
    cow.release(r.directory)
    assert not r.data.is_dir()
    return r.directory


def test_a_replica_that_cannot_start_is_removed_with_its_slot_through_the_targets_dsn(primary, tmp_path):
    target = primary.connector("shop")
    before = _advisor_slots(primary)
    r = factory.build_replica(target, tmp_path / "dead", lambda m: None)
    slot, volume = r.record["slot"], r.volume
    assert slot in _advisor_slots(primary)
    assert "password" not in (r.directory / "replica.json").read_text() and r.record["link"]["dbname"] == "shop"
    again = factory.open_replica("postgres", _dead(r))
    with pytest.raises(ReplicaUnavailable):
        again.ensure_running()  # (its volume mounted again to try)
    cow.release(again.directory)
    assert not again.data.is_dir()
    again.remove(target.dsn)
    assert _advisor_slots(primary) == before
    assert not (tmp_path / "dead").exists() and slot.startswith("advisor_")
    assert not left_behind(tmp_path, volume)  # remounted twice after a failed start: every mount released


def test_a_slot_that_cannot_be_dropped_is_said_with_the_sql_that_drops_it(primary, tmp_path):
    r = factory.build_replica(primary.connector("shop"), tmp_path / "dead", lambda m: None)
    slot, volume = r.record["slot"], r.volume
    again = factory.open_replica("postgres", _dead(r))
    with pytest.raises(ReplicaUnavailable) as said:
        again.remove()  # the recorded link holds no password: the target refuses it
    assert f"SELECT pg_drop_replication_slot('{slot}')" in str(said.value) and "\n" not in str(said.value)
    assert not (tmp_path / "dead").exists() and not left_behind(tmp_path, volume)
    scalar(primary.dsn(), "SELECT pg_drop_replication_slot(%s)::text", (slot,))


def _advisor_slots(server) -> set[str]:
    """The advisor's replication slots on ``server`` (the module's own replica's among them)."""
    with psycopg.connect(server.dsn()) as conn:
        return {r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'advisor_%%'")}
