"""The engine seam's session protocols (``connectors.base`` re-exports them): what a caller holds open on one
database connection.

- ``Session``: outside SQL (workload statements, rewrites, loaders) one statement at a time under a timeout.
- ``BindingSource``: what a database knows about the constants of its normalized statements (parameter binding).
- ``WhatIf``: what-if index costs on one session (HypoPG on PostgreSQL; IGNORED indexes on a MariaDB shadow).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from advisor.core.domain import Costed, IndexChange, Statement

TableRef = tuple[str, str]  # (schema, table); for MariaDB the schema is the database


@runtime_checkable
class WhatIf(Protocol):
    """Hypothetical indexes on one open session: they exist for this session only, never for other clients
    (PostgreSQL's HypoPG); an engine without them builds each candidate once on a shadow and hides the ones a
    configuration lacks (MariaDB: IGNORED indexes), dropping them on close. Close it (or leave its ``with``
    block) when done. ``creates`` / ``drops`` count the hypothetical indexes
    made and removed so far."""

    creates: int
    drops: int

    def plan(self, sql: str, indexes: Sequence[IndexChange], tables: frozenset[TableRef]) -> Costed:
        """Make the hypothetical indexes on ``tables`` exactly ``indexes``, then the plan's cost (cost units)."""

    def index_size(self, index: IndexChange) -> int:
        """The engine's size estimate of ``index`` in bytes (the real size where the engine builds it)."""

    def close(self) -> None: ...

    def __enter__(self) -> WhatIf: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Session(Protocol):
    """One open connection to a database for running outside SQL (workload statements, rewrites, loaders) one
    statement at a time under a statement timeout. Errors arrive as the advisor's own: ``StatementTimeout``
    (the timeout passed, or ``cancel()`` was called), ``StatementFailed`` (the server's message; the session stays
    usable) and ``TargetUnreachable`` (the connection is gone). Close it (or leave its ``with`` block) when done."""

    def run(self, statement: str, *, rollback: bool = False) -> list[tuple] | None:
        """Run exactly one statement (a smuggled second one is refused); its rows when it returns a result set,
        else None. ``rollback``: inside a transaction that is rolled back (a write leaves the data as it was)."""

    def cancel(self) -> None:
        """Stop the statement running now; safe to call from another thread."""

    def close(self) -> None: ...

    def __enter__(self) -> Session: ...

    def __exit__(self, *exc: object) -> None: ...

    # --- tune (issue 30) ---

    def fetch(self, statement: str) -> tuple[list[str], list[tuple]]:
        """Run one query (one statement, as ``run``): the names of its output columns as the engine names them,
        and its rows."""

    def columns(self, statement: str) -> list[str]:
        """The names the engine gives the output columns of the query ``statement`` (an unnamed expression's
        too, e.g. PostgreSQL's ``count`` for ``count(*)``), found without reading any row."""


@runtime_checkable
class BindingSource(Protocol):
    """What one database knows about the constants of its normalized statements (``$1, $2 ...``: the neutral
    placeholders above connectors), for ``workloads.statements.binding`` to turn them into executable SQL, on one open
    connection of its own: close it (or leave its ``with`` block) when done. Values are text: ``real_constants``
    gives SQL literals as the engine saw them, ``column_values`` and ``default_value`` raw values that
    ``literal`` renders. An engine that keeps no such fact answers "none" (``None``, ``{}``, ``()``, "unknown")."""

    def example(self, statement: Statement) -> tuple[str, str | None]:
        """One real call of ``statement`` the engine kept, with its constants, as the statement alone (an EXPLAIN
        or PREPARE around it removed), and the queryid it is kept under (the statement's own, else one of
        ``statement.merged``); ``(statement.queryid, None)`` when none was kept. Where a driver bound the
        parameters, the example still has ``$n`` placeholders (with the statement's own constants elsewhere)."""

    def real_constants(self, queryid: str, template: str) -> dict[int, list[str]]:
        """Per parameter number of ``template`` (an example of ``queryid`` that still has placeholders), the
        constants real calls used for it, as SQL literals, most frequent first; ``{}`` when none are kept."""

    def parameter_types(self, text: str, count: int, amounts: Mapping[int, str]) -> list[str]:
        """The engine's type names of the parameters ``$1 .. $count`` of ``text``, in order ("unknown", or a
        shorter list, where it cannot tell). ``amounts``: parameters added to a value of the given type (in
        ``$2::date + $4``: ``{4: "date"}``), for an engine that must be told what such an amount is.
        ``BadStatement`` with the engine's reason when it refuses the statement."""

    def column_values(self, table: str, column: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The values of ``table.column`` in the engine's statistics, as text: (histogram bounds in ascending
        order, most common values); any table's column of that name when ``table`` is ''; ``((), ())`` when
        the engine has none."""

    def literal(self, value: str, type_name: str) -> str:
        """``value`` (raw text) as a SQL constant for a parameter of type ``type_name``: a bare number for a
        numeric type, a quoted string literal (quoted by the driver's tools) otherwise."""

    def default_value(self, type_name: str) -> str | None:
        """A plausible raw value of the type (a number, a date ...); None when the engine knows none."""

    def close(self) -> None: ...

    def __enter__(self) -> BindingSource: ...

    def __exit__(self, *exc: object) -> None: ...
