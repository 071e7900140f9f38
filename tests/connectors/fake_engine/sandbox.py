"""The fake engine's sandbox (``connectors.base.Sandbox``): a throwaway "server" that is a directory of SQLite
database files under the system's temporary directory, with a random password its DSNs carry (as a real
sandbox's login has one); ``stop()`` removes the directory. ``stop_orphan`` is what ``reap_orphans`` would call."""

from __future__ import annotations

import secrets
import shutil
import sqlite3
import tempfile
from pathlib import Path

from advisor.core.errors import AdvisorError, SandboxError

DEFAULT_DB = "main"


class FakeSandbox:
    engine = "fakesql"
    host = "localhost"
    port = 0
    user = "advisor"
    default_db = DEFAULT_DB

    def __init__(self, name: str = "sandbox", settings: dict[str, str] | None = None, keep: bool = False,
                 base_dir: str | None = None, **_options):
        self.name, self.settings, self.keep, self.base_dir = name, dict(settings or {}), keep, base_dir
        self.password = secrets.token_urlsafe(12)
        self.root: Path | None = None

    @staticmethod
    def client_tool(name: str) -> str:
        raise AdvisorError(f"fakesql has no client program {name}")

    def start(self) -> FakeSandbox:
        self.root = Path(tempfile.mkdtemp(prefix=f"fakesql-{self.name}-", dir=self.base_dir))
        self.create_database(DEFAULT_DB)
        return self

    def stop(self) -> None:
        if self.root is not None and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> FakeSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def restart(self) -> None:
        self.wait_ready()

    def recover(self, settings: dict[str, str]) -> None:
        self.settings = dict(settings)

    def is_running(self) -> bool:
        return self.root is not None and self.root.is_dir()

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        if not self.is_running():
            raise SandboxError(f"sandbox {self.name} is not running")

    def _path(self, dbname: str) -> Path:
        self.wait_ready()
        return self.root / f"{dbname}.sqlite"

    def login_dsn(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        secret = password if password is not None else (self.password if user in (None, self.user) else "")
        return f"sqlite://{user or self.user}{':' + secret if secret else ''}@localhost{self._path(dbname)}"

    def dsn(self, dbname: str = DEFAULT_DB) -> str:
        return self.login_dsn(dbname)

    def connector(self, dbname: str = DEFAULT_DB):
        from tests.connectors.fake_engine.connector import FakeConnector

        return FakeConnector(self.dsn(dbname), restart=self.restart)

    def create_database(self, dbname: str, template: str | None = None, extensions: bool = True) -> str:
        path = self._path(dbname)
        if template:
            shutil.copyfile(self._path(template), path)
        sqlite3.connect(path).close()
        return self.dsn(dbname)

    def add_login(self, user: str, password: str) -> None:
        return None  # a file has no logins: its DSN's password stands in for one

    def log_tail(self, lines: int = 5) -> str:
        return ""

    def server_pid(self) -> int | None:
        return None

    def interrupt(self) -> int | None:
        return None


def stop_orphan(root: Path, record: dict) -> None:
    shutil.rmtree(root, ignore_errors=True)
