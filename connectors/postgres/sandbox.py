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

import os
import pwd
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from psycopg.conninfo import make_conninfo

from advisor.core.errors import SandboxError
from connectors import local
from connectors.local import free_port, pid_alive, stop_all
from connectors.postgres.binaries import pg_bin_dir
from connectors.postgres.connection import keyword_dsn
from connectors.postgres.server_control import (as_server_user, halt, pg_ctl, run_tool, running_as_root,
                                                 wait_until_accepting)
from connectors.server import LocalServer, read_pid, register_engine

if TYPE_CHECKING:
    from connectors.postgres.connector import PostgresConnector

__all__ = ["PostgresSandbox", "find_server", "free_port", "pg_bin_dir", "pid_alive", "stop_all", "stop_orphan",
           "wait_until_accepting"]

PRELOAD = "pg_stat_statements,pg_qualstats"
EXTENSIONS = ("pg_stat_statements", "pg_qualstats", "hypopg")
NOT_DURABLE = {"fsync": "off", "synchronous_commit": "off"}  # a sandbox's ``durable=False``
HBA_KEYWORDS = frozenset({"all", "sameuser", "samerole", "samegroup", "replication"})  # pg_hba.conf's user words


class PostgresSandbox(LocalServer):
    """One local cluster. Use as a context manager, or call ``start()`` and ``stop()``.

    ``settings`` go into postgresql.conf (e.g. ``{"shared_buffers": "256MB"}``); ``keep=True`` leaves the
    directory behind after stop (for post-mortems); ``durable=False`` trades crash safety for speed (fsync and
    synchronous_commit off, unless ``settings`` say otherwise). Every sandbox can feed a warm replica
    (``feeds_replicas``: initdb's defaults, wal_level replica and replication connections by password, do). It
    satisfies ``connectors.base.Sandbox``; its lifecycle is ``connectors.server.LocalServer``'s, with PostgreSQL's
    hooks: initdb, ``pg_ctl`` (whose start waits until the server accepts connections), ``halt``.
    """

    engine = "postgres"
    default_db = "postgres"  # the database initdb makes: ``dsn()``'s and ``connector()``'s
    user = "postgres"
    log_name = "postgres.log"
    pid_path = "data/postmaster.pid"
    interrupt_signal = signal.SIGINT  # a fast shutdown, as ``pg_ctl stop -m fast`` sends
    launch_waits = True  # pg_ctl start -w
    clean_recover = False  # a server that will not come back is stopped in immediate mode
    dsn_form = staticmethod(keyword_dsn)  # login_dsn's: a libpq ``key=value`` DSN

    def __init__(self, name: str = "sandbox", settings: dict[str, str] | None = None, base_dir: str | None = None,
                 keep: bool = False, durable: bool = True, feeds_replicas: bool = True):
        self.bin = pg_bin_dir()
        super().__init__(name, {**({} if durable else NOT_DURABLE), **(settings or {})}, base_dir, keep,
                         bin=str(self.bin))

    # --- lifecycle hooks ----------------------------------------------------------------------------------------

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return run_tool(self.name, *args, timeout=timeout)

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

    def _launch(self) -> None:
        self._pg_ctl("start")

    def _provision(self) -> None:
        self.create_extensions(self.default_db)

    def _halt(self, graceful: bool = True) -> None:
        """Stop what is left of the server (``server_control.halt``): fast, then immediate, then SIGKILL; with
        ``graceful=False`` immediate at once (no shutdown checkpoint)."""
        halt(self.name, self.bin, self.data, self.run_dir, modes=("fast", "immediate") if graceful else ("immediate",))

    def _relaunch(self) -> None:
        """A fast restart; a server that died meanwhile is started (pg_ctl would wait for a killed, unreaped
        postmaster to stop)."""
        if self.is_running():
            self._pg_ctl("restart", "-m", "fast")
        else:
            self._halt(graceful=False)
            self._launch()

    def _write_overrides(self, settings: dict[str, str]) -> None:
        """``settings`` as postgresql.auto.conf, ALTER SYSTEM's file."""
        auto = self.data / "postgresql.auto.conf"
        lines = ["# Do not edit this file manually!", "# It will be overwritten by the ALTER SYSTEM command."]
        for key, value in settings.items():
            lines.append(f"{key} = '{str(value).replace(chr(39), chr(39) * 2)}'")
        auto.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if running_as_root():
            pw = pwd.getpwnam("postgres")
            os.chown(auto, pw.pw_uid, pw.pw_gid)

    def _may_run(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def _runs(self) -> bool:
        res = subprocess.run(as_server_user(str(self.bin / "pg_ctl"), "-D", str(self.data), "status"),
                             capture_output=True, text=True)
        pid = self.postmaster_pid()
        # pg_ctl counts a killed but unreaped (zombie) postmaster as running
        return res.returncode == 0 and (pid is None or pid_alive(pid))

    def postmaster_pid(self) -> int | None:
        return read_pid(self.data / "postmaster.pid")

    @classmethod
    def _halt_orphan(cls, root: Path, owner: dict) -> None:
        """pg_ctl stop -m immediate, then SIGKILL of what is left."""
        halt(root.name, Path(owner.get("bin") or pg_bin_dir()), root / "data", root / "run")

    @classmethod
    def _port_of(cls, root: Path) -> int | None:
        try:
            return int((root / "data" / "postmaster.pid").read_text().splitlines()[3])
        except (OSError, ValueError, IndexError):
            return None

    # --- use ----------------------------------------------------------------------------------------------------

    def dsn(self, dbname: str | None = None) -> str:
        """The DSN of ``dbname`` as the sandbox's own login, with its password: redact it before showing it."""
        return make_conninfo(host=self.host, port=self.port, user=self.user, password=self.password,
                             dbname=dbname or self.default_db)

    def _connector(self, dsn: str) -> PostgresConnector:
        from connectors.postgres.connector import PostgresConnector

        return PostgresConnector(dsn, restart=self.restart)

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

    def tool(self, name: str) -> str:
        """Path of a client tool (pg_dump, pg_restore, psql) matching this server's version."""
        return str(self.bin / name)

    @staticmethod
    def client_tool(name: str) -> str:
        """Path of a client program (pgbench, pg_dump, psql) of the newest installed server."""
        return str(pg_bin_dir() / name)


stop_orphan = PostgresSandbox.stop_orphan  # reap_orphans' stopper (``connectors.factory.Engine``)
find_server = PostgresSandbox.find_server  # the postmaster and port of a directory's ``postmaster.pid``
register_engine(PostgresSandbox)
