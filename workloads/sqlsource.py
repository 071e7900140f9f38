r"""Workload SQL written once, in the dialect its workload names (each built-in workload's ``SOURCE_DIALECT``), and
run on any engine: ``to_dialect`` transpiles a statement to the connector's dialect with sqlglot (the text as it is
when the dialects are the same), ``script`` splits a workload's own multi-statement text, and ``string_literal`` /
``identifier`` quote values and names in standard SQL, which every source dialect here reads and sqlglot rewrites
for the target.

>>> to_dialect("SELECT 1 FROM t WHERE d = $1::date", "postgres", "postgres")
'SELECT 1 FROM t WHERE d = $1::date'
>>> to_dialect("SELECT o.x FROM t AS o WHERE d = DATE '1998-01-01' AND " + identifier("k") + " = 1", "postgres", "mysql")
"SELECT o.x FROM t AS o WHERE d = CAST('1998-01-01' AS DATE) AND `k` = 1"
>>> string_literal("O'Brien"), identifier('a"b')
("'O''Brien'", '"a""b"')
>>> script("CREATE TABLE a (x int); CREATE TABLE b (y int);")
['CREATE TABLE a (x int)', 'CREATE TABLE b (y int)']
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot.errors import SqlglotError

from advisor.core.errors import BadStatement
from advisor.core.sqltext import shorten


def to_dialect(statement: str, source: str, target: str) -> str:
    """``statement`` (one, written in ``source``) as ``target``'s SQL; unchanged when the two are the same.
    BadStatement naming the statement when sqlglot cannot read or write it."""
    if source == target:
        return statement
    try:
        out = sqlglot.transpile(statement, read=source, write=target, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as e:
        why = (str(e).strip().splitlines() or ["?"])[0]
        raise BadStatement(f"cannot write in {target}'s SQL: {shorten(statement, 80)} ({why})", reason=why) from None
    if len(out) != 1:
        raise BadStatement(f"expected one statement, got {len(out)}: {shorten(statement, 80)}")
    return out[0]


def all_to_dialect(statements: Iterable[str], source: str, target: str) -> list[str]:
    """Each of ``statements`` as ``to_dialect`` writes it."""
    return [to_dialect(s, source, target) for s in statements]


def script(text: str) -> list[str]:
    """A workload's own multi-statement text (statements ending with ``;``, no ``;`` inside a literal) as a
    list of statements."""
    return [s.strip() for s in text.split(";") if s.strip()]


def string_literal(text: str) -> str:
    """``text`` as a standard SQL string literal (a quote doubled; backslashes are plain characters)."""
    return "'" + text.replace("'", "''") + "'"


def identifier(name: str) -> str:
    """``name`` as a standard SQL quoted identifier (a double quote doubled)."""
    return '"' + name.replace('"', '""') + '"'
