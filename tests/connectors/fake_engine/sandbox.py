"""The fake engine's sandbox (``connectors.base.Sandbox``): a throwaway "server" that is a directory of SQLite
database files, on the lifecycle every engine's sandbox shares (``connectors.server.LocalServer``: its directory
with an owner record and a random password its DSNs carry, as a real sandbox's login has one; ``stop()`` removes
it; ``stop_orphan`` is what ``reap_orphans`` calls). Its hooks are a file's: no process to launch or halt, no
login to add, no port (its DSN names the database file)."""

from __future__ import annotations

import shutil
import sqlite3

from advisor.core.errors import AdvisorError, SandboxError
from connectors.server import LocalServer, register_engine

DEFAULT_DB = "main"


class FakeSandbox(LocalServer):
    engine = "fakesql"
    host = "localhost"
    user = "advisor"
    default_db = DEFAULT_DB
    log_name = "fakesql.log"  # none is written: ``log_tail`` says "(no log)"
    pid_path = None  # no process: ``server_pid`` and ``interrupt`` give None, ``find_server`` finds none

    def __init__(self, name: str = "sandbox", settings: dict[str, str] | None = None, keep: bool = False,
                 base_dir: str | None = None, **_options):
        super().__init__(name, dict(settings or {}), base_dir, keep)
        self.port = 0  # a file listens on no port

    @staticmethod
    def client_tool(name: str) -> str:
        raise AdvisorError(f"fakesql has no client program {name}")

    def _init(self) -> None:
        self.data.mkdir()

    def _launch(self) -> None:
        return None  # the files are there: nothing to run

    def _halt(self, graceful: bool = True) -> None:
        return None

    def _provision(self) -> None:
        self.create_database(DEFAULT_DB)

    def _runs(self) -> bool:
        return self.data.is_dir()

    def _write_overrides(self, settings: dict[str, str]) -> None:
        self.settings = dict(settings)

    @classmethod
    def _halt_orphan(cls, root, owner: dict) -> None:
        return None  # reap_orphans removes the files

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        if not self.is_running():
            raise SandboxError(f"sandbox {self.name} is not running")

    def _path(self, dbname: str):
        self.wait_ready()
        return self.data / f"{dbname}.sqlite"

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        secret = password if password is not None else (self.password if user in (None, self.user) else "")
        return f"sqlite://{user or self.user}{':' + secret if secret else ''}@localhost{self._path(dbname)}"

    def _connector(self, dsn: str):
        from tests.connectors.fake_engine.connector import FakeConnector

        return FakeConnector(dsn, restart=self.restart)

    def create_database(self, dbname: str, template: str | None = None, extensions: bool = True) -> str:
        path = self._path(dbname)
        if template:
            shutil.copyfile(self._path(template), path)
        sqlite3.connect(path).close()
        return self.dsn(dbname)

    def add_login(self, user: str, password: str) -> None:
        return None  # a file has no logins: its DSN's password stands in for one


stop_orphan = FakeSandbox.stop_orphan
register_engine(FakeSandbox)
