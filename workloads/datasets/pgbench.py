"""The write-heavy benchmark workload: PostgreSQL's own pgbench (its built-in TPC-B-like scripts).

pgbench gets the connection from the connector (``Connector.loader().client_command``): host, port, user and database on its
command line, every other parameter (the password included) through its environment, so no secret is on a command
line; a database whose engine has no pgbench is refused there.

Between trials, ``restore()`` brings the data back near its initial state: it empties ``pgbench_history`` (the
only table that grows) and vacuums the tables, so that every trial starts without the previous one's dead rows.
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass

from advisor.core.errors import AdvisorError, BadStatement
from connectors import factory
from connectors.base import Connector

BUILTINS = ("tpcb-like", "simple-update", "select-only")
TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")
INIT_TIMEOUT_S = 300.0
INIT_TIMEOUT_PER_SCALE_S = 30.0
RUN_GRACE_S = 60.0

_TPS = re.compile(r"^tps = ([0-9.]+)", re.M)
_LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.M)
_TRANSACTIONS = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)


@dataclass(frozen=True)
class PgbenchOptions:
    scale: int = 10  # pgbench -i -s: 100,000 pgbench_accounts rows per unit
    clients: int = 8  # -c
    jobs: int = 2  # -j, worker threads of pgbench itself
    duration_s: float = 10.0  # -T, rounded up to whole seconds
    builtin: str = "tpcb-like"  # -b: tpcb-like | simple-update | select-only


@dataclass(frozen=True)
class PgbenchResult:
    tps: float  # transactions per second, without the initial connection time
    latency_ms: float  # average transaction latency
    transactions: int  # transactions actually processed
    failed: int  # failed transactions (serialization or deadlock failures)


def command(dsn: str, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command line that runs pgbench with ``args`` against ``dsn``, and the environment to run it in (the
    connection's secrets are there, never on the command line): for callers that run pgbench themselves, e.g. to
    read its ``--progress`` lines as they come."""
    return factory.connector(dsn).loader().client_command("pgbench", args)


def _failure_reason(stderr: str) -> str:
    """pgbench's last stderr line, with its first error line in front when that is another line."""
    lines = [ln.strip().removeprefix("pgbench: ") for ln in (stderr or "").splitlines() if ln.strip()]
    if not lines:
        return "no error output"
    last = lines[-1]
    first_error = next((ln for ln in lines if ln.startswith("error:") or "ERROR:" in ln or "FATAL:" in ln), last)
    first_error, last = (ln.removeprefix("error: ") for ln in (first_error, last))
    return last if first_error == last else f"{first_error}; {last}"


def _pgbench(what: str, args: list[str], dsn: str, timeout_s: float) -> str:
    argv, env = command(dsn, args)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise AdvisorError(f"pgbench {what} did not finish within {timeout_s:.0f} s") from None
    except OSError as e:
        raise AdvisorError(f"cannot run pgbench: {e}") from None
    if done.returncode != 0:
        raise AdvisorError(f"pgbench {what} failed (exit {done.returncode}): {_failure_reason(done.stderr)}")
    return done.stdout


def initialize(dsn: str, scale: int) -> None:
    """Create and fill the pgbench tables at ``scale`` (``pgbench -i -q``), replacing any there are."""
    if scale < 1:
        raise AdvisorError(f"pgbench scale must be at least 1, not {scale}")
    _pgbench("initialization", ["--initialize", "--quiet", "--scale", str(scale)], dsn,
             INIT_TIMEOUT_S + INIT_TIMEOUT_PER_SCALE_S * scale)


def _check(options: PgbenchOptions) -> None:
    if options.builtin not in BUILTINS:
        raise AdvisorError(f"unknown pgbench builtin {options.builtin!r} (available: {', '.join(BUILTINS)})")
    if options.clients < 1 or not 1 <= options.jobs <= options.clients:
        raise AdvisorError(f"pgbench needs clients >= 1 and 1 <= jobs <= clients, not clients={options.clients} "
                           f"jobs={options.jobs}")
    if not options.duration_s > 0:
        raise AdvisorError(f"pgbench duration must be positive, not {options.duration_s}")


def parse_output(stdout: str) -> PgbenchResult:
    """The summary pgbench prints at the end of a run (PostgreSQL 15's format; ``failed`` is 0 before 15)."""

    def number(pattern: re.Pattern[str], what: str) -> str:
        m = pattern.search(stdout)
        if not m:
            raise AdvisorError(f"pgbench printed no {what}: {' | '.join(stdout.strip().splitlines()[-3:])}")
        return m.group(1)

    failed = _FAILED.search(stdout)
    return PgbenchResult(tps=float(number(_TPS, "tps")), latency_ms=float(number(_LATENCY, "average latency")),
                         transactions=int(number(_TRANSACTIONS, "transaction count")),
                         failed=int(failed.group(1)) if failed else 0)


def run(dsn: str, options: PgbenchOptions = PgbenchOptions()) -> PgbenchResult:
    """Run the builtin script for ``duration_s`` (no vacuum first: ``restore()`` does that between trials)."""
    _check(options)
    seconds = max(1, math.ceil(options.duration_s))
    args = ["--no-vacuum", "--time", str(seconds), "--client", str(options.clients), "--jobs", str(options.jobs),
            "--builtin", options.builtin]
    return parse_output(_pgbench("run", args, dsn, seconds + RUN_GRACE_S))


def restore(connector: Connector) -> None:
    """Empty ``pgbench_history`` and vacuum the pgbench tables of ``connector``'s database."""
    if not any(table == "pgbench_history" for _, table in connector.table_columns()):
        raise AdvisorError("the pgbench tables do not exist: initialize() them first")
    try:
        connector.loader().run_script([f"TRUNCATE {connector.quote('pgbench_history')}"])
        connector.loader().vacuum(TABLES)
    except BadStatement as e:
        raise AdvisorError(f"cannot restore the pgbench tables: {e.reason}") from None
