"""Throwaway PostgreSQL clusters started from the system's binaries on free loopback ports.

The demo's "production" server, every shadow instance and every test database are ``PostgresSandbox``es (code
above ``connectors`` gets them from ``connectors.factory.sandbox``). PostgreSQL refuses to run as root, so when
we are root the server runs as the ``postgres`` user.

Only the advisor gets in: every connection (TCP, socket) must give the ``postgres`` login's random password
(scram-sha-256; ``connectors.local.write_secret``), which ``dsn()`` carries: redact it before showing a DSN;
client programs get it in their environment (PGPASSWORD), never on their command line.

Cleanup: ``stop()`` (or leaving the ``with`` block, including on an exception or Ctrl-C) stops the server and
removes its directory; an ``atexit`` hook stops any sandbox still running when the interpreter exits; the
CLI turns SIGTERM/SIGHUP into a normal exit so that the hooks run. After ``kill -9`` of its owner, the sandbox's
owner record lets ``connectors.local.reap_orphans`` stop it (``stop_orphan``) and remove it.

A killed postmaster is not always gone at once: its backends run until they notice, and a killed process
nobody reaps stays a zombie, which PostgreSQL's lock-file check takes for a running postmaster. So before a
sandbox starts again (``recover``), every process of the old server is ended and waited for, and lock files
whose PID is dead are removed (``connectors.postgres.server_control`` holds how its processes are run and
stopped, shared with the warm replicas).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from typing import TYPE_CHECKING
from pathlib import Path

from psycopg.conninfo import make_conninfo

from advisor.core.errors import SandboxError
from connectors import local
from connectors.local import free_port, pid_alive, stop_all
from connectors.postgres.binaries import pg_bin_dir
from connectors.postgres.connection import keyword_dsn
from connectors.postgres.server_control import (as_server_user, halt, pg_ctl, run_tool, running_as_root,
                                                 wait_until_accepting)

if TYPE_CHECKING:
    from connectors.postgres.connector import PostgresConnector

__all__ = ["PostgresSandbox", "free_port", "pg_bin_dir", "pid_alive", "stop_all",
           "wait_until_accepting"]

PRELOAD = "pg_stat_statements,pg_qualstats"
EXTENSIONS = ("pg_stat_statements", "pg_qualstats", "hypopg")
NOT_DURABLE = {"fsync": "off", "synchronous_commit": "off"}  # a sandbox's ``durable=False``
HBA_KEYWORDS = frozenset({"all", "sameuser", "samerole", "samegroup", "replication"})  # pg_hba.conf's user words


class PostgresSandbox:
    """One local cluster. Use as a context manager, or call ``start()`` and ``stop()``.

    ``settings`` go into postgresql.conf (e.g. ``{"shared_buffers": "256MB"}``); ``keep=True`` leaves the
    directory behind after stop (for post-mortems); ``durable=False`` trades crash safety for speed (fsync and
    synchronous_commit off, unless ``settings`` say otherwise). Every sandbox can feed a warm replica
    (``feeds_replicas``: initdb's defaults, wal_level replica and replication connections by password, do). It
    satisfies ``connectors.base.Sandbox``.
    """

    engine = "postgres"
    default_db = "postgres"  # the database initdb makes: ``dsn()``'s and ``connector()``'s

    def __init__(self, name: str = "sandbox", settings: dict[str, str] | None = None, base_dir: str | None = None,
                 keep: bool = False, durable: bool = True, feeds_replicas: bool = True):
        self.name = name
        self.settings = {**({} if durable else NOT_DURABLE), **(settings or {})}
        self.keep = keep
        self.bin = pg_bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix=f"{local.PREFIX}{name}-", dir=base_dir))
        local.write_owner(self.root, self.engine, bin=str(self.bin))
        self.password = local.write_secret(self.root)  # its login's (``postgres``) only way in (issue 42)
        self.data = self.root / "data"
        self.run_dir = self.root / "run"
        self.log = self.run_dir / "postgres.log"
        self.port = free_port()
        self.host = "127.0.0.1"
        self.user = "postgres"
        self._started = False

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def _cmd(self, *args: str) -> list[str]:
        return as_server_user(*args)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return run_tool(self.name, *args, timeout=timeout)

    def start(self) -> "PostgresSandbox":
        try:
            self._init()
            self._pg_ctl("start")
            self._started = True
            local.register(self)
            self.create_extensions("postgres")
        except BaseException:
            self.stop()
            raise
        return self

    def _init(self) -> None:
        self.data.mkdir()
        self.run_dir.mkdir()
        owner = None  # the server's user, when it is not us
        if running_as_root():
            pw = pwd.getpwnam("postgres")
            owner = (pw.pw_uid, pw.pw_gid)
            for p in (self.root, self.data, self.run_dir):
                os.chown(p, *owner)
        os.chmod(self.data, 0o700)
        # every connection, over TCP and over the socket, must give the password (scram-sha-256): initdb reads
        # it from a file only the server's user can read (in root, 0700), removed once the cluster is made
        pwfile = self.root / "initdb.pw"
        local.write_private(pwfile, self.password + "\n", owner)
        try:
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=scram-sha-256",
                      f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        finally:
            pwfile.unlink(missing_ok=True)
        conf = {
            "port": str(self.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.run_dir}'",
            "shared_preload_libraries": f"'{PRELOAD}'",
            "pg_stat_statements.track": "'top'",
            "pg_stat_statements.max": "5000",
            "pg_qualstats.sample_rate": "1",
            "pg_qualstats.track_constants": "on",
            "pg_qualstats.max": "10000",  # the default 1,000 fills on a server many databases share (the tests')
            "max_connections": "60",
            "logging_collector": "off",
        }
        for key, value in self.settings.items():
            conf[key] = value if value.startswith("'") else f"'{value}'"
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as f:
            f.write("\n# db-advisor sandbox\n")
            for key, value in conf.items():
                f.write(f"{key} = {value}\n")

    def _pg_ctl(self, action: str, *extra: str, timeout: float = 120) -> None:
        pg_ctl(self.name, self.bin, self.data, action, *extra, log=self.log, timeout=timeout)

    def restart(self) -> None:
        """Restart the server (fast shutdown), e.g. after a setting that needs one changed. A server that died
        meanwhile is started (pg_ctl would wait for a killed, unreaped postmaster to stop)."""
        try:
            if self.is_running():
                self._pg_ctl("restart", "-m", "fast")
            else:
                halt(self.name, self.bin, self.data, self.run_dir)
                self._pg_ctl("start")
        except SandboxError as e:
            raise SandboxError(f"{e}{local.disk_note(self.root)}; last log lines: {self.log_tail()}") from None

    def recover(self, settings: dict[str, str]) -> None:
        """Bring a server back that will not start or has crashed: end what is left of it (waiting until its
        processes are gone) and remove its stale lock files, replace postgresql.auto.conf (ALTER SYSTEM's file)
        with ``settings``, and start it."""
        halt(self.name, self.bin, self.data, self.run_dir)
        auto = self.data / "postgresql.auto.conf"
        lines = ["# Do not edit this file manually!", "# It will be overwritten by the ALTER SYSTEM command."]
        for key, value in settings.items():
            lines.append(f"{key} = '{str(value).replace(chr(39), chr(39) * 2)}'")
        try:
            auto.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as e:
            raise SandboxError(f"cannot write the configuration of sandbox {self.name}: {e.strerror}"
                               f"{local.disk_note(self.root)}") from None
        if running_as_root():
            pw = pwd.getpwnam("postgres")
            os.chown(auto, pw.pw_uid, pw.pw_gid)
        try:
            self._pg_ctl("start")
        except SandboxError as e:
            raise SandboxError(f"{e}{local.disk_note(self.root)}; last log lines: {self.log_tail()}") from None

    def is_running(self) -> bool:
        if not self._started:
            return False
        res = subprocess.run(self._cmd(str(self.bin / "pg_ctl"), "-D", str(self.data), "status"),
                             capture_output=True, text=True)
        pid = self.postmaster_pid()
        # pg_ctl counts a killed but unreaped (zombie) postmaster as running
        return res.returncode == 0 and (pid is None or pid_alive(pid))

    def postmaster_pid(self) -> int | None:
        pid_file = self.data / "postmaster.pid"
        try:
            return int(pid_file.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        """Stop the server and remove its files unless ``keep``: a kept one stops cleanly (fast, then immediate,
        then SIGKILL); one whose files go stops at once (immediate: no shutdown checkpoint to write for nothing)."""
        local.unregister(self)
        if self.data.exists() and (self.data / "postmaster.pid").exists():
            with contextlib.suppress(SandboxError):
                halt(self.name, self.bin, self.data, self.run_dir,
                      modes=("fast", "immediate") if self.keep else ("immediate",))
        self._started = False
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        else:  # kept on purpose, for a post-mortem: no orphan for reap_orphans any more
            (self.root / local.OWNER_FILE).unlink(missing_ok=True)

    def __enter__(self) -> "PostgresSandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- use --------------------------------------------------------------------------------------------------

    def dsn(self, dbname: str = "postgres") -> str:
        """The DSN of ``dbname`` as the sandbox's own login, with its password: redact it before showing it."""
        return make_conninfo(host=self.host, port=self.port, user=self.user, password=self.password, dbname=dbname)

    def connector(self, dbname: str = "postgres") -> "PostgresConnector":
        """A connector to one of this server's databases that restarts this server when a change needs it."""
        from connectors.postgres.connector import PostgresConnector

        return PostgresConnector(self.dsn(dbname), restart=self.restart)

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Block until the server accepts connections (SandboxError after ``timeout_s`` seconds)."""
        wait_until_accepting(self.dsn(), timeout_s)

    def create_database(self, dbname: str, template: str | None = None, extensions: bool = True) -> str:
        """Create a database (with the advisor's extensions unless told otherwise) and return its DSN."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname))
            if template:
                stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
            conn.execute(stmt)
        if extensions:
            self.create_extensions(dbname)
        return self.dsn(dbname)

    def create_extensions(self, dbname: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            for ext in EXTENSIONS:
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(ext)))

    def add_login(self, user: str, password: str) -> None:
        """A superuser login ``user`` that must give ``password`` over TCP (scram-sha-256), as a production
        server asks; the sandbox's own ``postgres`` login keeps its own password. Reloads the server."""
        import psycopg
        from psycopg import sql

        if not user.isidentifier() or user.lower() in HBA_KEYWORDS:
            raise SandboxError(f"a sandbox login name is letters, digits and underscores, not {user!r} (nor a "
                               f"pg_hba.conf keyword: {', '.join(sorted(HBA_KEYWORDS))})")
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [user]).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(sql.SQL(verb + " ROLE {} WITH LOGIN SUPERUSER PASSWORD {}").format(
                sql.Identifier(user), sql.Literal(password)))
        hba = self.data / "pg_hba.conf"
        line = f"host all {user} 127.0.0.1/32 scram-sha-256\n"
        rules = hba.read_text(encoding="utf-8")
        if line not in rules:  # first match wins: the password rule goes before initdb's trust rules
            hba.write_text(line + rules, encoding="utf-8")
        self._pg_ctl("reload")

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def tool(self, name: str) -> str:
        """Path of a client tool (pg_dump, pg_restore, psql) matching this server's version."""
        return str(self.bin / name)

    @staticmethod
    def client_tool(name: str) -> str:
        """Path of a client program (pgbench, pg_dump, psql) of the newest installed server."""
        return str(pg_bin_dir() / name)

    # --- for benches and fault injection ------------------------------------------------------------------------

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """A libpq ``key=value`` DSN of ``dbname`` over TCP as ``user`` (default: ``postgres``, with the sandbox's
        own password unless another is given)."""
        if user in (None, self.user) and password is None:
            password = self.password
        return keyword_dsn(self.host, self.port, dbname, user or self.user, password)

    def server_pid(self) -> int | None:
        """The postmaster's process while it runs."""
        pid = self.postmaster_pid()
        return pid if pid is not None and pid_alive(pid) else None

    def interrupt(self) -> int | None:
        """A fast shutdown (SIGINT to the postmaster, as ``pg_ctl stop -m fast`` sends), not waited for."""
        pid = self.server_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
        return pid


def stop_orphan(root: Path, owner: dict) -> None:
    """Stop the server of a sandbox directory whose owner process is gone (``connectors.local.reap_orphans``
    removes the directory afterwards): pg_ctl stop -m immediate, then SIGKILL of what is left."""
    bin_dir = Path(owner.get("bin") or pg_bin_dir())
    if (root / "data").is_dir():
        halt(root.name, bin_dir, root / "data", root / "run")


def find_server(root: Path) -> local.RunningServer | None:
    """The running server of sandbox directory ``root``: the postmaster and port of its ``postmaster.pid``."""
    try:
        lines = (root / "data" / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
    except (OSError, ValueError, IndexError):
        return None
    if not pid_alive(pid):
        return None
    return local.RunningServer(PostgresSandbox.engine, root, root / "data", pid, port,
                               keyword_dsn("127.0.0.1", port, "postgres", "postgres", local.read_secret(root)))


local.register_engine(PostgresSandbox.engine, stop_orphan)
local.register_server_finder(PostgresSandbox.engine, find_server)
