"""What a rewrite's check databases hold: the tables a statement reads anywhere (``tables_read``, ``tables_named``)
and the keys among them (``constraints``), so an equivalence check runs the original and its rewrite over rows
that honour the schema."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from optimizers.rewrites.search.problem import RewriteProblem
from optimizers.rewrites.sql.scopes import folded


def constraints(problem: RewriteProblem, tables: dict) -> dict:
    """The unique and foreign keys among ``tables``, for the check databases (their rows must honour them)."""
    return {"keys": {t: k for t, k in problem.keys.items() if t in tables},
            "foreign_keys": tuple(fk for fk in problem.foreign_keys if fk[0] in tables and fk[2] in tables)}


def tables_read(problem: RewriteProblem, queryid: str) -> dict[str, dict[str, str]]:
    """The schema of every table ``queryid`` reads anywhere: what its check databases hold. The lowered form's
    base tables (and, for a statement searched over a block, the whole statement's) and every table its text
    names (``tables_named``): a subquery in the select list, ORDER BY, a CASE or HAVING is in neither lowered
    set, and a table missing from the check databases makes the original fail there."""
    names = tables_named(dict(problem.statements)[queryid], dialect=problem.dialect)
    lowered = problem.lowered.get(queryid)  # None outside the e-graph's subset (the statement-level rules alone)
    if lowered is not None:
        names |= lowered.base_tables()
    if lowered is not None and lowered.nested is not None:
        names |= lowered.nested.tables()
    return {t: problem.schema[t] for t in sorted(names) if t in problem.schema}


def tables_named(sql: str, *, dialect: str) -> set[str]:
    """The relations ``sql`` (in ``dialect``) names anywhere (every clause, subquery, CTE and set-operation branch),
    as the dialect looks them up (``scopes.folded``: PostgreSQL folds an unquoted name to lower case, MySQL keeps
    it), without its schema (the check databases hold every table in one schema); empty when sqlglot cannot read
    ``sql``. A CTE's name is among them: a caller keeps the
    names its schema has, so a CTE is left out unless a table has its name, and then the table is kept (``WITH o AS
    (SELECT ... FROM o)`` reads it; an unread table in the check databases is harmless, a missing one is not)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return set()
    return {folded(t.this, dialect) for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Identifier)}
