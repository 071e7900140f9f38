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
root the server runs as the ``mysql`` user. Cleanup is the PostgreSQL sandbox's: ``stop()``, the ``atexit`` hook
of ``connectors.local``, and an owner record so that ``reap_orphans`` stops the server of a killed owner. Its
programs and the options every ``my.cnf`` holds are in ``connectors.mariadb.server_options``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote as url_quote

import pymysql

from advisor.core import priority
from advisor.core.errors import SandboxError
from connectors import local
from connectors.local import free_port, pid_alive
from connectors.mariadb.connection import quote
from connectors.mariadb.server_options import (BASE_OPTIONS, FEEDS_REPLICAS, NOT_DURABLE, as_root, binary,
                                               option_lines)

if TYPE_CHECKING:
    from connectors.mariadb.connector import MariaDBConnector

__all__ = ["MariaDBSandbox", "option_lines", "stop_orphan"]

LOGIN = "advisor"  # the sandbox's TCP login (all privileges; its password in the sandbox's ``password`` file)
DEFAULT_DB = "advisor"  # the database every sandbox server has (created at its first start)


class MariaDBSandbox:
    """One local MariaDB server; a context manager, or ``start()`` and ``stop()``. ``settings`` in MariaDB's
    option syntax and units (``{"innodb_buffer_pool_size": "256M"}``); ``durable=False`` trades crash safety for
    speed (``NOT_DURABLE`` under the given settings); ``feeds_replicas=True`` writes binary logs a warm replica can
    follow (``FEEDS_REPLICAS``). It satisfies ``connectors.base.Sandbox``."""

    measured_on = True  # False for a warm replica: it only follows its target, at the usual priority

    engine = "mariadb"

    def __init__(self, name: str = "sandbox", settings: dict[str, str] | None = None, base_dir: str | None = None,
                 keep: bool = False, durable: bool = True, feeds_replicas: bool = False):
        self.name = name
        self.settings = {**({} if durable else NOT_DURABLE), **(FEEDS_REPLICAS if feeds_replicas else {}),
                         **(settings or {})}
        self.keep = keep
        self.server = binary("mariadbd")
        self.root = Path(tempfile.mkdtemp(prefix=f"{local.PREFIX}{name}-", dir=base_dir))
        local.write_owner(self.root, self.engine)
        self.password = local.write_secret(self.root)  # the only way in for its TCP login (issue 42)
        self.data = self.root / "data"
        self.run_dir = self.root / "run"
        self.socket = self.run_dir / "my.sock"
        self.pid_file = self.run_dir / "my.pid"
        self.log = self.run_dir / "err.log"
        self.options_file = self.root / "my.cnf"
        self.overrides_file = self.root / "overrides.cnf"
        self.port = free_port()
        self.host = "127.0.0.1"
        self.user = LOGIN
        self._proc: subprocess.Popen | None = None
        self._started = False

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> MariaDBSandbox:
        try:
            self._init()
            self._launch()
            self._started = True
            local.register(self)
            self.wait_ready()
            with self._root_conn() as conn, conn.cursor() as cur:
                cur.execute("CREATE USER IF NOT EXISTS %s@'127.0.0.1' IDENTIFIED BY %s", (LOGIN, self.password))
                cur.execute("GRANT ALL PRIVILEGES ON *.* TO %s@'127.0.0.1' WITH GRANT OPTION", (LOGIN,))
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote(DEFAULT_DB)}")
        except BaseException:
            self.stop()
            raise
        return self

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

    def restart(self) -> None:
        """Restart the server (clean shutdown, then start with the option file and its persisted overrides)."""
        try:
            self._halt()
            self._launch()
            self.wait_ready()
        except SandboxError as e:
            raise SandboxError(f"{e}{local.disk_note(self.root)}; last log lines: {self.log_tail()}") from None

    def recover(self, settings: dict[str, str]) -> None:
        """Bring back a server that crashed or will not start: end what is left of it, replace the persisted
        overrides with ``settings`` and start it."""
        self._halt()
        try:
            self.overrides_file.write_text("[mariadbd]\n" + "".join(f"{ln}\n" for ln in option_lines(
                {k: str(v) for k, v in settings.items()})), encoding="utf-8")
        except OSError as e:
            raise SandboxError(f"cannot write the configuration of sandbox {self.name}: {e.strerror}"
                               f"{local.disk_note(self.root)}") from None
        self._launch()
        self._started = True
        try:
            self.wait_ready()
        except SandboxError as e:
            raise SandboxError(f"{e}{local.disk_note(self.root)}; last log lines: {self.log_tail()}") from None

    def persist(self, settings: dict[str, str]) -> None:
        """Add ``settings`` to the persisted overrides (read at the next start; MariaDB has no SET PERSIST)."""
        current = self.persisted()
        current.update(settings)
        self.overrides_file.write_text("[mariadbd]\n" + "".join(f"{ln}\n" for ln in option_lines(
            {k: str(v) for k, v in current.items()})), encoding="utf-8")

    def persisted(self) -> dict[str, str]:
        """The persisted overrides, by name."""
        out: dict[str, str] = {}
        for line in self.overrides_file.read_text(encoding="utf-8").splitlines()[1:]:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip().strip('"')
        return out

    def is_running(self) -> bool:
        pid = _pid(self.root)
        return self._started and pid is not None and pid_alive(pid)

    def stop(self) -> None:
        """Stop the server and remove its files unless ``keep``: a kept one shuts down cleanly, one whose files go
        is killed at once (nothing of it is read again)."""
        local.unregister(self)
        if self.data.exists():
            try:
                self._halt(graceful=self.keep)
            except SandboxError:
                pass
        self._started = False
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            (self.root / local.OWNER_FILE).unlink(missing_ok=True)

    def __enter__(self) -> MariaDBSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- use --------------------------------------------------------------------------------------------------

    def dsn(self, dbname: str = DEFAULT_DB) -> str:
        """The DSN of ``dbname`` as the sandbox's own login, with its password: redact it before showing it."""
        return self.login_dsn(dbname)

    def connector(self, dbname: str = DEFAULT_DB) -> MariaDBConnector:
        """A connector to one of this server's databases that restarts this server when a change needs it."""
        from connectors.mariadb.connector import MariaDBConnector

        return MariaDBConnector(self.dsn(dbname), restart=self.restart, persist=self.persist)

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

    def log_tail(self, lines: int = 5) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def tool(self, name: str) -> str:
        """Path of a client program (mariadb, mariadb-dump) of the installed server."""
        return self.client_tool(name)

    @staticmethod
    def client_tool(name: str) -> str:
        """Path of a client program of the installed MariaDB (mariadb, mariadb-dump, mariadb-admin)."""
        return binary(name)

    # --- for benches and fault injection ------------------------------------------------------------------------

    default_db = DEFAULT_DB

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """A ``mariadb://`` URL of ``dbname`` over TCP as ``user`` (default: the sandbox's ``advisor``, with the
        sandbox's own password unless another is given), with ``password`` percent-encoded when given."""
        if user in (None, self.user) and password is None:
            password = self.password
        secret = f":{url_quote(password, safe='')}" if password else ""
        return (f"mariadb://{url_quote(user or self.user, safe='')}{secret}@{self.host}:{self.port}/"
                f"{url_quote(dbname, safe='')}")

    def server_pid(self) -> int | None:
        """mariadbd's process while it runs."""
        pid = _pid(self.root)
        return pid if pid is not None and pid_alive(pid) else None

    def interrupt(self) -> int | None:
        """A shutdown now (SIGTERM to mariadbd: sessions are ended, InnoDB flushes and stops), not waited for."""
        pid = self.server_pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        return pid


# --- processes ----------------------------------------------------------------------------------------------


def _pid(root: Path) -> int | None:
    try:
        return int((root / "run" / "my.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _halt(root: Path, timeout_s: float = 30.0, graceful: bool = True) -> None:
    """Whatever state the server of sandbox directory ``root`` is in, leave it stopped and startable (a clean
    shutdown, or with ``graceful=False`` SIGKILL: for a server whose files are removed next)."""
    data = root / "data"
    pid = _pid(root)
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


def stop_orphan(root: Path, owner: dict) -> None:
    """Stop the server of a sandbox directory whose owner process is gone (``reap_orphans`` removes it after)."""
    if (root / "data").is_dir():
        _halt(root, timeout_s=10.0)


def find_server(root: Path) -> local.RunningServer | None:
    """The running server of sandbox directory ``root``: mariadbd of its pid file, the port of its ``my.cnf``."""
    pid = _pid(root)
    if pid is None or not pid_alive(pid):
        return None
    try:
        port = next(int(line.split("=", 1)[1]) for line in (root / "my.cnf").read_text().splitlines()
                    if line.startswith("port="))
    except (OSError, ValueError, StopIteration):
        return None
    secret = local.read_secret(root)
    return local.RunningServer(MariaDBSandbox.engine, root, root / "data", pid, port,
                               f"mariadb://{LOGIN}{':' + url_quote(secret, safe='') if secret else ''}@127.0.0.1:"
                               f"{port}/{DEFAULT_DB}")


local.register_engine(MariaDBSandbox.engine, stop_orphan)
local.register_server_finder(MariaDBSandbox.engine, find_server)
