"""A warm replica of a MariaDB target: a local server that follows the target's database by binlog replication
with GTIDs (``connectors.replica`` says what a replica is for and how its thin clones are cut).

Built once by ``build``: the target is checked (``replica_check``); a sandbox server is made on a copy-on-write
volume (``connectors.cow``) with its own server id, read-only, replicating only the target's database; the
database is copied where the target's files are on this host by ``mariadb-backup`` (a physical copy of its files,
``connectors.mariadb.physical_seed``), else with ``mariadb-dump --single-transaction --master-data --gtid`` and
loaded; both record the GTID position they were taken at; then ``CHANGE MASTER TO ... MASTER_USE_GTID = slave_pos``
and ``START SLAVE``. Which seed was used and why is said and kept in the record (``seed``, ``seed_reason``). The
replica keeps running between advisor processes and is found again from its
record (``replica.json``). As every sandbox, it admits only the advisor (root by socket for the advisor's OS user;
its ``advisor`` login with a random password over loopback). The target's password is kept only where MariaDB
keeps it for replication (its ``master.info``).

A thin clone copies the whole server directory at a clean shutdown, after ``ANALYZE`` of the database's tables (InnoDB
recalculates a written table's statistics only in the background: a clone must not plan a table written just before
by stale figures), rewrites its option file (paths, port, ``skip-slave-start``), starts it, forgets the replication
link (``RESET SLAVE ALL``) and gives its login a new password.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pymysql

from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.progress import Say, heartbeat, silent
from connectors import cow, local
from connectors.base import Shadow
from connectors.mariadb import physical_seed, replica_check
from connectors.mariadb.connection import connect, parse_dsn, quote
from connectors.mariadb.sandbox import MariaDBSandbox
from connectors.mariadb.server_options import binary, option_lines
from connectors.mariadb.shadow import _credentials, _dump, _load, copied_settings
from connectors.replica import CLONES, RECORD, Lag, ReplicaUnavailable, read_record, write_record, cut_clone

GTID_WAIT_STEP_S = 5.0


class HeldServer(MariaDBSandbox):
    """A MariaDB server in a sandbox directory that exists already (a replica's, or a clone's copy of one): started
    from its own option file, never installed again."""

    def __init__(self, root: Path, name: str, keep: bool):
        self.name, self.settings, self.keep = name, {}, keep
        self.measured_on = not keep  # a clone is measured on; the replica itself only follows its target
        self.server = binary("mariadbd")
        self.root = root
        self.password = local.read_secret(root) or ""
        self.data, self.run_dir = root / "data", root / "run"
        self.socket, self.pid_file, self.log = self.run_dir / "my.sock", self.run_dir / "my.pid", self.run_dir / "err.log"
        self.options_file, self.overrides_file = root / "my.cnf", root / "overrides.cnf"
        self.port = int(next(ln.split("=", 1)[1] for ln in self.options_file.read_text().splitlines()
                             if ln.startswith("port=")))
        self.host, self.user = "127.0.0.1", "advisor"
        self._proc, self._started = None, False

    def start(self) -> HeldServer:
        self._launch()
        self._started = True
        if not self.keep:
            local.register(self)
        self.wait_ready(120.0)
        return self

    def root_conn(self) -> pymysql.connections.Connection:
        return self._root_conn()


class MariaDBReplica:
    """A GTID replica of one MariaDB target's database (``connectors.replica.Replica``)."""

    engine = "mariadb"

    def __init__(self, directory: Path, record: dict):
        self.directory = directory
        self.record = record
        self.target_name = record["target_name"]
        self.dbname = record["dbname"]
        self.volume = Path(record["volume"])
        self.server = HeldServer(Path(record["root"]), "replica", keep=True) if Path(record["root"]).is_dir() \
            else None

    @classmethod
    def build(cls, target, directory: Path, say: Say = silent, room: int | None = None) -> MariaDBReplica:
        """``room``: the volume's bytes as the physical seed's size check sees them (its real size by default)."""
        missing = replica_check.requirements(target.dsn)
        if missing:
            raise ReplicaUnavailable("the target cannot feed a replica: " +
                                     "; ".join(f"{what} (fix: {fix})" for what, fix in missing))
        if (directory / RECORD).exists():
            raise ReplicaUnavailable(f"{directory} holds a replica already")
        params = parse_dsn(target.dsn)
        dbname = params["database"]
        if not dbname:
            raise ReplicaUnavailable("a MariaDB target's DSN must name its database for a replica")
        directory.mkdir(parents=True, exist_ok=True)
        size = target.bench().database_bytes()
        tag = uuid.uuid4().hex[:12]
        try:
            volume = cow.cow_dir(directory, volume_bytes(size), say,
                                 mount_at=Path(tempfile.gettempdir()) / f"db-advisor-volume-{tag}")
        except AdvisorError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        try:
            os.chmod(volume, 0o755)  # the mysql user enters it
            settings = {**copied_settings(target.knob_catalog()), "server_id": str(random.randint(10_000, 2**31)),
                        "read_only": "ON", "replicate_do_db": dbname, "relay_log": "relay-bin",
                        "log_slave_updates": "OFF", "slave_net_timeout": "10"}
            say("replica: starting a local MariaDB server for it")
            sandbox = MariaDBSandbox("replica", settings=settings, base_dir=str(volume), keep=True)
        except BaseException:  # the volume mounted above is not left behind
            cow.release(directory)
            shutil.rmtree(directory, ignore_errors=True)
            raise
        sandbox.measured_on = False
        record = {"engine": cls.engine, "target_name": target.target_name, "dbname": dbname, "volume": str(volume),
                  "root": str(sandbox.root), "built_at": time.time()}
        replica = cls.__new__(cls)
        replica.directory, replica.record, replica.target_name, replica.dbname = directory, record, \
            target.target_name, dbname
        replica.volume, replica.server = volume, None
        try:
            sandbox.start()
            local.unregister(sandbox)  # it outlives this process
            (sandbox.root / local.OWNER_FILE).unlink(missing_ok=True)  # no orphan for reap_orphans
            replica.server = HeldServer(sandbox.root, "replica", keep=True)
            replica.server._started = True
            replica._seed(sandbox, target.dsn, params, size, room or volume_bytes(size), say)
            replica._write_record()
        except BaseException:
            replica.remove()
            raise
        say(f"replica: a replica of {target.display_name} runs in {directory} ({replica.lag().line()})")
        return replica

    @classmethod
    def notes(cls, target) -> list[str]:
        """What a physical seed needs and ``target`` lacks, one line each with its fix: no blocker, the dump seeds
        the replica then (``connectors.factory.replica_notes``)."""
        missing, _source = physical_seed.blockers(target.dsn, volume_bytes(target.bench().database_bytes()))
        return [f"the replica will be seeded by mariadb-dump, not {physical_seed.TOOL}: {what} (fix: {fix})"
                for what, fix in missing]

    @classmethod
    def open(cls, directory: Path) -> MariaDBReplica:
        return cls(directory, read_record(directory))

    def _write_record(self) -> None:
        write_record(self.directory, self.record)

    def _seed(self, sandbox: MariaDBSandbox, dsn: str, params: dict, size: int, room: int, say: Say) -> None:
        """The target's database copied at a recorded binary log position, by ``mariadb-backup`` where it can be
        had, else by ``mariadb-dump`` (said, with why); replication started from there."""
        missing, source = physical_seed.blockers(dsn, room)
        why, point = "; ".join(what for what, _fix in missing), None
        if source is not None:
            try:
                point = physical_seed.seed(sandbox, params, source, self.dbname, size, say)
                why = "the target's files are on this host"
            except physical_seed.SeedFailed as e:
                why = str(e)
        if point is None:
            say(f"replica: seeding by mariadb-dump, not {physical_seed.TOOL}: {why}")
            point = (self._dump_seed(sandbox, params, size, say), "", 0)
        self.record.update(seed=physical_seed.TOOL if point[1] else "dump", seed_reason=why)
        gtid, log_file, log_pos = point
        at = ("MASTER_USE_GTID = slave_pos" if gtid or not log_file else
              "MASTER_USE_GTID = no, MASTER_LOG_FILE = %s, MASTER_LOG_POS = %s")  # nothing logged with a GTID yet
        with sandbox._root_conn() as conn, conn.cursor() as cur:
            if gtid or not log_file:
                cur.execute("SET GLOBAL gtid_slave_pos = %s", (gtid,))
            cur.execute("CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = %s, MASTER_PASSWORD = %s, "
                        f"{at}, MASTER_CONNECT_RETRY = 5",
                        (params["host"], int(params["port"]), params["user"], params.get("password") or "",
                         *(() if gtid or not log_file else (log_file, log_pos))))
            cur.execute("START SLAVE")

    def _dump_seed(self, sandbox: MariaDBSandbox, params: dict, size: int, say: Say) -> str:
        """The target's database dumped at a recorded GTID position and loaded; that position."""
        sandbox.create_database(self.dbname)
        with tempfile.TemporaryDirectory(prefix="dump-", dir=sandbox.root) as tmp, \
                heartbeat(say, "seeding the replica by mariadb-dump") as beating:
            credentials = _credentials(Path(tmp), params)
            dump = Path(tmp) / "target.sql"
            beating(f"replica: copying the target's database ({size / 2**20:.0f} MB) with mariadb-dump at a GTID "
                    "position")
            _dump(sandbox, credentials, params, dump, "--master-data=2", "--gtid", names=(self.dbname,))
            gtid = _dumped_gtid(dump)
            beating("replica: loading the copy")
            _load(sandbox, self.dbname, dump)
        return gtid

    # --- running -----------------------------------------------------------------------------------------------

    def running(self) -> bool:
        return self.server is not None and self.server.server_pid() is not None

    def ensure_running(self, say: Say = silent) -> None:
        if self.running():
            return
        if self.server is None or not self.server.data.is_dir():
            try:
                cow.cow_dir(self.directory, 0, say)
            except AdvisorError as e:
                raise ReplicaUnavailable(f"the replica's volume cannot be mounted: {e}") from None
            if not Path(self.record["root"]).is_dir():
                raise ReplicaUnavailable(f"the replica's server directory {self.record['root']} is gone")
            self.server = HeldServer(Path(self.record["root"]), "replica", keep=True)
        say("replica: starting the warm replica")
        try:
            self.server._halt()
            self.server.start()
        except SandboxError as e:
            raise ReplicaUnavailable(f"the warm replica does not start: {e}") from None

    def stop(self) -> None:
        """A clean shutdown (InnoDB flushed: its files are consistent for a clone)."""
        if self.server is not None:
            try:
                self.server._halt(timeout_s=120.0)
            except SandboxError as e:
                raise ReplicaUnavailable(f"the warm replica does not stop: {e}") from None

    def _status(self) -> dict | None:
        with self.server.root_conn() as conn, conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW SLAVE STATUS")
            return cur.fetchone()

    def lag(self) -> Lag:
        if not self.running():
            return Lag(None, None, "stopped")
        try:
            status = self._status()
        except pymysql.Error as e:
            return Lag(None, None, f"broken: the replica does not answer ({e.args[-1] if e.args else e})")
        if not status:
            return Lag(None, None, "broken: the replica has no link to the target (rebuild it)")
        behind = status.get("Seconds_Behind_Master")
        io, sql_ = status.get("Slave_IO_Running"), status.get("Slave_SQL_Running")
        if sql_ != "Yes":
            error = (status.get("Last_SQL_Error") or "its SQL thread stopped").splitlines()[0][:200]
            return Lag(None, None, f"broken: {error} (rebuild the replica)")
        if io == "Yes":
            return Lag(None, float(behind or 0), "streaming" if not behind else "catching up")
        error = (status.get("Last_IO_Error") or "").splitlines()[0][:200] if status.get("Last_IO_Error") else ""
        if status.get("Last_IO_Errno") == 1236:
            return Lag(None, None, f"broken: the target no longer has binary logs the replica needs ({error})")
        return Lag(None, None, f"reconnecting: {error or 'the target does not answer'} (it retries every few seconds)")

    def position(self, target) -> str:
        with connect(target.dsn) as conn, conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
            return str(cur.fetchone()[0] or "")

    def wait_for(self, point: str, timeout_s: float, say: Say = silent) -> Lag:
        started = time.monotonic()
        while self.running():
            left = timeout_s - (time.monotonic() - started)
            if left <= 0:
                break
            try:
                with self.server.root_conn() as conn, conn.cursor() as cur:
                    cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (point, min(left, GTID_WAIT_STEP_S)))
                    if cur.fetchone()[0] == 0:
                        break
            except pymysql.Error:
                time.sleep(0.5)
            say(f"replica: waiting to replay up to {point} ({self.lag().line()}, {time.monotonic() - started:.0f} s)")
        return self.lag()

    # --- clones and removal ------------------------------------------------------------------------------------

    def clone(self, say: Say | None = None, settings: dict[str, str] | None = None) -> Shadow:
        say = say or silent
        self.ensure_running(say)
        clones = self.volume / CLONES
        clones.mkdir(exist_ok=True)
        os.chmod(clones, 0o755)
        local.reap_orphans(clones)
        lag = self.lag()
        say(f"shadow: a thin clone of the warm replica ({lag.line()})")
        root = Path(tempfile.mkdtemp(prefix=f"{local.PREFIX}clone-", dir=clones))
        root.rmdir()  # cut_clone makes it
        self._analyze(say)
        cut_clone(self.directory, self.server.root, root, stop=self.stop, start=lambda: self.ensure_running())
        try:
            server = _as_clone(root, self.server.root, settings or {})
            server.start()
            with server.root_conn() as conn, conn.cursor() as cur:
                cur.execute("STOP SLAVE")
                cur.execute("RESET SLAVE ALL")  # forgets the target, its password and the relay logs
                cur.execute("SET GLOBAL read_only = OFF")
                cur.execute("ALTER USER %s@'127.0.0.1' IDENTIFIED BY %s", (server.user, server.password))
        except (AdvisorError, pymysql.Error, OSError, StopIteration) as e:
            local.end_server(root / "data")
            shutil.rmtree(root, ignore_errors=True)
            raise ReplicaUnavailable(f"the thin clone did not start: {str(e).strip().splitlines()[0][:200]}") from None
        return Shadow(server, server.connector(self.dbname), self.dbname, method="thin clone", note=lag.line())

    def _analyze(self, say: Say) -> None:
        """Fresh InnoDB statistics of every table of the replica's database, persisted before a clone is cut: InnoDB
        recalculates a written table's in the background, at most every 10 s, so a table written just before
        would be planned on the clone by the figures of its creation (one sample, shared by every clone cut
        after; ``NO_WRITE_TO_BINLOG``: nothing of its own in the replica's binary log)."""
        try:
            with self.server.root_conn() as conn, conn.cursor() as cur, \
                    heartbeat(say, "analyzing the warm replica's tables") as beating:
                cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND "
                            "table_type = 'BASE TABLE'", (self.dbname,))
                tables = [name for (name,) in cur.fetchall()]
                cur.execute("SET SESSION use_stat_tables = 'NEVER'")  # InnoDB's sampled pages, no full-scan histograms
                beating(f"shadow: analyzing the warm replica's {len(tables)} tables (statistics for its clones)")
                for name in tables:
                    cur.execute(f"ANALYZE NO_WRITE_TO_BINLOG TABLE {quote(self.dbname)}.{quote(name)}")
                    cur.fetchall()
        except pymysql.Error as e:
            raise ReplicaUnavailable(f"the warm replica's tables could not be analyzed: "
                                     f"{e.args[-1] if e.args else e}") from None

    def remove(self, target_dsn: str | None = None) -> None:  # holds nothing on the target
        try:  # the volume released whatever fails on the way (a mount left would outlive its deleted image)
            if self.server is not None and self.server.data.is_dir():
                try:
                    self.server._halt(graceful=False)
                except SandboxError:
                    local.end_server(self.server.data)
            clones = self.volume / CLONES
            for root in clones.glob(local.PREFIX + "*") if clones.is_dir() else ():
                local.end_server(root / "data")
        finally:
            cow.release(self.directory)
        shutil.rmtree(self.directory, ignore_errors=True)


def volume_bytes(database_bytes: int) -> int:
    """The replica's volume for a database of ``database_bytes``: four times it, at least 1 GiB."""
    return max(4 * database_bytes, 2**30)


def _as_clone(root: Path, replica_root: Path, settings: dict[str, str]) -> HeldServer:
    """The copied server directory ``root`` made a clone's: its paths and port in the option file, replication not
    started, a new owner record and a new password for its login."""
    lines = []
    for line in (root / "my.cnf").read_text(encoding="utf-8").splitlines():
        if line.startswith("port="):
            line = f"port={local.free_port()}"
        lines.append(line.replace(str(replica_root), str(root)))
    extra = option_lines({"skip-slave-start": None, "read_only": "OFF", **settings})
    include = next(i for i, ln in enumerate(lines) if ln.startswith("!include"))
    lines[include:include] = extra
    (root / "my.cnf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    local.write_owner(root, MariaDBSandbox.engine)
    (root / local.SECRET_FILE).unlink(missing_ok=True)
    local.write_secret(root)
    for stale in ("my.pid", "my.sock", "my.sock.lock"):
        (root / "run" / stale).unlink(missing_ok=True)
    return HeldServer(root, "clone", keep=False)


def _dumped_gtid(dump: Path) -> str:
    """The GTID position ``mariadb-dump --master-data=2 --gtid`` recorded (a commented ``SET GLOBAL gtid_slave_pos``
    at the dump's end)."""
    with open(dump, "rb") as f:
        f.seek(max(0, dump.stat().st_size - 65536))
        tail = f.read().decode("utf-8", errors="replace")
    for line in reversed(tail.splitlines()):
        if "gtid_slave_pos" in line.lower() and "'" in line:
            return line.split("'")[1]
    raise ReplicaUnavailable("mariadb-dump recorded no GTID position (is binary logging on at the target?)")
