"""Cloning a PostgreSQL target into a shadow: a local sandbox loaded with pg_dump/pg_restore (or, with
``sample_percent``, with the schema restored and the large tables copied as a TABLESAMPLE), carrying the target's
tuning-relevant settings. The target is only read. Statistics are gathered once on the shadow (VACUUM ANALYZE),
so baseline and candidate share one sample; a full copy then takes the target's own column statistics
(``connectors.postgres.statistics``), so that it plans as the target does.

Code above ``connectors`` calls ``connectors.factory.clone``, which comes here for a PostgreSQL connector.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from advisor.core.domain import KnobSpec
from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.progress import Say
from connectors import deadlines
from connectors.base import Shadow, tool_error
from connectors.postgres.connection import TAG, parse_dsn
from connectors.postgres import statistics
from connectors.postgres.connector import PostgresConnector
from connectors.postgres.sandbox import PostgresSandbox

__all__ = ["COPIED_CATEGORIES", "NEVER_COPIED", "Shadow", "copied_settings", "create_shadow"]

# settings copied from the target to the shadow: the tuning-relevant categories, never paths or networking
COPIED_CATEGORIES = ("Resource Usage", "Query Tuning", "Write-Ahead Log", "Autovacuum", "Statistics / Planner")
NEVER_COPIED = frozenset({"shared_preload_libraries", "huge_pages", "dynamic_shared_memory_type", "archive_command",
                          "archive_mode", "restore_command", "wal_level", "max_wal_senders", "max_replication_slots",
                          "port", "listen_addresses", "unix_socket_directories", "data_directory"})


def copied_settings(catalog: dict[str, KnobSpec]) -> dict[str, str]:
    """The target's non-default, tuning-relevant settings, as postgresql.conf values (in each knob's unit)."""
    out: dict[str, str] = {}
    for spec in catalog.values():
        if spec.source != "configuration file" or spec.name in NEVER_COPIED:
            continue
        if any(w in spec.name for w in ("directory", "file", "path", "command")):
            continue
        if spec.category.startswith(COPIED_CATEGORIES):
            out[spec.name] = spec.setting
    return out


def _tool_env(params: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    if "password" in params:
        env["PGPASSWORD"] = params["password"]
    return env


DUMP_TIMEOUT_S = 3600.0  # pg_dump of the target, or pg_restore into the shadow, gives up after this long


def _dump(sandbox: PostgresSandbox, params: dict[str, str], out: Path, *extra: str) -> None:
    conninfo = make_conninfo(**{k: v for k, v in params.items() if k != "password"})
    try:
        subprocess.run([sandbox.tool("pg_dump"), "-Fc", "-d", conninfo, "-f", str(out), *extra], check=True,
                       capture_output=True, text=True, env=_tool_env(params), timeout=DUMP_TIMEOUT_S)
    except subprocess.CalledProcessError as e:
        raise SandboxError(f"pg_dump of the target failed: {_said('pg_dump', e.stderr, e.returncode)}") from None
    except subprocess.TimeoutExpired:
        raise SandboxError(f"pg_dump of the target did not end within {DUMP_TIMEOUT_S:.0f} s") from None


def _restore(sandbox: PostgresSandbox, dbname: str, dump: Path, *extra: str, strict: bool = True) -> int:
    """Restore into the shadow; returns the number of errors ignored (0 when ``strict``)."""
    args = [sandbox.tool("pg_restore"), "--no-owner", "--no-privileges", "-h", sandbox.host, "-p", str(sandbox.port),
            "-U", sandbox.user, "-d", dbname, *extra, str(dump)]
    if strict:
        args.insert(1, "--exit-on-error")
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S,
                             env=_tool_env(parse_dsn(sandbox.dsn(dbname))))  # the shadow's password (issue 42)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"pg_restore into the shadow did not end within {DUMP_TIMEOUT_S:.0f} s") from None
    if res.returncode != 0:
        if strict:
            raise SandboxError(f"pg_restore into the shadow failed: {_said('pg_restore', res.stderr, res.returncode)}")
        return sum(ln.startswith("pg_restore: error:") for ln in res.stderr.splitlines())
    return 0


def _said(tool: str, stderr: str | None, returncode: int) -> str:
    """What a failed client program said went wrong (``connectors.base.tool_error``: its own error lines, not the
    SQL it echoes), or its exit status when it said nothing."""
    return tool_error(tool, stderr) or f"it exited with status {returncode} and said nothing"


def create_shadow(target: PostgresConnector, *, sample_percent: float | None = None, sample_min_rows: int = 100_000,
                  extra_settings: dict[str, str] | None = None, say: Say | None = None) -> Shadow:
    """A running shadow of ``target``'s database. ``sample_percent`` (0-100] samples tables with more than
    ``sample_min_rows`` rows; constraints the sample breaks (foreign keys) are counted in ``restore_warnings``."""
    say = say or (lambda _m: None)
    if sample_percent is not None and not 0 < sample_percent <= 100:
        raise AdvisorError(f"sample percent must be in (0, 100], got {sample_percent}")
    params = parse_dsn(target.dsn)
    dbname = params.get("dbname") or params.get("user") or "postgres"
    settings = copied_settings(target.knob_catalog())
    settings.update(extra_settings or {})
    say(f"starting shadow server ({len(settings)} settings copied from the target)")
    sandbox = PostgresSandbox("shadow", settings=settings).start()
    try:
        shadow_dsn = sandbox.create_database(dbname, extensions=False) if dbname != "postgres" else sandbox.dsn()
        warnings = 0
        # the dump (a copy of the target's data) lives in the sandbox's directory, so that it goes with the
        # sandbox, also when reap_orphans removes the sandbox of a killed advisor
        with tempfile.TemporaryDirectory(prefix="dump-", dir=sandbox.root) as tmp:
            dump = Path(tmp) / "target.dump"
            if sample_percent is None or sample_percent >= 100:
                say("copying the target's database (pg_dump | pg_restore)")
                _dump(sandbox, params, dump)
                _restore(sandbox, dbname, dump, "-j", "2")
            else:
                say(f"copying the target's schema and a {sample_percent:g}% sample of large tables")
                _dump(sandbox, params, dump, "--section=pre-data", "--section=post-data")
                _restore(sandbox, dbname, dump, "--section=pre-data")
                _copy_data(target, shadow_dsn, sample_percent, sample_min_rows)
                warnings = _restore(sandbox, dbname, dump, "--section=post-data", strict=False)
        sandbox.create_extensions(dbname)
        connector = PostgresConnector(shadow_dsn, restart=sandbox.restart)
        with connector.connect(answer_s=deadlines.long_s()) as conn:  # VACUUM ANALYZE of a large copy
            say("analyzing the shadow (one statistics sample for baseline and candidate)")
            conn.execute(TAG + "VACUUM ANALYZE")
            conn.execute(TAG + "SELECT pg_stat_statements_reset()")
            if sample_percent is None or sample_percent >= 100:  # a full copy: the target's statistics describe it
                _take_statistics(target, conn, say)
        return Shadow(sandbox, connector, dbname, warnings)
    except BaseException:
        sandbox.stop()
        raise


def _take_statistics(target: PostgresConnector, shadow: psycopg.Connection, say: Say) -> None:
    """The target's column statistics into the shadow (``connectors.postgres.statistics``), so that it plans as
    the target does; where they cannot be read, the shadow keeps its own sample."""
    try:
        with target.connect() as conn:
            done = statistics.transplant(conn, shadow)
    except psycopg.Error as e:
        say(f"kept the shadow's own statistics: the target's could not be copied ({type(e).__name__})")
        return
    say(f"copied the target's statistics of {done.copied} column(s), so the shadow plans as the target does"
        + (f" ({done.kept} kept the shadow's own sample)" if done.kept else ""))


def _copy_data(target: PostgresConnector, shadow_dsn: str, percent: float, min_rows: int) -> None:
    shadow = PostgresConnector(shadow_dsn)
    with target.connect(answer_s=deadlines.long_s()) as src, shadow.connect(answer_s=deadlines.long_s()) as dst:
        tables = src.execute(TAG + """
            SELECT n.nspname, c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
              AND n.nspname NOT LIKE 'pg_toast%' AND NOT EXISTS (
                SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')""").fetchall()
        for schema, table, reltuples in tables:
            name = sql.Identifier(schema, table)
            source = sql.SQL("SELECT * FROM {}").format(name)
            if reltuples > min_rows:
                source = sql.SQL("SELECT * FROM {} TABLESAMPLE BERNOULLI ({}) REPEATABLE (42)").format(
                    name, sql.Literal(percent))
            with src.cursor().copy(sql.SQL("COPY ({}) TO STDOUT (FORMAT binary)").format(source)) as out, \
                    dst.cursor().copy(sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(name)) as into:
                for chunk in out:
                    into.write(chunk)
