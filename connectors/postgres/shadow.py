"""Cloning a PostgreSQL target into a shadow: a local sandbox loaded with pg_dump/pg_restore (or, with
``sample_percent``, with the schema restored and the large tables copied as a TABLESAMPLE), carrying the target's
tuning-relevant settings. The target is only read. Statistics are gathered once on the shadow (VACUUM ANALYZE),
so baseline and candidate share one sample; a full copy then takes the target's own column statistics
(``connectors.postgres.statistics``), so that it plans as the target does.

Its skeleton is every engine's (``connectors.shadowing.ShadowCopy``); ``PostgresCopy`` fills in its hooks. Code above
``connectors`` calls ``connectors.factory.clone``, which comes here for a PostgreSQL connector.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from advisor.core.domain import KnobSpec
from advisor.core.progress import Say
from connectors import deadlines
from connectors.base import Shadow
from connectors.postgres.connection import TAG, parse_dsn
from connectors.postgres import statistics
from connectors.postgres.connector import PostgresConnector
from connectors.postgres.sandbox import PostgresSandbox
from connectors.shadowing import ShadowCopy, run_program

__all__ = ["COPIED_CATEGORIES", "NEVER_COPIED", "PostgresCopy", "Shadow", "copied_settings", "create_shadow"]

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


def _dump(sandbox: PostgresSandbox, params: dict[str, str], out: Path, *extra: str) -> None:
    conninfo = make_conninfo(**{k: v for k, v in params.items() if k != "password"})
    run_program("pg_dump", [sandbox.tool("pg_dump"), "-Fc", "-d", conninfo, "-f", str(out), *extra],
                "pg_dump of the target", env=_tool_env(params))


def _restore(sandbox: PostgresSandbox, dbname: str, dump: Path, *extra: str, strict: bool = True) -> int:
    """Restore into the shadow; returns the number of errors ignored (0 when ``strict``)."""
    args = [sandbox.tool("pg_restore"), "--no-owner", "--no-privileges", "-h", sandbox.host, "-p", str(sandbox.port),
            "-U", sandbox.user, "-d", dbname, *extra, str(dump)]
    if strict:
        args.insert(1, "--exit-on-error")
    res = run_program("pg_restore", args, "pg_restore into the shadow", check=strict,
                      env=_tool_env(parse_dsn(sandbox.dsn(dbname))))  # the shadow's password (issue 42)
    if res.returncode != 0:
        return sum(ln.startswith("pg_restore: error:") for ln in res.stderr.splitlines())
    return 0


class PostgresCopy(ShadowCopy):
    """A shadow by pg_dump | pg_restore; a sample's rows copied as a TABLESAMPLE (``connectors.shadowing``)."""

    sandbox_class = PostgresSandbox
    copy_tools = "pg_dump | pg_restore"
    parse_dsn = staticmethod(parse_dsn)

    def database(self) -> str:
        return self.params.get("dbname") or self.params.get("user") or "postgres"

    def copied_settings(self, catalog: dict[str, KnobSpec]) -> dict[str, str]:
        return copied_settings(catalog)

    def prepare(self) -> None:
        sandbox = self.sandbox
        self.shadow_dsn = (sandbox.create_database(self.dbname, extensions=False) if self.dbname != "postgres"
                           else sandbox.dsn())

    def copy_whole(self, tmp: Path) -> int:
        dump = tmp / "target.dump"
        _dump(self.sandbox, self.params, dump)
        return _restore(self.sandbox, self.dbname, dump, "-j", "2")

    def copy_sample(self, tmp: Path, percent: float, min_rows: int) -> int:
        dump = tmp / "target.dump"
        _dump(self.sandbox, self.params, dump, "--section=pre-data", "--section=post-data")
        _restore(self.sandbox, self.dbname, dump, "--section=pre-data")
        _copy_data(self.target, self.shadow_dsn, percent, min_rows)
        return _restore(self.sandbox, self.dbname, dump, "--section=post-data", strict=False)

    def finish(self, whole: bool, warnings: int) -> Shadow:
        self.sandbox.create_extensions(self.dbname)
        connector = PostgresConnector(self.shadow_dsn, restart=self.sandbox.restart)
        with connector.connect(answer_s=deadlines.long_s()) as conn:  # VACUUM ANALYZE of a large copy
            self.say("analyzing the shadow (one statistics sample for baseline and candidate)")
            conn.execute(TAG + "VACUUM ANALYZE")
            conn.execute(TAG + "SELECT pg_stat_statements_reset()")
            if whole:  # a full copy: the target's statistics describe it
                _take_statistics(self.target, conn, self.say)
        return Shadow(self.sandbox, connector, self.dbname, warnings)


def create_shadow(target: PostgresConnector, *, sample_percent: float | None = None, sample_min_rows: int = 100_000,
                  extra_settings: dict[str, str] | None = None, say: Say | None = None) -> Shadow:
    """A running shadow of ``target``'s database. ``sample_percent`` (0-100] samples tables with more than
    ``sample_min_rows`` rows; constraints the sample breaks (foreign keys) are counted in ``restore_warnings``."""
    return PostgresCopy.create(target, sample_percent=sample_percent, sample_min_rows=sample_min_rows,
                               extra_settings=extra_settings, say=say)


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
