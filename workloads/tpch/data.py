"""Generating TPC-H data offline with tpchgen-cli and loading it with COPY."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from psycopg import sql

from advisor.core.errors import AdvisorError
from connectors import factory
from workloads.tpch.schema import DDL, PRIMARY_KEYS, TABLES

COPY_CHUNK = 1 << 20


def _generator() -> str:
    beside = Path(sys.executable).with_name("tpchgen-cli")
    found = str(beside) if beside.exists() else shutil.which("tpchgen-cli")
    if not found:
        raise AdvisorError("tpchgen-cli is not installed: run `make bootstrap` (it comes with the Python dependencies)")
    return found


def generate(scale: float, out_dir: Path) -> Path:
    """CSV files with a header line, one per table, in ``out_dir``."""
    try:
        subprocess.run([_generator(), "csv", "-s", str(scale), "-o", str(out_dir), "--overwrite"], check=True,
                       capture_output=True, text=True, timeout=3600)
    except subprocess.CalledProcessError as e:
        raise AdvisorError(f"tpchgen-cli failed at scale {scale}: {(e.stderr or '').strip()[:200]}") from None
    return out_dir


def load(dsn: str, scale: float = 0.01, progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Create the TPC-H tables in the database at ``dsn``, load data at ``scale``, add keys, ANALYZE.

    Returns the row count of each table.
    """
    say = progress or (lambda _msg: None)
    with tempfile.TemporaryDirectory(prefix="advisor-tpch-") as tmp:
        say(f"generating TPC-H data at scale {scale}")
        generate(scale, Path(tmp))
        counts: dict[str, int] = {}
        with factory.connect(dsn, autocommit=False) as conn:
            conn.execute(DDL)
            for table in TABLES:
                say(f"loading {table}")
                copy = sql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER true)").format(sql.Identifier(table))
                with conn.cursor() as cur, cur.copy(copy) as cp, open(Path(tmp) / f"{table}.csv", "rb") as f:
                    while chunk := f.read(COPY_CHUNK):
                        cp.write(chunk)
            conn.execute(PRIMARY_KEYS)
            for table in TABLES:
                counts[table] = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
            conn.commit()
        with factory.connect(dsn) as conn:
            say("analyzing")
            conn.execute("VACUUM ANALYZE")
    return counts
