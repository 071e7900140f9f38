"""Reading SQL text: one statement parsed in the problem's dialect (sqlglot's name, passed in as data), and
``Unsupported``, what every step of the SQL front end raises for a statement outside the rewriter's subset.

>>> parse("SELECT 1; SELECT 2", dialect="postgres")
Traceback (most recent call last):
    ...
optimizers.rewrites.sql.parsing.Unsupported: not exactly one statement
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from advisor.core.errors import parser_message


class Unsupported(ValueError):
    """The statement is outside the rewriter's subset (the message says what); it passes through untouched."""


def parse(sql: str, *, dialect: str) -> exp.Expression:
    """The statement's syntax tree (``Unsupported`` when sqlglot cannot parse it in ``dialect``)."""
    try:
        found = sqlglot.parse(sql, read=dialect)
    except ParseError as e:
        raise Unsupported(f"not parsed as {dialect} SQL: {parser_message(e)}") from None
    if len(found) != 1 or found[0] is None:
        raise Unsupported("not exactly one statement")
    return found[0]
