"""Cloning a MariaDB target into a shadow: a new ``MariaDBSandbox`` loaded with ``mariadb-dump`` (whole, in one
consistent snapshot with ``--single-transaction``; or, with ``sample_percent``, the schema plus a repeatable
random sample of the rows of large tables through ``--where``), carrying the target's tuning-relevant settings.
The target is only read. No password appears on a command line: the target's goes in a defaults-extra-file of
mode 0600 inside the shadow's directory (removed with it), the shadow's own in the loading client's environment.
A failed program's error is ``connectors.base.tool_error``.

Code above ``connectors`` calls ``connectors.factory.clone``, which comes here for a MariaDB connector.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from advisor.core.domain import KnobSpec
from advisor.core.errors import AdvisorError, SandboxError
from advisor.core.inputs import control_character
from advisor.core.progress import Say
from connectors.base import Shadow, tool_error
from connectors.mariadb.connection import TAG, parse_dsn
from connectors.mariadb.connector import MariaDBConnector
from connectors.mariadb.loading import client_command
from connectors.mariadb.sandbox import MariaDBSandbox

__all__ = ["copied_settings", "create_shadow", "option_value"]

COPIED_PREFIXES = ("innodb_", "sort_", "join_", "read_", "tmp_", "max_heap", "table_open", "table_definition",
                   "thread_cache", "optimizer_", "query_cache", "key_buffer", "aria_pagecache", "eq_range")
NEVER_COPIED = ("dir", "file", "path", "socket", "port", "log_group", "data_home", "undo_directory", "plugin")
DUMP_TIMEOUT_S = 3600.0


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


def _program(tool: str, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, **kwargs)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"{tool} did not end within {DUMP_TIMEOUT_S:.0f} s") from None
    if res.returncode != 0:
        said = tool_error(tool, res.stderr) or f"it exited with status {res.returncode} and said nothing"
        raise SandboxError(f"{tool} failed: {said}")
    return res


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
    _program("mariadb-dump", [*args, "--", *names])


def _load(sandbox: MariaDBSandbox, dbname: str, dump: Path) -> None:
    """The dump into the shadow's ``dbname`` with the ``mariadb`` client, as the shadow's own login (its password
    in the client's environment: ``connectors.mariadb.loading.client_command``)."""
    argv, env = client_command(sandbox.dsn(dbname), "mariadb", [])
    with open(dump, "rb") as f:
        _program("mariadb", argv, stdin=f, env=env)


def create_shadow(target: MariaDBConnector, *, sample_percent: float | None = None,
                  sample_min_rows: int = 100_000, extra_settings: dict[str, str] | None = None,
                  say: Say | None = None) -> Shadow:
    """A running shadow of ``target``'s database. ``sample_percent`` (0-100] keeps that share of the rows of
    tables with more than ``sample_min_rows`` rows (the same rows each time); foreign keys are not checked while
    loading, so a sample may break them."""
    say = say or (lambda _m: None)
    if sample_percent is not None and not 0 < sample_percent <= 100:
        raise AdvisorError(f"sample percent must be in (0, 100], got {sample_percent}")
    params = parse_dsn(target.dsn)
    dbname = params["database"]
    if not dbname:
        raise AdvisorError("a MariaDB target's DSN must name its database (mariadb://user@host:3306/database)")
    settings = copied_settings(target.knob_catalog())
    settings.update(extra_settings or {})
    say(f"starting shadow server ({len(settings)} settings copied from the target)")
    sandbox = MariaDBSandbox("shadow", settings=settings).start()
    try:
        sandbox.create_database(dbname)
        with tempfile.TemporaryDirectory(prefix="dump-", dir=sandbox.root) as tmp:
            credentials = _credentials(Path(tmp), params)
            dump = Path(tmp) / "target.sql"
            if sample_percent is None or sample_percent >= 100:
                say("copying the target's database (mariadb-dump | mariadb)")
                _dump(sandbox, credentials, params, dump, names=(dbname,))
                _load(sandbox, dbname, dump)
            else:
                say(f"copying the target's schema and a {sample_percent:g}% sample of large tables")
                _dump(sandbox, credentials, params, dump, "--no-data", names=(dbname,))
                _load(sandbox, dbname, dump)
                for (_db, table), rows in target.loader().table_rows().items():
                    where = [f"--where=RAND(42) < {sample_percent / 100:.6f}"] if rows > sample_min_rows else []
                    _dump(sandbox, credentials, params, dump, "--no-create-info", *where, names=(dbname, table))
                    _load(sandbox, dbname, dump)
        connector = MariaDBConnector(sandbox.dsn(dbname), restart=sandbox.restart, persist=sandbox.persist)
        say("analyzing the shadow (one statistics sample for baseline and candidate)")
        with connector.session() as session:
            for (_schema, table) in connector.table_columns():
                session.run(TAG + f"ANALYZE TABLE {connector.quote(dbname)}.{connector.quote(table)}")
        connector.reset_statement_stats()
        return Shadow(sandbox, connector, dbname, 0)
    except BaseException:
        sandbox.stop()
        raise
