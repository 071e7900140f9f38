"""A warm replica of a real MariaDB primary (binlog replication with GTIDs, on a loopback XFS volume) and its thin
clones: its seed (a physical copy by mariadb-backup of a target on this host; the dump, said why, for a login
without the backup's privileges), what a clone holds, independent writable clones, lag, a broken replica, a killed
one, removal, and what a target without binary logging is told."""

import json
import os
import signal
from pathlib import Path

import pymysql
import pytest

from connectors import factory, local
from connectors.mariadb import physical_seed
from connectors.mariadb.connection import connect, parse_dsn
from connectors.mariadb.replica import MariaDBReplica
from connectors.mariadb.sandbox import MariaDBSandbox
from connectors.replica import CLONES, ReplicaUnavailable

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a loopback volume needs root")


def q(dsn: str, sql: str, args: tuple = ()):
    with connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(sql, args or None)
        return cur.fetchall() if cur.description else None


@pytest.fixture(scope="module")
def primary():
    with factory.sandbox("mariadb", "primary", durable=False, feeds_replicas=True) as sandbox:
        dsn = sandbox.create_database("shop")
        q(dsn, "CREATE TABLE orders (id int PRIMARY KEY, note text)")
        q(dsn, "INSERT INTO orders SELECT seq, md5(seq) FROM seq_1_to_5000")
        q(sandbox.create_database("elsewhere"), "CREATE TABLE kept_out (id int)")
        sandbox.add_login("app", "app-password")
        yield sandbox


@pytest.fixture(scope="module")
def replica(primary, tmp_path_factory):
    said = []
    built = factory.build_replica(primary.connector("shop"), tmp_path_factory.mktemp("replicas") / "shop", said.append)
    try:  # removed also when an assertion fails: no replica server or mount left behind
        assert any("mariadb-backup" in m for m in said) and not any("mariadb-dump" in m for m in said)
        yield built
    finally:
        built.remove()


def test_a_clone_holds_what_the_primary_committed_and_its_writes_stay_its_own(primary, replica):
    target = primary.connector("shop")
    q(primary.dsn("shop"), "INSERT INTO orders VALUES (9001, 'just before the question')")
    lag = replica.wait_for(replica.position(target), 60, lambda m: None)
    assert lag.state == "streaming"
    with factory.clone(target, replica=replica) as one, factory.clone(target, replica=replica) as two:
        assert one.method == "thin clone" and one.dsn != two.dsn
        assert one.sandbox.root.parent == replica.volume / CLONES
        assert q(one.dsn, "SELECT note FROM orders WHERE id = 9001") == (("just before the question",),)
        q(one.dsn, "DELETE FROM orders WHERE id <= 100")
        assert q(one.dsn, "SELECT count(*) FROM orders") == ((4901,),)
        assert q(two.dsn, "SELECT count(*) FROM orders") == ((5001,),)
        assert q(one.dsn, "SHOW SLAVE STATUS") == ()  # the clone follows nothing
        with pytest.raises(pymysql.OperationalError):  # its login has a password of its own
            pymysql.connect(host="127.0.0.1", port=one.sandbox.port, user="advisor", password=primary.password,
                            connect_timeout=5).close()
        root = one.sandbox.root
    assert not root.exists()
    assert q(primary.dsn("shop"), "SELECT count(*) FROM orders") == ((5001,),)
    assert replica.lag().state == "streaming"  # resumed after each cut


def test_a_clone_plans_a_table_written_just_before_by_its_rows_not_by_statistics_still_pending(primary, replica):
    """InnoDB recalculates a written table's statistics in the background, at most every 10 s: a clone cut right
    after the replica replayed a new table's rows must not be planned as if the table were empty."""
    target = primary.connector("shop")
    q(primary.dsn("shop"), "CREATE TABLE fresh (id int PRIMARY KEY, score int NOT NULL)")
    q(primary.dsn("shop"), "INSERT INTO fresh SELECT seq, seq % 97 FROM seq_1_to_500")
    assert replica.wait_for(replica.position(target), 60, lambda m: None).state == "streaming"
    with factory.clone(target, replica=replica) as one:
        assert q(one.dsn, "SELECT count(*) FROM fresh") == ((500,),)
        assert q(one.dsn, "SELECT n_rows FROM mysql.innodb_table_stats WHERE database_name = 'shop' AND "
                          "table_name = 'fresh'") == ((500,),)  # not the 0 of its creation


def test_a_target_on_this_host_is_seeded_by_mariadb_backup_and_its_copy_keeps_only_the_advisor(primary, replica):
    recorded = json.loads((replica.directory / "replica.json").read_text())
    assert recorded["seed"] == "mariadb-backup" and "on this host" in recorded["seed_reason"]
    assert primary.password not in json.dumps(recorded)
    q(primary.dsn("shop"), "INSERT INTO orders VALUES (9003, 'after the backup')")
    replica.wait_for(replica.position(primary.connector("shop")), 60, lambda m: None)
    with factory.clone(primary.connector("shop"), replica=replica) as shadow:
        assert q(shadow.dsn, "SELECT note FROM orders WHERE id = 9003") == (("after the backup",),)
        databases = {name for (name,) in q(shadow.dsn, "SHOW DATABASES")}
        assert "shop" in databases and "elsewhere" not in databases
        users = {name for (name,) in q(shadow.dsn, "SELECT DISTINCT User FROM mysql.global_priv")}
        assert "advisor" in users and "app" not in users  # the target's logins stay on the target


def test_a_login_without_the_backups_privileges_seeds_by_the_dump_and_says_why(primary, tmp_path):
    secret = "s3cret'#\"pw"
    with primary._root_conn() as conn, conn.cursor() as cur:
        cur.execute("CREATE USER dumper@'127.0.0.1' IDENTIFIED BY %s", (secret,))
        cur.execute("GRANT REPLICATION SLAVE, RELOAD, BINLOG MONITOR ON *.* TO dumper@'127.0.0.1'")
        cur.execute("GRANT SELECT, SHOW VIEW, TRIGGER ON shop.* TO dumper@'127.0.0.1'")
    target = factory.connector(primary.login_dsn("shop", "dumper", secret))
    said = []
    built = factory.build_replica(target, tmp_path / "dumped", said.append)
    try:
        recorded = (tmp_path / "dumped" / "replica.json").read_text()
        assert json.loads(recorded)["seed"] == "dump"
        assert "lacks PROCESS, LOCK TABLES" in json.loads(recorded)["seed_reason"]
        assert any("seeding by mariadb-dump" in m and "lacks PROCESS, LOCK TABLES" in m for m in said)
        assert not any(secret in m for m in said) and secret not in recorded
        q(primary.dsn("shop"), "INSERT INTO orders VALUES (9004, 'after the dump')")
        built.wait_for(built.position(target), 60, lambda m: None)
        with factory.clone(target, replica=built) as shadow:
            assert q(shadow.dsn, "SELECT note FROM orders WHERE id = 9004") == (("after the dump",),)
    finally:
        built.remove()


def test_a_server_whose_other_databases_outgrow_the_volume_seeds_by_the_dump_and_says_why(primary, tmp_path):
    server_bytes = "SELECT SUM(data_length + index_length) FROM information_schema.TABLES"
    room = 2 * (int(q(primary.dsn("shop"), server_bytes)[0][0]) + 2**20)  # the server as it is fits in half
    archive = primary.create_database("archive")
    try:
        q(archive, "CREATE TABLE old_orders (id int PRIMARY KEY, note varchar(1000))")
        q(archive, "INSERT INTO old_orders SELECT seq, repeat(md5(seq), 25) FROM seq_1_to_30000")  # ~ 30 MB
        q(archive, "ANALYZE TABLE old_orders")
        assert int(q(archive, server_bytes)[0][0]) > room  # the other database outgrows the volume's half
        target = primary.connector("shop")
        said = []
        built = MariaDBReplica.build(target, tmp_path / "outgrown", said.append, room=room)
        try:
            recorded = json.loads((tmp_path / "outgrown" / "replica.json").read_text())
            assert recorded["seed"] == "dump" and "in all its databases" in recorded["seed_reason"]
            assert any("seeding by mariadb-dump" in m and "in all its databases" in m for m in said)
            assert not any("copying the target's files" in m for m in said)  # no copy started
            with factory.clone(target, replica=built) as shadow:
                assert q(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 1") == ((1,),)
        finally:
            built.remove()
        assert physical_seed.blockers(primary.dsn("shop"), 64 * room)[0] == []  # a volume large enough copies
    finally:
        q(archive, "DROP DATABASE archive")


def test_a_backup_that_fails_says_why_without_the_password_and_leaves_the_replica_server_as_it_was(primary):
    missing, source = physical_seed.blockers(primary.dsn("shop"))
    assert missing == [] and source is not None
    wrong = "Wrong-secret-never-shown-3"  # the login's password changed since the check
    said = []
    with MariaDBSandbox("seeded", durable=False) as server:
        with pytest.raises(physical_seed.SeedFailed) as failed:
            physical_seed.seed(server, {**parse_dsn(primary.dsn("shop")), "password": wrong}, source, "shop", 0,
                               said.append)
        assert "Access denied" in str(failed.value) and len(str(failed.value).splitlines()) == 1, failed.value
        assert wrong not in str(failed.value) and not any(wrong in m for m in said)
        assert not (server.root / "backup").exists()
        assert q(server.dsn(), "SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'shop'") == ((0,),)


def test_a_killed_replica_is_started_again_and_catches_up(primary, replica):
    os.kill(replica.server.server_pid(), signal.SIGKILL)
    local.wait_gone(lambda: local.server_processes(replica.server.data), 10)
    assert replica.lag().state == "stopped"
    q(primary.dsn("shop"), "INSERT INTO orders VALUES (9002, 'while it was down')")
    with factory.clone(primary.connector("shop"), replica=replica):
        pass
    replica.wait_for(replica.position(primary.connector("shop")), 60, lambda m: None)
    with factory.clone(primary.connector("shop"), replica=replica) as shadow:
        assert q(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 9002") == ((1,),)


def test_a_broken_replica_says_so(primary, tmp_path):
    target = primary.connector("shop")
    broken = factory.build_replica(target, tmp_path / "broken", lambda m: None)
    try:
        with broken.server.root_conn() as conn, conn.cursor() as cur:  # a row the target will collide with
            cur.execute("SET GLOBAL read_only = OFF")
            cur.execute("INSERT INTO shop.orders VALUES (9100, 'only on the replica')")
        q(primary.dsn("shop"), "INSERT INTO orders VALUES (9100, 'on the target')")
        lag = broken.wait_for(broken.position(target), 5, lambda m: None)
        assert lag.broken and "rebuild" in lag.state
        with factory.clone(target, replica=broken) as shadow:  # a clone of what it has still works
            assert q(shadow.dsn, "SELECT count(*) FROM orders WHERE id = 9001") == ((1,),)
    finally:
        broken.remove()
    assert not (tmp_path / "broken").exists()


def test_remove_leaves_no_server_mount_or_directory(primary, tmp_path):
    r = factory.build_replica(primary.connector("shop"), tmp_path / "gone", lambda m: None)
    data, volume = r.server.data, r.volume
    with factory.clone(primary.connector("shop"), replica=r):
        pass
    r.remove()
    assert not local.server_processes(data)
    assert str(volume) not in Path("/proc/self/mounts").read_text()
    assert not (tmp_path / "gone").exists()


def test_a_target_without_binary_logging_is_told_what_to_fix(maria, tmp_path):
    dsn = maria.create_database("no_binlog")
    missing = factory.connector(dsn).replica_requirements()
    assert [what for what, _fix in missing][0] == "binary logging is off (log_bin)"
    assert missing[0][1].startswith("log_bin = ON")
    with pytest.raises(ReplicaUnavailable, match="binary logging is off"):
        factory.build_replica(factory.connector(dsn), tmp_path / "refused", lambda m: None)
    assert not (tmp_path / "refused").exists()
