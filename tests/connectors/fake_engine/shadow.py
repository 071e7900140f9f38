"""Shadow cloning of the fake engine (``connectors.factory.clone``): the target's database file copied into a new
sandbox through SQLite's online backup (the target is only read)."""

from __future__ import annotations

import sqlite3

from connectors.base import Shadow
from tests.connectors.fake_engine.connection import connect
from tests.connectors.fake_engine.sandbox import FakeSandbox


def create_shadow(target, *, sample_percent=None, sample_min_rows=100_000, extra_settings=None, say=None) -> Shadow:
    sandbox = FakeSandbox("shadow", settings=extra_settings).start()
    try:
        if say:
            say("copying the target's database (sqlite backup)")
        dbname = "shadow"
        dsn = sandbox.create_database(dbname)
        with connect(target.dsn) as source, connect(dsn) as copy:
            source.backup(copy)
        return Shadow(sandbox, sandbox.connector(dbname), dbname)
    except (sqlite3.Error, OSError):
        sandbox.stop()
        raise
