"""What a DBA copies from the terminal and pastes back: ids and commands, printed whole at any width.

``id_table`` makes a rich table whose first column holds ids, never cut (``272ce5…``) nor wrapped: the other
columns give way. ``commands`` prints suggested commands, each on its own line and never wrapped by rich (a
command broken in two runs its first half when pasted); a terminal narrower than one only folds it on screen."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from advisor.core.inputs import ID_LENGTH


def id_table(id_header: str, *headers: str, **options) -> Table:
    """A table whose first column (``id_header``) holds ids shown whole, then ``headers``; ``options`` go to
    ``rich.table.Table``."""
    table = Table(**options)
    table.add_column(id_header, no_wrap=True, min_width=ID_LENGTH)
    for header in headers:
        table.add_column(header)
    return table


def commands(console: Console, lines: list[str], indent: str = "  ") -> None:
    """Each of ``lines`` (a command) on its own line, indented, as it is: no markup, no highlighting, no wrap."""
    for line in lines:
        console.print(indent + line, soft_wrap=True, markup=False, highlight=False)
