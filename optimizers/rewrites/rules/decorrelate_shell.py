"""Decorrelating the subqueries of a SELECT's shell (``optimizers.rewrites.sql.subqueries``: the select list, HAVING and
ORDER BY, inside CASE branches, comparisons and other expressions too). PostgreSQL runs such a subquery once per
row (an ORM's "last order per customer" column); joined once with a derived table of its rows by the correlation
keys, it runs once. The outer row must survive a missing match, so every join is a LEFT JOIN, and each subquery is
replaced by an expression that equals its value on every row, whatever surrounds it:

- ``decorrelate_shell_aggregate``: a scalar aggregate without GROUP BY (exactly one row per outer row),
  ``(SELECT max(o.d) FROM o WHERE o.c = c.id)`` -> ``LEFT JOIN (SELECT o.c AS k1, MAX(o.d) AS v FROM o GROUP BY
  o.c) AS dc1 ON dc1.k1 = c.id`` and ``dc1.v``; an exact ``count(...)`` as ``COALESCE(dc1.v, 0)`` (the COUNT bug);
  any other value that is not NULL over no rows (``count(*) + 1``, COALESCE, CASE, ``greatest``) is refused;
- ``decorrelate_shell_lookup``: a scalar subquery over one table without aggregate whose correlation covers a
  unique key of it (at most one row), ``(SELECT u.name FROM u WHERE u.id = p.uid)`` -> ``LEFT JOIN (SELECT u.id
  AS k1, u.name AS v FROM u) AS dc1 ON dc1.k1 = p.uid`` and ``dc1.v`` (no grouping);
- ``decorrelate_shell_exists``: ``EXISTS (SELECT ... WHERE o.c = c.id ...)`` -> ``LEFT JOIN (SELECT o.c AS k1,
  TRUE AS v FROM o ... GROUP BY o.c) AS dc1 ON dc1.k1 = c.id`` and ``(NOT dc1.v IS NULL)`` (a NOT around it
  stays: NOT EXISTS); ``x IN (SELECT y ... WHERE <correlated>)`` the same with ``y = x`` as one more key, only
  where x and y are declared NOT NULL (on no nullable side of a LEFT JOIN): IN is then two-valued, as the test is.

Guards, as for the WHERE clause's (``rules.decorrelate``): every correlated conjunct is ``inner column = outer
expression`` over this SELECT's own relations (a non-equality is refused), the subquery reads the outer query
nowhere else, no aggregate that reads its rows' order, no volatile function, and no division by a value that may be
0 (the derived table computes every group, also those of rows the statement never reads). Duplicates: the derived
table has one row per key (grouped by the keys, or the keys cover a unique key), so the LEFT JOIN neither repeats
nor drops a row, and a NULL key matches nothing, as the subquery over ``o.c = NULL`` finds nothing. In a grouped
SELECT the value is added to the GROUP BY (the keys are grouping expressions, so it is one value per group); not
under ROLLUP / CUBE / GROUPING SETS, nor in a SELECT that aggregates without GROUP BY. Output names stay: an item
that was the subquery is named as the dialect named it (``sql.expressions.output_name``). Identical subqueries share one
derived table; each other gets its own alias.

Like the WHERE clause's, these are expanding rules: the statement's term (``optimizers.rewrites.search.term``) holds
the shell with them applied, over its core LEFT JOINed with the derived tables, as equal to the shell as written; the
shell's correlated subqueries are priced per row they run for (``algebra.analyses.per_row``), and extraction, the
planner's re-ranking and the shadow's timing choose.

>>> from optimizers.rewrites.sql.lower import lower
>>> schema = {"c": {"id": "int"}, "o": {"cid": "int"}}
>>> form = unnest(lower("SELECT c.id, (SELECT count(*) FROM o WHERE o.cid = c.id) AS n FROM c", schema,
...                      dialect="postgres"), lambda: "dc1")
>>> form.select.sql(dialect="postgres")
'SELECT c.id, COALESCE(dc1.v, 0) AS n FROM c AS c'
>>> form.joins[0].sql, [a.sql for a in form.joins[0].on]
('SELECT o.cid AS k1, COUNT(*) AS v FROM o AS o GROUP BY o.cid', ['dc1.k1 = c.id'])
>>> form = unnest(lower("SELECT c.id, (SELECT count(*) + 1 FROM o WHERE o.cid = c.id) FROM c", schema,
...                      dialect="postgres"), lambda: "dc1")
>>> form.select is None, form.refused[0][1][:50]
(True, "the subquery's value is not NULL on an empty group")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT
from optimizers.rewrites.rules.decorrelate import correlation, derived_sql, empty_value, join_on
from optimizers.rewrites.sql.expressions import aggregates, has_aggregate, output_name, set_returning, volatile
from optimizers.rewrites.sql.lowered import VIEW, Atom, Lowered, ShellSubquery
from optimizers.rewrites.sql.scopes import identifier
from optimizers.rewrites.sql.subqueries import candidates

AGGREGATE, LOOKUP, EXISTS = "decorrelate_shell_aggregate", "decorrelate_shell_lookup", "decorrelate_shell_exists"
NAMES = (AGGREGATE, LOOKUP, EXISTS)
DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)


@dataclass(frozen=True)
class Join:
    """A derived table LEFT JOINed below the shell: its SQL, alias, ON condition, the rule that made it, whether it
    groups, and the subquery it comes from."""

    sql: str
    alias: str
    on: tuple[Atom, ...]
    rule: str
    grouped: bool
    sub: Lowered


@dataclass(frozen=True)
class ShellForm:
    """A SELECT's shell with its decorrelated subqueries replaced (``select``; None when none is), the joins they
    need, in order, the subqueries replaced, and (SQL, why) of those left as written."""

    select: exp.Select | None
    joins: tuple[Join, ...] = ()
    done: tuple[ShellSubquery, ...] = ()
    refused: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def unnest(low: Lowered, fresh: Callable[[], str], keys: dict | None = None,
           not_null: frozenset[tuple[str, str]] = frozenset()) -> ShellForm:
    """``low``'s shell with the subqueries these rules decorrelate replaced; ``fresh()`` names a derived table,
    ``keys`` are the unique keys by table, ``not_null`` the (table, column) pairs declared NOT NULL."""
    q = low.qualified if low.qualified is not None else low.shell
    if not low.subqueries or not isinstance(q, exp.Select):
        return ShellForm(None)
    group = q.args.get("group")
    whole = _grouping(q)
    if whole is not None:
        return ShellForm(None, refused=tuple((s.sql, whole) for s in low.subqueries))
    out = q.copy()
    nodes = candidates(out)
    joins: dict[str, tuple[Join, exp.Expression]] = {}  # by the subquery's SQL: identical ones share a join
    done, refused = [], []
    for s in low.subqueries:
        if s.index >= len(nodes) or nodes[s.index][1].sql(dialect=low.dialect) != s.sql:
            refused.append((s.sql, "the shell changed under the subquery"))
            continue
        if s.sql not in joins:
            found = _decorrelated(s, low, fresh, keys or {}, not_null)
            if isinstance(found, str):
                refused.append((s.sql, found))
                continue
            joins[s.sql] = found
        _replace(nodes[s.index][1], joins[s.sql][1].copy())
        done.append(s)
    if not done:
        return ShellForm(None, refused=tuple(refused))
    _keep_names(out, q, low.dialect)
    if group is not None:  # the keys are grouping expressions: one value per group
        group = out.args["group"]
        group.set("expressions", [*group.expressions, *(exp.column("v", table=j.alias) for j, _ in joins.values())])
    return ShellForm(out, tuple(j for j, _ in joins.values()), tuple(done), tuple(refused))


def rule_of(s: ShellSubquery) -> str:
    """The rule that decorrelates ``s`` (when one does): EXISTS and IN, a scalar aggregate, or a key lookup."""
    if s.kind != "scalar":
        return EXISTS
    return AGGREGATE if any(isinstance(n, exp.AggFunc) for n in s.value.walk()) else LOOKUP


def _grouping(q: exp.Select) -> str | None:
    """Why no subquery of ``q``'s shell can be joined below its grouping, or None."""
    group = q.args.get("group")
    if group is None:
        return "the SELECT aggregates without GROUP BY" if aggregates(q) else None
    if any(v for k, v in group.args.items() if k != "expressions") or any(
            isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions):
        return "the SELECT groups by ROLLUP, CUBE or GROUPING SETS"
    return None


def _decorrelated(s: ShellSubquery, low: Lowered, fresh: Callable[[], str], keys: dict,
                  not_null: frozenset[tuple[str, str]]) -> tuple[Join, exp.Expression] | str:
    """The join and the value expression of one subquery, or why it stays as written."""
    sub = s.sub
    if not s.outer:
        return "the subquery is not correlated (PostgreSQL runs it once)"
    if not s.outer <= low.aliases:
        return "the subquery reads a query further out"
    shell = sub.shell
    if any(shell.args.get(k) is not None for k in ("group", "having", "offset")) or not _limit_keeps_a_row(shell):
        return "the subquery groups, has HAVING, OFFSET or a LIMIT under 1"
    if s.value is not None and (set_returning(s.value) or volatile(s.value)):
        return "the subquery's value is set-returning or volatile"
    if s.value is not None and _may_fail(s.value):
        return ("the subquery's value divides by a value that may be 0 (computed for every group, it may fail "
                "where the rows the statement reads would not)")
    if any(isinstance(n, (exp.Rand, exp.Uuid)) for n in shell.walk()):
        return "the subquery calls a volatile function"
    distinct = low.shell.args.get("distinct")
    if s.clause == "order" and distinct is not None and distinct.args.get("on") is not None:
        return "an ORDER BY under DISTINCT ON (which must match it as written)"
    if s.kind == "exists":
        return _exists(s, low, fresh, [])
    if s.kind == "in":
        return _in(s, low, fresh, not_null)
    if shell.args.get("distinct") is not None:
        return "a scalar subquery with DISTINCT"
    if _refs(s.value) - sub.aliases:
        return "the subquery's value reads an outer column"
    empty = empty_value(s.value)
    if empty == "the subquery's value is not an aggregate":
        return _lookup(s, low, fresh, keys)
    if empty not in ("null", "count"):
        return empty
    found = correlation(sub, low.aliases)
    if isinstance(found, str):
        return found
    pairs, inner = found
    sql = derived_sql(sub, pairs, inner, s.value, grouped=True)
    if sql is None:
        return "the subquery reads the outer query outside its WHERE conjuncts"
    alias = fresh()
    value = exp.column("v", table=alias)
    value = exp.Coalesce(this=value, expressions=[exp.Literal.number(0)]) if empty == "count" else value
    return Join(sql, alias, join_on(alias, pairs, low.aliases, low.dialect), AGGREGATE, True, sub), value


def _lookup(s: ShellSubquery, low: Lowered, fresh: Callable[[], str], keys: dict) -> tuple[Join, exp.Expression] | str:
    sub = s.sub
    if len(sub.tables) != 1 or sub.joins or sub.tables[0][0] == VIEW:
        return "the subquery is no aggregate and reads several tables: it may return several rows"
    if any(isinstance(n, (exp.Window, exp.Subquery, exp.Select)) for n in s.value.walk()):
        return "the subquery's value holds a window or another subquery"
    found = correlation(sub, low.aliases)
    if isinstance(found, str):
        return found
    pairs, inner = found
    table, alias_in = sub.tables[0]
    columns = {col.split(".", 1)[1] for col, _ in pairs if col.startswith(f"{alias_in}.")}
    if not any(set(k) <= columns for k in keys.get(table, ())):
        return "the subquery is no aggregate and its correlation covers no unique key: it may return several rows"
    sql = derived_sql(sub, pairs, inner, s.value, grouped=False)
    if sql is None:
        return "the subquery reads the outer query outside its WHERE conjuncts"
    alias = fresh()
    return Join(sql, alias, join_on(alias, pairs, low.aliases, low.dialect), LOOKUP, False, sub), exp.column("v", table=alias)


def _exists(s: ShellSubquery, low: Lowered, fresh: Callable[[], str], extra: list[tuple[str, str]]):
    sub = s.sub
    distinct = sub.shell.args.get("distinct")
    if has_aggregate(sub.shell.expressions) or any(set_returning(e) for e in sub.shell.expressions) or (
            distinct is not None and distinct.args.get("on") is not None):
        return "the subquery aggregates, has DISTINCT ON or a set-returning function (its rows are not its WHERE's)"
    found = correlation(sub, low.aliases)
    if isinstance(found, str):
        return found
    pairs, inner = found
    sql = derived_sql(sub, pairs + extra, inner, None, grouped=True)
    if sql is None:
        return "the subquery reads the outer query outside its WHERE conjuncts"
    alias = fresh()
    matched = exp.Paren(this=exp.Not(this=exp.Is(this=exp.column("v", table=alias), expression=exp.Null())))
    return Join(sql, alias, join_on(alias, pairs + extra, low.aliases, low.dialect), EXISTS, True, sub), matched


def _in(s: ShellSubquery, low: Lowered, fresh: Callable[[], str], not_null: frozenset[tuple[str, str]]):
    x, y = s.left, s.value
    if not (_never_null(x, low, not_null) and _never_null(y, s.sub, not_null)):
        return "IN over a column that may be NULL (IN is three-valued there, the join's test is not)"
    return _exists(s, low, fresh, [(y.sql(dialect=low.dialect), x.sql(dialect=low.dialect))])


def _never_null(col: exp.Expression, low: Lowered, not_null: frozenset[tuple[str, str]]) -> bool:
    """Whether ``col`` is a column of a base table of ``low`` declared NOT NULL, on no nullable side of its joins."""
    tables = dict((alias, table) for table, alias in low.tables)
    nullable = {alias for alias, how, _ in low.joins if how == "left"}
    return isinstance(col, exp.Column) and col.table in tables and tables[col.table] != VIEW \
        and col.table not in nullable and (tables[col.table], col.name) in not_null


def _may_fail(value: exp.Expression) -> bool:
    """Whether ``value`` divides by something other than a non-zero constant."""
    for n in value.walk():
        if isinstance(n, (exp.Div, exp.Mod, exp.IntDiv)):
            divisor = n.expression.unnest() if isinstance(n.expression, exp.Paren) else n.expression
            if not (isinstance(divisor, exp.Literal) and not divisor.is_string and float(divisor.this) != 0):
                return True
    return False


def _limit_keeps_a_row(shell: exp.Select) -> bool:
    """No LIMIT, or a LIMIT of a constant of at least 1 (a subquery of at most one row, or an EXISTS, keeps it)."""
    limit = shell.args.get("limit")
    if limit is None:
        return True
    count = limit.expression
    return isinstance(count, exp.Literal) and count.is_int and int(count.this) >= 1


def _replace(node: exp.Expression, value: exp.Expression) -> None:
    """``node`` (a subquery) replaced by ``value``, keeping a name it carries (``(SELECT ...) AS last``); a NOT
    EXISTS (or NOT IN) as the test for no match, ``(dc1.v IS NULL)``."""
    alias = node.args.get("alias") if isinstance(node, exp.Subquery) else None
    negated = node.parent if isinstance(node.parent, exp.Not) else None
    if negated is not None and isinstance(value, exp.Paren) and isinstance(value.this, exp.Not):
        negated.replace(exp.Paren(this=value.this.this))
        return
    node.replace(exp.alias_(value, alias.this.copy()) if alias is not None else value)


def _keep_names(out: exp.Select, written: exp.Select, dialect: str) -> None:
    """The select items of ``out`` that changed named as ``dialect`` named them in ``written``
    (``sql.expressions.output_name``: in PostgreSQL an item that was ``(SELECT max(...) ...)`` is ``max``, ``EXISTS
    (...)`` is ``exists``; in MySQL the item's text)."""
    items = []
    for new, old in zip(out.expressions, written.expressions):
        if new.sql(dialect=dialect) != old.sql(dialect=dialect) and output_name(new, dialect) != output_name(old, dialect):
            new = exp.alias_(new.unalias() if isinstance(new, exp.Alias) else new, identifier(output_name(old, dialect), dialect))
        items.append(new)
    out.set("expressions", items)


def _refs(node: exp.Expression) -> frozenset[str]:
    return frozenset(c.table for c in node.find_all(exp.Column) if c.table)
