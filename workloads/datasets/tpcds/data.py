"""Generating TPC-DS data offline with tpcgen-cli and loading a subset of its tables through the connector (COPY
on PostgreSQL); the DDL is written in ``SOURCE_DIALECT`` and transpiled to the connector's dialect."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from advisor.core.errors import AdvisorError
from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.datasets.sqlsource import all_to_dialect, identifier
from workloads.datasets.tpcds.schema import DDL, DEFAULT_TABLES, FOREIGN_KEYS, PRIMARY_KEYS, SOURCE_DIALECT, TABLES
SCALE = 0.3  # the benches' default: store_sales 841k rows, catalog_sales 450k, web_sales 216k
MIN_SCALE = 0.01  # tpcgen-cli gives the same rows at any scale below this (store_sales 120k rows)


def _generator() -> str:
    beside = Path(sys.executable).with_name("tpcgen-cli")
    found = str(beside) if beside.exists() else shutil.which("tpcgen-cli")
    if not found:
        raise AdvisorError("tpcgen-cli is not installed: run `make bootstrap` (it comes with the Python dependencies)")
    return found


def generate(scale: float, out_dir: Path, tables: Sequence[str] = DEFAULT_TABLES) -> Path:
    """One CSV file per table in ``out_dir`` (``<table>.csv``, a header line, comma-separated, an empty unquoted
    field for NULL), generated offline; the same scale gives the same rows."""
    try:
        subprocess.run([_generator(), "tpcds", "csv", "-s", str(scale), "-o", str(out_dir), "--overwrite", "-q",
                        "-T", ",".join(tables)], check=True, capture_output=True, text=True, timeout=3600)
    except subprocess.CalledProcessError as e:
        raise AdvisorError(f"tpcgen-cli failed at scale {scale}: {(e.stderr or '').strip()[:200]}") from None
    return out_dir


def _check(tables: Sequence[str]) -> tuple[str, ...]:
    unknown = [t for t in tables if t not in DDL]
    if unknown:
        raise AdvisorError(f"unknown TPC-DS table(s) {', '.join(unknown)}: expected some of {', '.join(TABLES)}")
    return tuple(t for t in TABLES if t in tables)  # dimensions before facts


def load(target: Connector, scale: float = SCALE, tables: Sequence[str] = DEFAULT_TABLES,
         foreign_keys: bool = True, progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Create ``tables`` (a subset of ``TABLES``) in the database at ``target`` (its connector), load them
    at ``scale`` (at least ``MIN_SCALE`` in effect), add their primary keys and, with ``foreign_keys``, every
    foreign key of ``FOREIGN_KEYS`` between two loaded tables; then analyze. Returns the row count of each table."""
    say = progress or (lambda _msg: None)
    chosen = _check(tables)
    loaded = set(chosen)
    connector = loader_connector(target)

    def run(*statements: str) -> None:
        connector.loader().run_script(all_to_dialect(statements, SOURCE_DIALECT, connector.dialect))

    with tempfile.TemporaryDirectory(prefix="advisor-tpcds-") as tmp:
        say(f"generating TPC-DS data at scale {scale} ({len(chosen)} tables)")
        generate(scale, Path(tmp), chosen)
        counts: dict[str, int] = {}
        for table in chosen:
            say(f"loading {table}")
            run(f"CREATE TABLE {identifier(table)} ({DDL[table]})")
            counts[table] = connector.loader().load_rows(table, None, Path(tmp) / f"{table}.csv")
            run(f"ALTER TABLE {identifier(table)} ADD PRIMARY KEY ({', '.join(map(identifier, PRIMARY_KEYS[table]))})")
        if foreign_keys:
            say("adding foreign keys")
            run(*(f"ALTER TABLE {identifier(table)} ADD FOREIGN KEY ({identifier(column)}) "
                  f"REFERENCES {identifier(ref)} ({identifier(PRIMARY_KEYS[ref][0])})"
                  for table, column, ref in FOREIGN_KEYS if table in loaded and ref in loaded))
    say("analyzing")
    connector.loader().analyze()
    return counts
