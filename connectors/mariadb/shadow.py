"""Cloning a MariaDB target into a shadow: a new ``MariaDBSandbox`` loaded with ``mariadb-dump`` (whole, in one
consistent snapshot with ``--single-transaction``; or, with ``sample_percent``, the schema plus a repeatable
random sample of the rows of large tables through ``--where``), carrying the target's tuning-relevant settings.
The target is only read. No password appears on a command line: the target's goes in a defaults-extra-file of
mode 0600 inside the shadow's directory (removed with it), the shadow's own in the loading client's environment.
A failed program's error is ``connectors.base.tool_error``. Its skeleton is every engine's
(``connectors.shadowing.ShadowCopy``); ``MariaDBCopy`` fills in its hooks.

Code above ``connectors`` calls ``connectors.factory.clone``, which comes here for a MariaDB connector.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.domain import KnobSpec
from advisor.core.errors import AdvisorError
from advisor.core.inputs import control_character
from advisor.core.progress import Say
from connectors.base import Shadow
from connectors.mariadb.connection import TAG, parse_dsn
from connectors.mariadb.connector import MariaDBConnector
from connectors.mariadb.loading import client_command
from connectors.mariadb.sandbox import MariaDBSandbox
from connectors.shadowing import DUMP_TIMEOUT_S, ShadowCopy, run_program

__all__ = ["DUMP_TIMEOUT_S", "MariaDBCopy", "copied_settings", "create_shadow", "option_value"]

COPIED_PREFIXES = ("innodb_", "sort_", "join_", "read_", "tmp_", "max_heap", "table_open", "table_definition",
                   "thread_cache", "optimizer_", "query_cache", "key_buffer", "aria_pagecache", "eq_range")
NEVER_COPIED = ("dir", "file", "path", "socket", "port", "log_group", "data_home", "undo_directory", "plugin")


def copied_settings(catalog: dict[str, KnobSpec]) -> dict[str, str]:
    """The target's configured (not compiled-in) tuning settings, as option-file values.

    >>> copied_settings({"sort_buffer_size": KnobSpec("sort_buffer_size", "integer", "B", "4194304", "2097152",
    ...                                      None, None, source="configuration file"),
    ...                  "innodb_data_home_dir": KnobSpec("innodb_data_home_dir", "string", None, "/x", "",
    ...                                      None, None, source="configuration file")})
    {'sort_buffer_size': '4194304'}
    """
    return {s.name: s.setting for s in catalog.values()
            if s.source in ("configuration file", "command line") and s.name.startswith(COPIED_PREFIXES)
            and not any(w in s.name for w in NEVER_COPIED) and s.setting != ""}


def option_value(value: str) -> str:
    r"""``value`` as a value of a MariaDB option file, by the client library's own rules (``my_load_defaults``):
    in double quotes, where ``#`` and ``'`` are plain characters, with ``\`` and ``"`` escaped as ``\\`` and
    ``\"``. A control character cannot be written so that it stays on its line: ValueError (DSN parsing refused
    it already, ``connectors.text.check_dsn_parts``).

    >>> print(option_value('dba"#x'), option_value("a\\b'c"), option_value(""))
    "dba\"#x" "a\\b'c" ""
    """
    if control_character(value):
        raise ValueError("an option file value cannot hold a control character")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _credentials(directory: Path, params: dict) -> Path:
    """A defaults-extra-file (mode 0600) with the target's login, so that no password is on a command line; each
    value quoted by ``option_value``, so that none can end its line or start a comment."""
    path = directory / "client.cnf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"[client]\nuser={option_value(str(params['user']))}\n"
                f"password={option_value(str(params.get('password', '')))}\n")
    return path


def _dump(sandbox: MariaDBSandbox, credentials: Path, params: dict, out: Path, *extra: str, names: tuple[str, ...]
          ) -> None:
    """mariadb-dump of ``names`` (the database, then tables of it) with the ``extra`` options; the names come
    after ``--``, so that one starting with a dash is never read as an option."""
    args = [sandbox.tool("mariadb-dump"), f"--defaults-extra-file={credentials}", "-h", params["host"],
            "-P", str(params["port"]), "--single-transaction", "--skip-lock-tables", "--no-tablespaces",
            f"--result-file={out}", *extra]
    if params.get("unix_socket"):
        args += ["--socket", params["unix_socket"]]
    else:  # the host named "localhost" means the default socket to the client programs: TCP, as the driver does
        args += ["--protocol=TCP"]
    run_program("mariadb-dump", [*args, "--", *names])


def _load(sandbox: MariaDBSandbox, dbname: str, dump: Path) -> None:
    """The dump into the shadow's ``dbname`` with the ``mariadb`` client, as the shadow's own login (its password
    in the client's environment: ``connectors.mariadb.loading.client_command``)."""
    argv, env = client_command(sandbox.dsn(dbname), "mariadb", [])
    with open(dump, "rb") as f:
        run_program("mariadb", argv, stdin=f, env=env)


class MariaDBCopy(ShadowCopy):
    """A shadow by mariadb-dump | mariadb; a sample's rows chosen by ``--where`` (``connectors.shadowing``)."""

    sandbox_class = MariaDBSandbox
    copy_tools = "mariadb-dump | mariadb"
    parse_dsn = staticmethod(parse_dsn)

    def database(self) -> str:
        if not self.params["database"]:
            raise AdvisorError("a MariaDB target's DSN must name its database (mariadb://user@host:3306/database)")
        return self.params["database"]

    def copied_settings(self, catalog: dict[str, KnobSpec]) -> dict[str, str]:
        return copied_settings(catalog)

    def prepare(self) -> None:
        self.sandbox.create_database(self.dbname)

    def copy_whole(self, tmp: Path) -> int:
        credentials, dump = _credentials(tmp, self.params), tmp / "target.sql"
        _dump(self.sandbox, credentials, self.params, dump, names=(self.dbname,))
        _load(self.sandbox, self.dbname, dump)
        return 0

    def copy_sample(self, tmp: Path, percent: float, min_rows: int) -> int:
        """Foreign keys are not checked while loading, so a sample may break them (not counted)."""
        credentials, dump = _credentials(tmp, self.params), tmp / "target.sql"
        _dump(self.sandbox, credentials, self.params, dump, "--no-data", names=(self.dbname,))
        _load(self.sandbox, self.dbname, dump)
        for (_db, table), rows in self.target.loader().table_rows().items():
            where = [f"--where=RAND(42) < {percent / 100:.6f}"] if rows > min_rows else []
            _dump(self.sandbox, credentials, self.params, dump, "--no-create-info", *where, names=(self.dbname, table))
            _load(self.sandbox, self.dbname, dump)
        return 0

    def finish(self, whole: bool, warnings: int) -> Shadow:
        sandbox, dbname = self.sandbox, self.dbname
        connector = MariaDBConnector(sandbox.dsn(dbname), restart=sandbox.restart, persist=sandbox.persist)
        self.say("analyzing the shadow (one statistics sample for baseline and candidate)")
        with connector.session() as session:
            for (_schema, table) in connector.table_columns():
                session.run(TAG + f"ANALYZE TABLE {connector.quote(dbname)}.{connector.quote(table)}")
        connector.reset_statement_stats()
        return Shadow(sandbox, connector, dbname, warnings)


def create_shadow(target: MariaDBConnector, *, sample_percent: float | None = None,
                  sample_min_rows: int = 100_000, extra_settings: dict[str, str] | None = None,
                  say: Say | None = None) -> Shadow:
    """A running shadow of ``target``'s database. ``sample_percent`` (0-100] keeps that share of the rows of
    tables with more than ``sample_min_rows`` rows (the same rows each time); foreign keys are not checked while
    loading, so a sample may break them."""
    return MariaDBCopy.create(target, sample_percent=sample_percent, sample_min_rows=sample_min_rows,
                              extra_settings=extra_settings, say=say)
