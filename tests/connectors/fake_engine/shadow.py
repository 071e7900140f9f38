"""Shadow cloning of the fake engine (``connectors.factory.clone``) on every engine's skeleton
(``connectors.shadowing.ShadowCopy``): the target's database file copied into a new sandbox through SQLite's online
backup (the target is only read); a file has no settings to carry over, and a sample is the whole file."""

from __future__ import annotations

from pathlib import Path

from connectors.base import Shadow
from connectors.shadowing import ShadowCopy
from tests.connectors.fake_engine.connection import connect, parse_dsn
from tests.connectors.fake_engine.sandbox import FakeSandbox


class FakeCopy(ShadowCopy):
    sandbox_class = FakeSandbox
    copy_tools = "sqlite backup"
    parse_dsn = staticmethod(parse_dsn)

    def database(self) -> str:
        return "shadow"

    def copied_settings(self, catalog) -> dict[str, str]:
        return {}

    def prepare(self) -> None:
        self.sandbox.create_database(self.dbname)

    def copy_whole(self, tmp: Path) -> int:
        with connect(self.target.dsn) as source, connect(self.sandbox.dsn(self.dbname)) as copy:
            source.backup(copy)
        return 0

    def copy_sample(self, tmp: Path, percent: float, min_rows: int) -> int:
        return self.copy_whole(tmp)

    def finish(self, whole: bool, warnings: int) -> Shadow:
        return Shadow(self.sandbox, self.sandbox.connector(self.dbname), self.dbname, warnings)


create_shadow = FakeCopy.create
