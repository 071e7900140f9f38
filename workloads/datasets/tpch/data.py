"""Generating TPC-H data offline with tpchgen-cli and loading it through the connector (COPY on PostgreSQL).

The schema is written in ``SOURCE_DIALECT`` and transpiled to the connector's dialect where it runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from advisor.core.errors import AdvisorError
from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.datasets.sqlsource import all_to_dialect, script
from workloads.datasets.tpch.schema import DDL, PRIMARY_KEYS, SOURCE_DIALECT, TABLES


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


def load(target: Connector, scale: float = 0.01,
         progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Create the TPC-H tables in the database at ``target`` (its connector), load data at ``scale``, add
    keys, ANALYZE.

    Returns the row count of each table.
    """
    say = progress or (lambda _msg: None)
    connector = loader_connector(target)
    with tempfile.TemporaryDirectory(prefix="advisor-tpch-") as tmp:
        say(f"generating TPC-H data at scale {scale}")
        generate(scale, Path(tmp))
        counts: dict[str, int] = {}
        connector.loader().run_script(all_to_dialect(script(DDL), SOURCE_DIALECT, connector.dialect))
        for table in TABLES:
            say(f"loading {table}")
            counts[table] = connector.loader().load_rows(table, None, Path(tmp) / f"{table}.csv")
        connector.loader().run_script(all_to_dialect(script(PRIMARY_KEYS), SOURCE_DIALECT, connector.dialect))
    say("analyzing")
    connector.loader().analyze()
    return counts
