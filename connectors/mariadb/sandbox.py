"""Throwaway MariaDB servers started from Debian's ``mariadb-server`` binaries on free loopback ports.

Each ``MariaDBSandbox`` has its own directory (``data/``, ``run/`` with the socket, pid file and error log, and
``my.cnf``, the only option file its server reads: ``--defaults-file`` first, so /etc/mysql never applies).
``my.cnf`` ends with ``!include overrides.cnf``: the persisted settings (``persist``, ``recover``), MariaDB's
counterpart of postgresql.auto.conf. performance_schema is on with the statement history consumers, digests are
8 KiB long, and InnoDB reads through the page cache (``innodb_flush_method=fsync``).

Only the advisor gets in: root over the socket only, by socket authentication for the advisor's own OS user;
code and clients as the TCP login ``advisor`` at '127.0.0.1' with a random password per server
(``connectors.local.write_secret``), which ``dsn()`` (of the database ``advisor`` every sandbox makes) carries:
redact it before showing a DSN; client programs get it in their environment, never on their command line. As
root the server runs as the ``mysql`` user. Its lifecycle and cleanup are every engine's
(``connectors.server.LocalServer``: ``stop()``, the ``atexit`` hook of ``connectors.local``, and an owner record
so that ``reap_orphans`` stops the server of a killed owner), with MariaDB's hooks here. Its programs and the
options every ``my.cnf`` holds are in ``connectors.mariadb.server_options``.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote as url_quote

import pymysql

from advisor.core import priority
from advisor.core.errors import SandboxError
from connectors import local
from connectors.local import pid_alive
from connectors.mariadb.connection import quote
from connectors.mariadb.server_options import (BASE_OPTIONS, FEEDS_REPLICAS, NOT_DURABLE, as_root, binary,
                                               option_lines)
from connectors.server import LocalServer, read_pid, register_engine

if TYPE_CHECKING:
    from connectors.mariadb.connector import MariaDBConnector

__all__ = ["MariaDBSandbox", "find_server", "login_url", "option_lines", "stop_orphan"]

LOGIN = "advisor"  # the sandbox's TCP login (all privileges; its password in the sandbox's ``password`` file)
DEFAULT_DB = "advisor"  # the database every sandbox server has (created at its first start)


def login_url(host: str, port: int, dbname: str, user: str, password: str | None = None) -> str:
    """A ``mariadb://`` URL of ``dbname`` as ``user``, with ``password`` percent-encoded when given.

    >>> login_url("127.0.0.1", 3307, "shop", "advisor", "p@ss")
    'mariadb://advisor:p%40ss@127.0.0.1:3307/shop'
    """
    secret = f":{url_quote(password, safe='')}" if password else ""
    return f"mariadb://{url_quote(user, safe='')}{secret}@{host}:{port}/{url_quote(dbname, safe='')}"


class MariaDBSandbox(LocalServer):
    """One local MariaDB server; a context manager, or ``start()`` and ``stop()``. ``settings`` in MariaDB's
    option syntax and units (``{"innodb_buffer_pool_size": "256M"}``); ``durable=False`` trades crash safety for
    speed (``NOT_DURABLE`` under the given settings); ``feeds_replicas=True`` writes binary logs a warm replica can
    follow (``FEEDS_REPLICAS``). It satisfies ``connectors.base.Sandbox``; its lifecycle is
    ``connectors.server.LocalServer``'s, with MariaDB's hooks: ``mariadb-install-db``, mariadbd started with its
    option file, SIGTERM to stop it, readiness over its socket as root."""

    measured_on = True  # False for a warm replica: it only follows its target, at the usual priority

    engine = "mariadb"
    default_db = DEFAULT_DB
    user = LOGIN
    log_name = "err.log"
    pid_path = "run/my.pid"
    dsn_form = staticmethod(login_url)  # login_dsn's: a ``mariadb://`` URL

    def __init__(self, name: str = "sandbox", settings: dict[str, str] | None = None, base_dir: str | None = None,
                 keep: bool = False, durable: bool = True, feeds_replicas: bool = False):
        self.server = binary("mariadbd")
        super().__init__(name, {**({} if durable else NOT_DURABLE), **(FEEDS_REPLICAS if feeds_replicas else {}),
                                **(settings or {})}, base_dir, keep)
        self.socket = self.run_dir / "my.sock"
        self.pid_file = self.run_dir / "my.pid"
        self.options_file = self.root / "my.cnf"
        self.overrides_file = self.root / "overrides.cnf"
        self._proc: subprocess.Popen | None = None

    # --- lifecycle hooks ----------------------------------------------------------------------------------------

    def _init(self) -> None:
        self.data.mkdir()
        self.run_dir.mkdir()
        os.chmod(self.root, 0o755)  # mkdtemp's 0700 would keep the mysql user out
        options: dict[str, str | None] = {
            "datadir": str(self.data), "socket": str(self.socket), "port": str(self.port),
            "pid-file": str(self.pid_file), "log-error": str(self.log),
            "tmpdir": str(self.run_dir),  # its own: temporary tables of other servers in /tmp share names
            **BASE_OPTIONS}
        if as_root():
            options["user"] = "mysql"
            pw = pwd.getpwnam("mysql")
            for p in (self.data, self.run_dir):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        options.update(self.settings)
        self.overrides_file.write_text("[mariadbd]\n", encoding="utf-8")
        self.options_file.write_text("[mariadbd]\n" + "\n".join(option_lines(options))
                                     + f"\n!include {self.overrides_file}\n", encoding="utf-8")
        socket_user = pwd.getpwuid(os.geteuid()).pw_name
        args = [binary("mariadb-install-db"), "--no-defaults", f"--datadir={self.data}", "--skip-test-db",
                "--auth-root-authentication-method=socket", f"--auth-root-socket-user={socket_user}",
                f"--tmpdir={self.run_dir}"]  # its own: temporary tables of servers bootstrapping at once share names
        if as_root():
            args.append("--user=mysql")
        try:
            subprocess.run(args, capture_output=True, text=True, timeout=120, check=True)
        except subprocess.CalledProcessError as e:
            said = (e.stderr or e.stdout or "").strip()
            hint = (f" (the mysql user must be able to enter every directory above {self.root})"
                    if as_root() and "Permission denied" in said else "")
            raise SandboxError(f"mariadb-install-db failed for sandbox {self.name}: "
                               f"{' | '.join(said.splitlines()[-3:])}{hint}{local.disk_note(self.root)}") from None
        except subprocess.TimeoutExpired:
            raise SandboxError(f"mariadb-install-db timed out for sandbox {self.name}") from None

    def _launch(self) -> None:
        # a server measured on runs at the measurements' priority, as every thread it starts (advisor.core.priority)
        prefix = priority.server_prefix() if self.measured_on else []
        self._proc = subprocess.Popen([*prefix, self.server, f"--defaults-file={self.options_file}"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)

    def _provision(self) -> None:
        """Its TCP login with the sandbox's password, and its default database."""
        with self._root_conn() as conn, conn.cursor() as cur:
            cur.execute("CREATE USER IF NOT EXISTS %s@'127.0.0.1' IDENTIFIED BY %s", (LOGIN, self.password))
            cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@'127.0.0.1' WITH GRANT OPTION", (LOGIN,))
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote(DEFAULT_DB)}")

    def _halt(self, timeout_s: float = 30.0, graceful: bool = True) -> None:
        """Stop the server (SIGTERM: a clean shutdown; SIGKILL unless ``graceful``), SIGKILL what is left after
        ``timeout_s``, and wait until every process of it is gone; the pid file and socket of a dead server are
        removed."""
        _halt(self.root, timeout_s, graceful)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)  # reap it: no zombie left behind
            except subprocess.TimeoutExpired:
                pass
            self._proc = None

    def persist(self, settings: dict[str, str]) -> None:
        """Add ``settings`` to the persisted overrides (read at the next start; MariaDB has no SET PERSIST)."""
        current = self.persisted()
        current.update(settings)
        self._write_overrides(current)

    def persisted(self) -> dict[str, str]:
        """The persisted overrides, by name."""
        out: dict[str, str] = {}
        for line in self.overrides_file.read_text(encoding="utf-8").splitlines()[1:]:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip('"')
        return out

    def _write_overrides(self, settings: dict[str, str]) -> None:
        """``settings`` as the persisted overrides (``overrides.cnf``, which ``my.cnf`` includes)."""
        self.overrides_file.write_text("[mariadbd]\n" + "".join(f"{ln}\n" for ln in option_lines(
            {k: str(v) for k, v in settings.items()})), encoding="utf-8")

    @classmethod
    def _halt_orphan(cls, root: Path, owner: dict) -> None:
        _halt(root, timeout_s=10.0)

    @classmethod
    def _port_of(cls, root: Path) -> int | None:
        """The port of its ``my.cnf``."""
        try:
            return next(int(line.split("=", 1)[1]) for line in (root / "my.cnf").read_text().splitlines()
                        if line.startswith("port="))
        except (OSError, ValueError, StopIteration):
            return None

    # --- use ----------------------------------------------------------------------------------------------------

    def _connector(self, dsn: str) -> MariaDBConnector:
        from connectors.mariadb.connector import MariaDBConnector

        return MariaDBConnector(dsn, restart=self.restart, persist=self.persist)

    def _root_conn(self) -> pymysql.connections.Connection:
        return pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True, connect_timeout=5)

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Block until the server accepts connections over its socket (SandboxError after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._root_conn().close()
                return
            except pymysql.Error:
                if self._proc is not None and self._proc.poll() is not None:
                    raise SandboxError(f"MariaDB sandbox {self.name} exited while starting (status "
                                       f"{self._proc.returncode}); last log lines: {self.log_tail()}") from None
                if time.monotonic() > deadline:
                    raise SandboxError(f"MariaDB sandbox {self.name} did not accept connections within "
                                       f"{timeout_s:.0f}s; last log lines: {self.log_tail()}") from None
                time.sleep(0.1)

    def create_database(self, dbname: str, template: str | None = None, extensions: bool = True) -> str:
        """Create a database and return its DSN (MariaDB has no extensions to add, nor database templates)."""
        if template:
            raise SandboxError("MariaDB has no database templates: create the database and load it instead")
        with self._root_conn() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {quote(dbname)}")
        return self.dsn(dbname)

    def add_login(self, user: str, password: str) -> None:
        """A login ``user`` at '127.0.0.1' with all privileges that must give ``password`` (as a production
        server asks); the sandbox's own logins stay as they were."""
        with self._root_conn() as conn, conn.cursor() as cur:
            cur.execute("CREATE USER IF NOT EXISTS %s@'127.0.0.1' IDENTIFIED BY %s", (user, password))
            cur.execute("ALTER USER %s@'127.0.0.1' IDENTIFIED BY %s", (user, password))
            cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@'127.0.0.1' WITH GRANT OPTION", (user,))

    @staticmethod
    def client_tool(name: str) -> str:
        """Path of a client program of the installed MariaDB (mariadb, mariadb-dump, mariadb-admin)."""
        return binary(name)


# --- processes ----------------------------------------------------------------------------------------------


def _halt(root: Path, timeout_s: float = 30.0, graceful: bool = True) -> None:
    """Whatever state the server of sandbox directory ``root`` is in, leave it stopped and startable (a clean
    shutdown, or with ``graceful=False`` SIGKILL: for a server whose files are removed next)."""
    data = root / "data"
    pid = read_pid(root / MariaDBSandbox.pid_path)
    if pid is not None and pid_alive(pid):
        try:
            os.kill(pid, signal.SIGTERM if graceful else signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        local.wait_gone(lambda: [pid] if pid_alive(pid) else [], timeout_s)
    left = local.end_server(data, leader=pid if pid is not None and pid_alive(pid) else None)
    if left:
        raise SandboxError(f"processes {left} of the old server of sandbox {root.name} did not end")
    for stale in (root / "run" / "my.pid", root / "run" / "my.sock", root / "run" / "my.sock.lock"):
        stale.unlink(missing_ok=True)


stop_orphan = MariaDBSandbox.stop_orphan  # reap_orphans' stopper (``connectors.factory.Engine``)
find_server = MariaDBSandbox.find_server  # mariadbd of a directory's pid file, the port of its ``my.cnf``
register_engine(MariaDBSandbox)
