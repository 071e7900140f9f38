"""Equivalence by execution: a rewrite is kept only if it returns the same multiset of rows as the original on
every small database of ``workloads.datasets.edge_data`` (every table empty, one empty at a time, NULLs, duplicates, a tiny
value domain) loaded into a scratch database, and on the shadow itself. A mismatch names the variant and keeps both
SQL texts, so the discarded rewrite can be logged. An original that fails on a check database is an error of the
check (``Verdict.error``), not a verdict on the rewrite: the rows it should have returned are unknown.

Where the statement orders its rows (a top-level ORDER BY over a select list without ``*``), both run with their
ties broken by every output column (``ORDER BY <its keys>, 1, 2, ...``), and the rows must come in the same
order too. Ties broken alike make the order deterministic, so a difference is a real one.

Every database is reached through the connector it is given (the shadow's, the scratch database's; never a
DSN): statements run in the connector's sessions
(``Connector.session``, with its statement timeout and the advisor's errors), and SQL text is read and written in
the connector's ``dialect``.

>>> total_order("SELECT a, b FROM t ORDER BY b DESC LIMIT 5", dialect="postgres")
'SELECT a, b FROM t ORDER BY b DESC, 1, 2 LIMIT 5'
>>> total_order("SELECT * FROM t ORDER BY b", dialect="postgres") is None
True
>>> total_order("SELECT a, `b c` FROM t ORDER BY `b c` DESC LIMIT 5", dialect="mysql")
'SELECT a, `b c` FROM t ORDER BY `b c` DESC, 1, 2 LIMIT 5'
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from advisor.core.errors import AdvisorError
from connectors.base import Connector, Session
from workloads.datasets import edge_data


@dataclass(frozen=True)
class Verdict:
    equivalent: bool
    checked: tuple[str, ...]  # the databases both ran on
    mismatch: str | None = None  # where the rows differed, and how
    original: str = ""
    rewrite: str = ""
    error: str | None = None  # the check could not run (the original failed on a check database): no verdict


def rows(connector: Connector, statement: str, timeout_ms: int = 30_000) -> tuple[list[str], list[tuple]]:
    """The names of ``statement``'s output columns and its rows on ``connector``'s database (``StatementFailed``,
    ``StatementTimeout`` or ``TargetUnreachable`` when it cannot say)."""
    with connector.session(timeout_ms) as session:
        return session.fetch(statement)


def column_names(connector: Connector, statement: str) -> list[str]:
    """The names of ``statement``'s output columns, from its plan alone (no row is read)."""
    with connector.session() as session:
        return session.columns(statement)


def named_as(connector: Connector, original: str, rewrites: list[str]) -> list[str]:
    """``rewrites`` with their output columns named as ``original``'s (``with_names``), as the planner of
    ``connector``'s database names each; one it cannot plan is left as it is (its pricing refuses it)."""
    try:
        with connector.session() as session:
            names = session.columns(original)
            out = []
            for sql in rewrites:
                try:
                    got = session.columns(sql)
                except AdvisorError:
                    got = names
                out.append(sql if got == names else with_names(sql, names, got, connector.dialect))
            return out
    except AdvisorError:
        return rewrites


def with_names(sql: str, names: list[str], got: list[str], dialect: str) -> str:
    """``sql``, whose output columns are named ``got``, with the items whose name differs from ``names`` (the
    original's, by position) named so: sqlglot writes some functions under another of their names
    (``char_length`` as ``LENGTH``, ``substr`` as ``SUBSTRING``), and PostgreSQL names an unnamed item by its
    function. ``sql`` (in the engine's ``dialect``) as it is where the items cannot be matched by position (a
    ``*``, another count).

    >>> with_names("SELECT c.id, SUBSTRING(c.name, 1, 2) FROM c", ["id", "substr"], ["id", "substring"],
    ...            dialect="postgres")
    'SELECT c.id, SUBSTRING(c.name FROM 1 FOR 2) AS substr FROM c'
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return sql
    first = tree
    while isinstance(first, exp.SetOperation):  # a set operation's columns are named by its first branch
        first = first.this
    if not isinstance(first, exp.Select) or len(names) != len(got) or len(first.expressions) != len(names) \
            or any(e.is_star for e in first.expressions):
        return sql
    first.set("expressions", [e if want == have else exp.alias_(e.unalias(), exp.to_identifier(want))
                              for e, want, have in zip(first.expressions, names, got)])
    return tree.sql(dialect=dialect)


def total_order(sql: str, dialect: str) -> str | None:
    """``sql`` (in the engine's ``dialect``) with its ORDER BY's ties broken by every output column; None when it
    does not order its rows (or selects ``*``, whose columns cannot be counted here)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    order = tree.args.get("order") if isinstance(tree, exp.Select) else None
    if order is None or any(e.is_star for e in tree.expressions):
        return None
    tree = tree.copy()
    nulls_first = Dialect.get_or_raise(dialect).NULL_ORDERING == "nulls_are_small"  # the engine's own ASC order
    for i in range(1, len(tree.expressions) + 1):
        tree.args["order"].append("expressions", exp.Ordered(this=exp.Literal.number(i), nulls_first=nulls_first))
    return tree.sql(dialect=dialect)


def check(scratch: Connector, schema: edge_data.Schema, original: str, rewrite: str, *, seed: int = 0,
          not_null: frozenset[tuple[str, str]] = frozenset(), shadow: Connector | None = None,
          timeout_ms: int = 30_000, keys: edge_data.Keys | None = None,
          foreign_keys: edge_data.ForeignKeys = (), names: bool = True) -> Verdict:
    """Run ``original`` and ``rewrite`` on each edge-case variant (loaded into ``scratch``'s database, whose tables of
    ``schema``'s names are replaced; their rows honour ``keys`` and ``foreign_keys``) and on ``shadow`` when
    given (each statement cut at ``timeout_ms`` there); the first difference ends the check, as does the original
    failing on a database (a ``Verdict`` with ``error`` set: the check's error, not the rewrite's). ``names``: whether
    the output columns' names must be the same too (a bench compares a peer's rows alone)."""
    checked: list[str] = []
    targets = [(v.name, v) for v in edge_data.variants(schema, seed, not_null, keys, foreign_keys)]
    for name, variant in targets:
        edge_data.load(scratch, schema, variant, not_null)
        verdict = _compare(scratch, name, original, rewrite, checked, names=names)
        if verdict is not None:
            return verdict
    if shadow is not None:
        verdict = _compare(shadow, "the shadow", original, rewrite, checked, timeout_ms, names)
        if verdict is not None:
            return verdict
    return Verdict(True, tuple(checked), original=original, rewrite=rewrite)


def _compare(connector: Connector, name: str, original: str, rewrite: str, checked: list[str],
             timeout_ms: int = 30_000, names: bool = True) -> Verdict | None:
    try:
        session: Session = connector.session(timeout_ms)
    except AdvisorError as e:
        return Verdict(False, tuple(checked), None, original, rewrite, error="the equivalence check could not "
                       f"reach a check database ({name}): {e}")
    ordered = (total_order(original, connector.dialect), total_order(rewrite, connector.dialect))
    ordered = ordered if None not in ordered else None
    with session:
        try:
            written, want = session.fetch(ordered[0] if ordered else original)
        except AdvisorError as e:
            return Verdict(False, tuple(checked), None, original, rewrite, error="the equivalence check could not "
                           f"run the original on a check database ({name}): {e}")
        try:
            named, got = session.fetch(ordered[1] if ordered else rewrite)
            if ordered and names:  # sqlglot rewrote both texts to order them: the names are the statements' own
                written, named = session.columns(original), session.columns(rewrite)
        except AdvisorError as e:
            return Verdict(False, tuple(checked), f"{name}: the rewrite failed: {e}", original, rewrite)
    checked.append(name)
    if names and named != written:  # the statement's readers find its columns by name
        return Verdict(False, tuple(checked), f"{name}: the rewrite's columns are named {', '.join(named)}, the "
                       f"original's {', '.join(written)}", original, rewrite)
    if Counter(got) != Counter(want):
        missing, extra = sum((Counter(want) - Counter(got)).values()), sum((Counter(got) - Counter(want)).values())
        return Verdict(False, tuple(checked), f"{name}: {missing} row(s) of the original missing, {extra} extra",
                       original, rewrite)
    if ordered and got != want:
        first = next(i for i, (a, b) in enumerate(zip(want, got)) if a != b)
        return Verdict(False, tuple(checked), f"{name}: the same rows in another order (from row {first + 1})",
                       original, rewrite)
    return None
