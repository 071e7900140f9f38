"""A warm replica of a PostgreSQL target of this host's major version: a physical standby on this host
(``connectors.replica`` says what a replica is for and how its thin clones are cut; ``replica_clone`` starts a
clone; ``replica`` chooses between it and ``replica_logical``).

Built once by ``build``: the target is checked (``replica_check``), a base copy is taken with ``pg_basebackup``
through a replication slot of its own (``advisor_<id>``, so the target keeps the WAL the standby has not received),
into a data directory on a copy-on-write filesystem (``connectors.cow``). Its configuration is written here, never
taken from the target: the settings a standby must match (max_connections and the like, read from the target), the
target's tuning-relevant settings (as a full copy carries them), and its own port and socket. It listens on no TCP
address: only its owner's OS user reaches its socket directory (mode 0700), where it trusts connections. It keeps
streaming from the target between advisor processes; ``open`` finds it again from its record (``replica.json``).
Only the standby's ``postgresql.auto.conf`` holds the target's password (in ``primary_conninfo``, as PostgreSQL
keeps it; mode 0600).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.progress import Say, silent
from connectors import cow, local
from connectors.base import Shadow
from connectors.postgres import replica_check
from connectors.postgres.binaries import pg_bin_dir
from connectors.postgres.connection import TAG, connect, parse_dsn
from connectors.postgres.replica_clone import start_clone
from connectors.postgres.replica_slot import LINK_KEYS, drop_slot
from connectors.postgres.sandbox import PRELOAD
from connectors.postgres.server_control import halt, lock_pid, pg_ctl
from connectors.postgres.shadow import copied_settings
from connectors.replica import CLONES, RECORD, Lag, ReplicaUnavailable, read_record, write_record

# settings a hot standby must have at least as high as its primary's, or it will not start
MATCHED = ("max_connections", "max_worker_processes", "max_wal_senders", "max_prepared_transactions",
           "max_locks_per_transaction")
BASE_COPY_TIMEOUT_S = 24 * 3600.0


def _server_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("postgres")
    return pw.pw_uid, pw.pw_gid


def _chown_tree(path: Path, owner: tuple[int, int] | None) -> None:
    if owner is None:
        return
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), *owner)
    os.chown(path, *owner)


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"



class StandbyReplica:
    """A physical standby of one PostgreSQL target (``connectors.replica.Replica``)."""

    engine = "postgres"
    method = "physical"  # replica_check.Method's name (replica_logical's subclass: "logical")
    CLONE_SETTINGS: dict[str, str] = {}  # what a clone's configuration must add (replica_clone)

    def __init__(self, directory: Path, record: dict):
        self.directory = directory
        self.record = record
        self.target_name = record["target_name"]
        self.dbname = record["dbname"]
        self.volume = Path(record["volume"])
        self.data = self.volume / "data"
        self.log = self.volume / "replica.log"  # where the server's user may write
        self.bin = pg_bin_dir()

    # --- built once, found again -----------------------------------------------------------------------------

    @classmethod
    def build(cls, target, directory: Path, say: Say = silent) -> StandbyReplica:
        """A new standby of ``target`` (a PostgresConnector) in ``directory`` (made; must not hold a replica),
        started; ReplicaUnavailable (why, and what fixes it) when the target cannot feed one."""
        missing = replica_check.requirements(target.dsn)
        if missing:
            raise ReplicaUnavailable("the target cannot feed a replica: " +
                                     "; ".join(f"{what} (fix: {fix})" for what, fix in missing))
        with connect(target.dsn) as conn:
            size = int(conn.execute(TAG + "SELECT sum(pg_database_size(oid)) FROM pg_database").fetchone()[0])
            matched = {name: conn.execute(TAG + "SELECT current_setting(%s)", [name]).fetchone()[0]
                       for name in MATCHED}
        replica = cls._new(target, directory, 3 * size, say)
        params = parse_dsn(target.dsn)
        try:
            replica._base_copy(params, size, say)
            replica._configure(target, params, matched)
            replica._write_record()
            replica.ensure_running(say)
            replica.wait_for(replica.position(target), 600.0, say)
            say("replica: a first clean stop and start (its restartpoint written now, not by the first clone)")
            replica.stop()
            replica.ensure_running(say)
        except BaseException:
            undo_build(replica, target, say)
            raise
        say(f"replica: a standby of {target.display_name} runs in {directory} ({replica.lag().line()})")
        return replica

    @classmethod
    def _new(cls, target, directory: Path, volume_bytes: int, say: Say) -> StandbyReplica:
        """The replica's directory, its copy-on-write volume, its slot's name, port and socket directory (its record,
        not yet written)."""
        if (directory / RECORD).exists():
            raise ReplicaUnavailable(f"{directory} holds a replica already")
        directory.mkdir(parents=True, exist_ok=True)
        slot = f"advisor_{uuid.uuid4().hex[:12]}"
        try:  # mounted where the server's user may enter (the directory may sit in a home it cannot)
            volume = cow.cow_dir(directory, volume_bytes, say,
                                 mount_at=Path(tempfile.gettempdir()) / f"db-advisor-volume-{slot}")
        except AdvisorError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        record = {"engine": cls.engine, "method": cls.method, "target_name": target.target_name,
                  "dbname": parse_dsn(target.dsn).get("dbname", ""), "volume": str(volume), "slot": slot,
                  "link": {k: v for k, v in parse_dsn(target.dsn).items() if k in LINK_KEYS},
                  "port": local.free_port(), "socket_dir": tempfile.mkdtemp(prefix="advisor-replica-run-"),
                  "built_at": time.time()}
        return cls(directory, record)

    @classmethod
    def open(cls, directory: Path) -> StandbyReplica:
        return cls(directory, read_record(directory))

    def _write_record(self) -> None:
        write_record(self.directory, self.record)

    def _base_copy(self, params: dict[str, str], size: int, say: Say) -> None:
        """pg_basebackup of the whole target cluster into the volume, WAL streamed, through a new slot."""
        conninfo = make_conninfo(**{k: v for k, v in params.items() if k not in ("dbname", "password")})
        env = {**os.environ, "PGAPPNAME": "db-advisor replica"}
        if "password" in params:
            env["PGPASSWORD"] = params["password"]
        args = [str(self.bin / "pg_basebackup"), "-d", conninfo, "-D", str(self.data), "-X", "stream", "-C",
                "-S", self.record["slot"], "-c", "fast", "--no-sync"]
        say(f"replica: copying the target's cluster ({size / 2**20:.0f} MB) with pg_basebackup")
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        err: list[str] = []
        reader = threading.Thread(target=lambda: err.extend(proc.stderr.read().splitlines()), daemon=True)
        reader.start()
        started = time.monotonic()
        while proc.poll() is None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                if time.monotonic() - started > BASE_COPY_TIMEOUT_S:
                    proc.kill()
                say(f"replica: base copy {local.bytes_under(self.data) / 2**20:.0f} of about {size / 2**20:.0f} MB "
                    f"({time.monotonic() - started:.0f} s)")
        reader.join(timeout=10)
        if proc.returncode != 0:
            said = [ln for ln in err if ln.strip()]
            raise ReplicaUnavailable(f"pg_basebackup failed: {said[-1] if said else f'exit {proc.returncode}'}")

    def _configure(self, target, params: dict[str, str], matched: dict[str, str]) -> None:
        """Our own postgresql.conf, pg_hba.conf and postgresql.auto.conf (the standby's link to the target)."""
        owner = _server_user()
        socket_dir = Path(self.record["socket_dir"])
        conf = {"port": str(self.record["port"]), "listen_addresses": "", "unix_socket_directories": str(socket_dir),
                "unix_socket_permissions": "0700", "hot_standby": "on", "hot_standby_feedback": "off",
                "shared_preload_libraries": PRELOAD, "logging_collector": "off", **matched,
                **copied_settings(target.knob_catalog())}
        conf.update(port=str(self.record["port"]), listen_addresses="", unix_socket_directories=str(socket_dir))
        lines = [f"# db-advisor: warm replica of {self.target_name}"] + [f"{k} = {_quoted(v)}" for k, v in conf.items()]
        (self.data / "postgresql.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (self.data / "pg_hba.conf").write_text("local all all trust\n", encoding="utf-8")
        (self.data / "pg_ident.conf").write_text("", encoding="utf-8")
        link = {k: v for k, v in params.items() if k != "dbname"}
        link["application_name"] = self.record["slot"]
        auto = self.data / "postgresql.auto.conf"
        auto.unlink(missing_ok=True)
        local.write_private(auto, f"primary_conninfo = {_quoted(make_conninfo(**link))}\n"
                                  f"primary_slot_name = {_quoted(self.record['slot'])}\n", owner)
        (self.data / "standby.signal").touch()
        for stale in ("postmaster.pid", "postmaster.opts", "backup_label.old"):
            (self.data / stale).unlink(missing_ok=True)
        _chown_tree(self.data, owner)
        os.chmod(self.data, 0o700)
        for d in (socket_dir, self.directory):
            if owner is not None:
                os.chown(d, *owner)
            os.chmod(d, 0o700)
        if owner is not None:
            os.chown(self.volume, *owner)
            clones = self.volume / CLONES
            clones.mkdir(exist_ok=True)
            os.chown(clones, *owner)  # the advisor's store sets umask 077: a root-made 0700 dir bars the server's user

    # --- running ---------------------------------------------------------------------------------------------

    def _socket_dsn(self, dbname: str = "postgres") -> str:
        return make_conninfo(host=self.record["socket_dir"], port=self.record["port"], dbname=dbname,
                             user=self._user())

    def _user(self) -> str:
        return self._link().get("user") or "postgres"

    def _link(self) -> dict[str, str]:
        try:
            text = (self.data / "postgresql.auto.conf").read_text(encoding="utf-8")
        except OSError:
            return {}
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "primary_conninfo":
                value = value.strip()[1:-1].replace("''", "'").replace("\\\\", "\\")
                try:
                    return {k: str(v) for k, v in conninfo_to_dict(value).items()}
                except psycopg.Error:  # an unreadable link: none (``remove`` falls back on the recorded one)
                    return {}
        return {}

    def running(self) -> bool:
        pid = lock_pid(self.data / "postmaster.pid")
        return pid is not None and pid in local.server_processes(self.data)

    def ensure_running(self, say: Say = silent) -> None:
        if self.running():
            return
        if not self.data.is_dir():
            try:
                cow.cow_dir(self.directory, 0, say)  # a reboot unmounted the volume: mount it again (where it was)
            except AdvisorError as e:
                raise ReplicaUnavailable(f"the replica's volume cannot be mounted: {e}") from None
            if not self.data.is_dir():
                raise ReplicaUnavailable(f"the replica's data directory {self.data} is gone")
        socket_dir = Path(self.record["socket_dir"])
        if not socket_dir.is_dir():  # the temp directory was emptied (a reboot)
            socket_dir.mkdir(mode=0o700)
            owner = _server_user()
            if owner is not None:
                os.chown(socket_dir, *owner)
        say("replica: starting the warm replica")
        try:
            halt("replica", self.bin, self.data, socket_dir)
            pg_ctl("replica", self.bin, self.data, "start", log=self.log, timeout=300, raised=False)
        except SandboxError as e:
            raise ReplicaUnavailable(f"the warm replica does not start: {e}; last log lines: {self._log_tail()}") \
                from None

    def stop(self, mode: str = "fast") -> None:
        """A clean stop (a restartpoint is written: the data directory is consistent for a clone)."""
        try:
            halt("replica", self.bin, self.data, Path(self.record["socket_dir"]), modes=(mode, "immediate"))
        except SandboxError as e:
            raise ReplicaUnavailable(f"the warm replica does not stop: {e}") from None

    def _log_tail(self, lines: int = 3) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # --- how far behind --------------------------------------------------------------------------------------

    def lag(self) -> Lag:
        if not self.running():
            return Lag(None, None, "stopped")
        try:
            with psycopg.connect(self._socket_dsn(), autocommit=True, connect_timeout=10) as conn:
                replay, status, latest, seen = conn.execute(TAG + """
                    SELECT pg_last_wal_replay_lsn(), r.status, coalesce(r.latest_end_lsn, r.flushed_lsn),
                           extract(epoch FROM now() - r.last_msg_receipt_time)
                    FROM (SELECT 1) one LEFT JOIN pg_stat_wal_receiver r ON true""").fetchone()
                behind = None
                if latest is not None and replay is not None:
                    behind = max(0, int(conn.execute("SELECT %s::pg_lsn - %s::pg_lsn", [latest, replay])
                                        .fetchone()[0]))
        except psycopg.Error as e:
            return Lag(None, None, f"broken: the replica does not answer ({str(e).strip().splitlines()[0]})")
        if status == "streaming":  # seconds: since the target's last message, when the replica is behind at all
            return Lag(behind, (float(seen) if seen is not None else None) if behind else 0.0,
                       "streaming" if not behind else "catching up")
        return Lag(behind, None, self._why_not_streaming())

    def _why_not_streaming(self) -> str:
        tail = self._log_tail(20)
        if "replication slot" in tail and "does not exist" in tail:
            return f"broken: its replication slot {self.record['slot']} is gone on the target (rebuild the replica)"
        if "requested WAL segment" in tail and "removed" in tail:
            return "broken: the target removed WAL the replica still needs (rebuild the replica)"
        if "could not connect" in tail or "connection to server" in tail:
            return "reconnecting: the target does not answer the replica (it retries every few seconds)"
        return "connecting to the target"

    def position(self, target) -> str:
        with connect(target.dsn) as conn:
            # the insert position: with asynchronous commit, the last commit may not be written yet
            return str(conn.execute(TAG + "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                                          "ELSE pg_current_wal_insert_lsn() END").fetchone()[0])

    def replayed(self, point: str) -> bool:
        """Whether the standby replayed up to ``point``. An insert position just past a WAL page's header (an idle
        target's, after a segment switch) is reached when the standby replayed up to that page's start: no record
        can end inside the header."""
        with psycopg.connect(self._socket_dsn(), autocommit=True, connect_timeout=10) as conn:
            return bool(conn.execute(TAG + """
                SELECT pg_last_wal_replay_lsn() >= p - CASE WHEN o <= 40 THEN o ELSE 0 END
                FROM (SELECT %s::pg_lsn AS p) x,
                     LATERAL (SELECT (x.p - '0/0'::pg_lsn) %% current_setting('wal_block_size')::numeric AS o) y""",
                [point]).fetchone()[0])

    def wait_for(self, point: str, timeout_s: float, say: Say = silent) -> Lag:
        started = last_said = time.monotonic()
        while True:
            try:
                if self.running() and self.replayed(point):
                    return self.lag()
            except psycopg.OperationalError:  # starting up, or restarted for a clone: asked again
                pass
            now = time.monotonic()
            if now - started >= timeout_s:
                return self.lag()
            if now - last_said >= 5:
                last_said = now
                say(f"replica: waiting to replay up to {point} ({self.lag().line()}, {now - started:.0f} s)")
            time.sleep(0.1)

    # --- clones and removal ------------------------------------------------------------------------------------

    def clone(self, say: Say | None = None, settings: dict[str, str] | None = None) -> Shadow:
        return start_clone(self, say or silent, settings or {})

    def detach_clone(self, clone) -> None:
        """Nothing: a standby's clone is cut loose by its files (``replica_clone`` empties its link)."""

    def remove(self, target_dsn: str | None = None) -> None:
        """Stop the standby, drop its slot on the target (through ``target_dsn`` when given, else the link the
        replica or its record knows), unmount its volume and delete its directory; ReplicaUnavailable, once all else
        is gone, naming the SQL that drops the slot when the target did not let it be dropped."""
        if self.directory.is_dir() and not self.data.is_dir():
            with contextlib.suppress(AdvisorError, OSError):
                cow.cow_dir(self.directory, 0)  # a reboot unmounted the volume: mounted again to be emptied
        try:  # the volume released whatever fails on the way (a mount left would outlive its deleted image)
            link = self._slot_link(target_dsn)
            self._let_go()
            if self.data.is_dir():
                try:
                    self.stop("immediate")
                except ReplicaUnavailable:
                    local.end_server(self.data)
            clones = self.volume / CLONES
            for root in clones.glob(local.PREFIX + "*") if clones.is_dir() else ():
                local.end_server(root / "data")  # a clone still running holds files on the volume
            dropped = drop_slot(link, self.record["slot"]) if link else False
        finally:
            cow.release(self.directory)
        shutil.rmtree(self.directory, ignore_errors=True)
        if self.record.get("socket_dir"):
            shutil.rmtree(self.record["socket_dir"], ignore_errors=True)
        if not dropped:
            raise ReplicaUnavailable(f"the replica's slot on the target could not be dropped: the DBA runs "
                                     f"SELECT pg_drop_replication_slot('{self.record['slot']}') on the target")

    def _slot_link(self, target_dsn: str | None) -> dict[str, str]:
        """How to reach the target to drop the slot: ``target_dsn``, else the running replica's link (its password
        with it), else the link recorded at build (none)."""
        link = parse_dsn(target_dsn) if target_dsn else (self._link() or dict(self.record.get("link") or {}))
        return {**link, "dbname": link.get("dbname") or self.dbname or "postgres"} if link else {}

    def _let_go(self) -> None:
        """Nothing: a standby holds nothing on the target but its slot (``remove`` drops it)."""


def undo_build(replica, target, say: Say) -> None:
    """Remove what a build that failed made (its slot on the target through ``target``'s DSN); a slot left behind
    is said, with the SQL that drops it."""
    try:
        replica.remove(target.dsn)
    except (AdvisorError, OSError) as e:  # (its volume is released all the same: ``remove`` does so on every path)
        say(f"replica: {e}")
