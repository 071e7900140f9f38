"""The lifecycle of a local server the advisor starts itself, written once for every engine: ``LocalServer``.

It holds what every engine's sandbox does alike: its directory (``tempfile.mkdtemp`` with ``connectors.local``'s
prefix, an owner record, its own login's random password, ``data/`` and ``run/``), ``start`` (made, launched,
registered with ``connectors.local`` so that the ``atexit`` hook stops it, provisioned; stopped again when any
step fails), ``restart`` and ``recover`` (their errors with the disk's state and the log's last lines), ``stop``
(its files removed unless ``keep``), the ``with`` block, DSNs, the server's leader process (``server_pid``,
``interrupt``), and, from a sandbox directory alone, ``stop_orphan`` (a killed owner's server, for
``local.reap_orphans``) and ``find_server`` (the fault benches' ``local.running_servers``).

An engine's sandbox subclasses it and fills in hooks: ``_init`` (a new data directory and its configuration),
``_launch`` (start the server from its files), ``_halt`` (stop it, leaving it startable), ``wait_ready`` (the ready
probe), ``_provision`` (what a new server gets once it runs: logins, databases, extensions), ``_write_overrides``
(the persisted settings ``recover`` starts with), ``_connector``, ``dsn_form`` and ``client_tool``, the SQL of
``create_database`` and ``add_login`` through the engine's connection, and for a directory alone ``_halt_orphan``
and ``_port_of``; its class attributes say the rest (its login, default database, log, pid file, the signal of a
fast stop). ``register_engine`` registers an engine's stopper and finder with ``connectors.local``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from advisor.core.errors import SandboxError
from connectors import local
from connectors.local import free_port, pid_alive

if TYPE_CHECKING:
    from connectors.base import Connector

__all__ = ["LocalServer", "read_pid", "register_engine"]


def read_pid(path: Path) -> int | None:
    """The process id a pid file starts with (None when there is none to read)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class LocalServer:
    """One local server in a sandbox directory of its own (``connectors.base.Sandbox``); a context manager, or
    ``start()`` and ``stop()``. Subclasses fill in the hooks the module's docstring lists."""

    engine: ClassVar[str]
    user: str  # the sandbox's own login (its password in ``password``)
    default_db: str  # the database every new server has: ``dsn()``'s and ``connector()``'s
    host = "127.0.0.1"
    log_name: ClassVar[str]  # the server's log, in ``run/``
    pid_path: ClassVar[str | None]  # its leader's pid file, relative to the sandbox directory (None: no process)
    interrupt_signal: ClassVar[int] = signal.SIGTERM  # what ``interrupt`` sends: the engine's fast shutdown
    launch_waits: ClassVar[bool] = False  # whether ``_launch`` returns only once the server accepts connections
    clean_recover: ClassVar[bool] = True  # whether ``recover`` shuts a server left running down cleanly (or at once)

    def __init__(self, name: str, settings: dict[str, str], base_dir: str | None, keep: bool, **record: str):
        """A new sandbox directory (``record``: what the owner record adds, e.g. the binaries' directory)."""
        self.name = name
        self.settings = settings
        self.keep = keep
        self.root = Path(tempfile.mkdtemp(prefix=f"{local.PREFIX}{name}-", dir=base_dir))
        local.write_owner(self.root, self.engine, **record)
        self.password = local.write_secret(self.root)  # the only way in for its own login (issue 42)
        self.data = self.root / "data"
        self.run_dir = self.root / "run"
        self.log = self.run_dir / self.log_name
        self.port = free_port()
        self._started = False

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> LocalServer:
        try:
            self._init()
            self._launch()
            self._started = True
            local.register(self)
            if not self.launch_waits:
                self.wait_ready()
            self._provision()
        except BaseException as e:
            instead = self._start_failed(e)  # asked before stop(): the log is still there
            self.stop()
            if instead is not None:
                raise instead from None
            raise
        return self

    def restart(self) -> None:
        """Restart the server (e.g. after a setting that needs one changed); SandboxError with its log's tail."""
        try:
            self._relaunch()
        except SandboxError as e:
            raise self._with_log(e) from None

    def recover(self, settings: dict[str, str]) -> None:
        """Bring back a server that crashed or will not start: end what is left of it (waiting until its processes
        are gone), replace its persisted settings with ``settings``, and start it."""
        self._halt(graceful=self.clean_recover)
        try:
            self._write_overrides(settings)
        except OSError as e:
            raise SandboxError(f"cannot write the configuration of sandbox {self.name}: {e.strerror}"
                               f"{local.disk_note(self.root)}") from None
        self._started = True
        try:
            self._boot()
        except SandboxError as e:
            raise self._with_log(e) from None

    def is_running(self) -> bool:
        return self._started and self._runs()

    def stop(self) -> None:
        """Stop the server and remove its files unless ``keep``: a kept one shuts down cleanly, one whose files go
        stops at once (nothing of it is read again)."""
        local.unregister(self)
        if self._may_run():
            with contextlib.suppress(SandboxError):
                self._halt(graceful=self.keep)
        self._started = False
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        else:  # kept on purpose, for a post-mortem: no orphan for reap_orphans any more
            (self.root / local.OWNER_FILE).unlink(missing_ok=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _boot(self) -> None:
        """Start the server from its files and return once it accepts connections."""
        self._launch()
        if not self.launch_waits:
            self.wait_ready()

    def _relaunch(self) -> None:
        """``restart``'s steps: a clean shutdown, then a start."""
        self._halt()
        self._boot()

    def _with_log(self, error: SandboxError) -> SandboxError:
        return SandboxError(f"{error}{local.disk_note(self.root)}; last log lines: {self.log_tail()}")

    def _start_failed(self, error: BaseException) -> BaseException | None:
        """What ``start`` raises instead of ``error`` (None: ``error`` itself); the server is stopped after."""
        return None

    def _may_run(self) -> bool:
        """Whether anything of the server may be left to stop."""
        return self.data.exists()

    def _runs(self) -> bool:
        return self.server_pid() is not None

    # --- use ----------------------------------------------------------------------------------------------------

    def dsn(self, dbname: str | None = None) -> str:
        """The DSN of ``dbname`` as the sandbox's own login, with its password: redact it before showing it."""
        return self.login_dsn(dbname or self.default_db)

    def connector(self, dbname: str | None = None) -> Connector:
        """A connector to one of this server's databases that restarts this server when a change needs it."""
        return self._connector(self.dsn(dbname or self.default_db))

    def log_tail(self, lines: int = 5) -> str:
        """The server log's last lines, joined by `` | ``."""
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def tool(self, name: str) -> str:
        """Path of a client program matching this server."""
        return self.client_tool(name)

    # --- for benches and fault injection ------------------------------------------------------------------------

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """The DSN of ``dbname`` over TCP as ``user`` (default: the sandbox's own login, with its password unless
        another is given), in the engine's form (``dsn_form``)."""
        if user in (None, self.user) and password is None:
            password = self.password
        return self.dsn_form(self.host, self.port, dbname, user or self.user, password)

    def server_pid(self) -> int | None:
        """The server's leader process while it runs."""
        pid = read_pid(self.root / self.pid_path) if self.pid_path else None
        return pid if pid is not None and pid_alive(pid) else None

    def interrupt(self) -> int | None:
        """A fast shutdown (``interrupt_signal`` to the server's leader), not waited for; the process told."""
        pid = self.server_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, self.interrupt_signal)
        return pid

    # --- from a sandbox directory alone -------------------------------------------------------------------------

    @classmethod
    def stop_orphan(cls, root: Path, owner: dict) -> None:
        """Stop the server of a sandbox directory whose owner process is gone (``connectors.local.reap_orphans``
        removes the directory afterwards)."""
        if (root / "data").is_dir():
            cls._halt_orphan(root, owner)

    @classmethod
    def find_server(cls, root: Path) -> local.RunningServer | None:
        """The running server of sandbox directory ``root``: the leader of its pid file, its port, and a DSN of its
        default database as the sandbox's own login."""
        pid = read_pid(root / cls.pid_path) if cls.pid_path else None
        if pid is None or not pid_alive(pid):
            return None
        port = cls._port_of(root)
        if port is None:
            return None
        return local.RunningServer(cls.engine, root, root / "data", pid, port,
                                   cls.dsn_form("127.0.0.1", port, cls.default_db, cls.user, local.read_secret(root)))

    # --- the engine's hooks -------------------------------------------------------------------------------------

    @staticmethod
    def dsn_form(host: str, port: int, dbname: str, user: str, password: str | None = None) -> str:
        """A DSN in the engine's form, with ``password`` when given (values quoted as that form needs)."""
        raise NotImplementedError

    @staticmethod
    def client_tool(name: str) -> str:
        """Path of one of the engine's client programs."""
        raise NotImplementedError

    def _init(self) -> None:
        """A new data directory and the server's configuration."""
        raise NotImplementedError

    def _launch(self) -> None:
        """Start the server from its files."""
        raise NotImplementedError

    def _halt(self, graceful: bool = True) -> None:
        """Stop the server (cleanly, or with ``graceful=False`` at once) and wait until every process of it is
        gone, leaving it startable; SandboxError when they will not end."""
        raise NotImplementedError

    def _provision(self) -> None:
        """What a new server gets once it runs (logins, its default database, extensions)."""

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Block until the server accepts connections (SandboxError after ``timeout_s`` seconds)."""
        raise NotImplementedError

    def _write_overrides(self, settings: dict[str, str]) -> None:
        """Replace the persisted settings (read at the next start) with ``settings``."""
        raise NotImplementedError

    def _connector(self, dsn: str) -> Connector:
        raise NotImplementedError

    def create_database(self, dbname: str, template: str | None = None, extensions: bool = True) -> str:
        raise NotImplementedError

    def add_login(self, user: str, password: str) -> None:
        raise NotImplementedError

    @classmethod
    def _halt_orphan(cls, root: Path, owner: dict) -> None:
        """Stop the server of ``root`` whose owner is gone."""
        raise NotImplementedError

    @classmethod
    def _port_of(cls, root: Path) -> int | None:
        """The port the server of ``root`` listens on, from its files."""
        raise NotImplementedError


def register_engine(server: type[LocalServer]) -> None:
    """Register the engine of ``server`` with ``connectors.local``: how its orphans are stopped, how its running
    servers are found from their directories."""
    local.register_engine(server.engine, server.stop_orphan)
    local.register_server_finder(server.engine, server.find_server)
