"""The ``Loader`` role: what the built-in workloads' loaders and generators (``workloads/``) and the benches that
load a data set ask of a database, reached from a connector by ``Connector.loader()``.

Their DDL and queries are written once in the workload's own dialect and transpiled to the connector's ``dialect``
by the caller; a loader does what is the engine's: run a script in one session, bulk-load rows, bring statistics up
to date, read the planner's statistics and key words, replay parameterized calls as a driver sends them, and give
the command line of the engine's client programs. ``ModuleLoader`` is the one implementation: it runs the functions
of an engine's ``loading`` module (``connectors/postgres/loading.py``, ``connectors/mariadb/loading.py``), which
say how the engine does each."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from connectors.sessions import TableRef


@runtime_checkable
class Loader(Protocol):
    """Loading a data set into one database and reading back what the planner knows of it. Every method opens its
    own connection (or session); nothing is held between calls."""

    def run_script(self, statements: Sequence[str], before: Callable[[int, str], None] | None = None) -> None:
        """Run a loader's own statements (DDL, generated INSERT ... SELECT, setup) one at a time, each committed,
        in ONE session (a setting one makes, such as a random seed, holds for the ones after it); ``before``
        hears (1-based number, statement) before each runs. ``StatementFailed`` with the server's message for
        the first one that fails; the rest are not run."""

    def load_rows(self, table: str, columns: Sequence[str] | None, rows: Path | Iterable[Sequence[Any]]) -> int:
        """Append rows to ``table`` (one transaction): from a CSV file (a header line, comma-separated, an empty
        unquoted field is NULL) or from rows of Python values (None is NULL), into ``columns`` (all, in order,
        when None). PostgreSQL: COPY. Returns the rows loaded."""

    def analyze(self, tables: Sequence[str] | None = None, statistics_target: int | None = None) -> None:
        """Bring the planner's statistics (and the engine's own upkeep: PostgreSQL's VACUUM) up to date for
        ``tables`` (every table when None). ``statistics_target``: how detailed, in the engine's own measure
        (PostgreSQL: default_statistics_target, ANALYZE samples 300 x target rows); the engine's default when
        None."""

    def vacuum(self, tables: Sequence[str] | None = None) -> None:
        """Reclaim the space of rows that updates and deletes left behind in ``tables`` (every table when None),
        planner statistics untouched; nothing where the engine needs no such upkeep."""

    def column_statistics(self) -> dict[tuple[str, str, str], tuple]:
        """The planner's statistics of every user column, per (schema, table, column): (fraction of NULLs,
        distinct values: > 0 a count, < 0 minus a fraction of the rows, 0 unknown; average width in bytes;
        most common values as text; their frequencies as fractions of the rows; bounds of equal-population
        histogram buckets as text); a value list is None where the engine keeps none for that type."""

    def table_rows(self) -> dict[TableRef, float]:
        """The planner's estimate of every user table's rows (0 before statistics were gathered)."""

    def reserved_words(self) -> frozenset[str]:
        """The key words of the engine's SQL that cannot be a bare identifier (lower case)."""

    def run_parameterized(self, calls: Iterable[tuple[str, Sequence[Any]]], timeout_ms: int | None = None) -> int:
        """Run each (statement with ``$1 .. $n`` placeholders, its values) in ONE session with the values bound
        server-side, as an application's driver sends them (the engine records the parameterized text); rows
        are fetched and dropped; ``timeout_ms`` per statement (None: none). Returns the statements run; the first
        failure stops it: StatementTimeout, StatementFailed."""

    def client_command(self, tool: str, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """The command line that runs the engine's installed client program ``tool`` (e.g. ``pgbench``) with
        ``args`` against this database, and the environment to run it in: the connection's secrets go there,
        never on the command line. AdvisorError when the engine has no such program installed."""


class ModuleLoader:
    """``Loader`` over an engine's ``loading`` module: a function per method, named as the method; those that load
    take the DSN first (each opens its own session), the readers (``column_statistics``, ``table_rows``,
    ``reserved_words``) take a connection, run through the connector's ``guarded`` (one connection per call,
    driver errors said in one line)."""

    def __init__(self, dsn: str, guarded: Callable[[Callable], Any], loading: Any):
        self.dsn = dsn
        self._guarded = guarded
        self._loading = loading

    def run_script(self, statements: Sequence[str], before: Callable[[int, str], None] | None = None) -> None:
        self._loading.run_script(self.dsn, statements, before)

    def load_rows(self, table: str, columns: Sequence[str] | None, rows) -> int:
        return self._loading.load_rows(self.dsn, table, columns, rows)

    def analyze(self, tables: Sequence[str] | None = None, statistics_target: int | None = None) -> None:
        self._loading.analyze(self.dsn, tables, statistics_target)

    def vacuum(self, tables: Sequence[str] | None = None) -> None:
        self._loading.vacuum(self.dsn, tables)

    def column_statistics(self) -> dict[tuple[str, str, str], tuple]:
        return self._guarded(self._loading.column_statistics)

    def table_rows(self) -> dict[TableRef, float]:
        return self._guarded(self._loading.table_rows)

    def reserved_words(self) -> frozenset[str]:
        return self._guarded(self._loading.reserved_words)

    def run_parameterized(self, calls, timeout_ms: int | None = None) -> int:
        return self._loading.run_parameterized(self.dsn, calls, timeout_ms)

    def client_command(self, tool: str, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        return self._loading.client_command(self.dsn, tool, args)
