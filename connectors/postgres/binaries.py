"""Where the installed PostgreSQL programs are: ``pg_bin_dir`` (server and client programs of the newest installed
server), used by the sandbox (initdb, pg_ctl) and by the connector's client programs (pgbench, psql)."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.errors import SandboxError

PG_BIN_CANDIDATES = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")


def pg_bin_dir() -> Path:
    """The directory holding initdb/pg_ctl/pg_dump of the newest installed server (env ADVISOR_PG_BIN wins)."""
    env = os.environ.get("ADVISOR_PG_BIN")
    for candidate in ([env] if env else []) + list(PG_BIN_CANDIDATES):
        if candidate and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise SandboxError(
        "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin); "
        "install them with `make bootstrap` or apt-get install postgresql postgresql-15-hypopg postgresql-15-pg-qualstats"
    )
