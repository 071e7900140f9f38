"""The rewriter's row estimates calibrated against the planner: each predicate's selectivity is what the engine's
own planner estimates on the shadow (``Connector.plan(sql).rows``, the SQL written in the connector's
``dialect``). A filter on one relation: the planner's rows of ``SELECT 1 FROM t AS a WHERE p`` over the table's
rows; a join condition: the rows of ``SELECT 1 FROM t AS a, u AS b WHERE p`` over the product of both tables' rows;
a GROUP BY's groups: the planner's rows of ``SELECT 1 FROM <the tables its keys read> GROUP BY <keys>`` (its
distinct-value statistics). So the e-graph's extraction prefers what the planner would cost lower, with its
statistics rather than fixed guesses. Predicates with a subquery, or that the planner cannot plan alone, keep the
default (``optimizers.rewrites.search.problem.default_selectivity``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from advisor.core.errors import AdvisorError
from connectors.base import Connector
from optimizers.rewrites.sql.lowered import VIEW, Atom, Lowered
from optimizers.rewrites.search.problem import default_selectivity
from optimizers.rewrites.sql.shell_operators import Groups, group_keys


def planner_selectivity(connector: Connector, lowered: dict[str, Lowered],
                        rows: dict[str, float]) -> Callable[[Atom], float]:
    """A selectivity function for the statements' plain predicates, from the planner's estimates on
    ``connector`` (a shadow); the default for the rest."""
    dialect = connector.dialect
    known: dict[tuple[str, frozenset[str]], float] = {}
    for low in lowered.values():
        for atom, tables in _plain_atoms(low, {}):
            key = (atom.sql, atom.refs)
            if key in known or not 1 <= len(atom.refs) <= 2 or not all(a in tables for a in atom.refs):
                continue
            sources = [(tables[a], a) for a in sorted(atom.refs)]
            total = 1.0
            for table, _ in sources:
                total *= max(rows.get(table, 1.0), 1.0)
            statement = exp.select("1").from_(_table(*sources[0]))
            for source in sources[1:]:
                statement = statement.join(_table(*source), join_type="cross")
            try:
                estimated = connector.plan(statement.where(atom.sql, dialect=dialect).sql(dialect=dialect)).rows
            except (AdvisorError, ValueError):
                continue
            known[key] = min(1.0, max(float(estimated), 1.0) / total)

    def selectivity(atom: Atom) -> float:
        return known.get((atom.sql, atom.refs), default_selectivity(atom))

    return selectivity


def planner_groups(connector: Connector, lowered: dict[str, Lowered]) -> Groups:
    """A function from a GROUP BY's keys (``optimizers.rewrites.sql.shell_operators.group_keys``) to the groups the
    planner estimates they make over the base tables they read, on ``connector`` (a shadow); None where it cannot say
    (a key over a view's column or an outer query's, a plan that fails)."""
    dialect = connector.dialect
    known: dict[str, float] = {}
    for low in lowered.values():
        for select in _selects(low):
            q = select.qualified if select.qualified is not None else select.shell
            keys = group_keys(q, dialect=select.dialect) if isinstance(q, exp.Select) else ""
            tables = {alias: table for table, alias in select.tables if table != VIEW}
            read = sorted({c.table for g in (q.args.get("group").expressions if keys else ()) for c in
                           g.find_all(exp.Column)})
            if not keys or keys in known or not read or not all(a in tables for a in read):
                continue
            statement = exp.select("1").from_(_table(tables[read[0]], read[0]))
            for alias in read[1:]:
                statement = statement.join(_table(tables[alias], alias), join_type="cross")
            try:
                estimated = connector.plan(f"{statement.sql(dialect=dialect)} GROUP BY {keys}").rows
            except (AdvisorError, ValueError):
                continue
            known[keys] = max(float(estimated), 1.0)
    return known.get


def _selects(low: Lowered):
    """``low`` and every SELECT lowered inside it (views, set operation branches, conditions' subqueries)."""
    yield low
    for part in low.parts():
        yield from _selects(part)


def _table(name: str, alias: str) -> exp.Table:
    """The catalog's table name quoted exactly; the alias as the statement's predicates write it."""
    table = exp.Table(this=exp.to_identifier(name, quoted=True))
    return table.as_(exp.to_identifier(alias)) if alias != name else table


def _plain_atoms(low: Lowered, outer: dict[str, str]):
    """(atom, alias -> base table) of every plain predicate of a statement, its views and its subqueries (ON
    conditions too); a view's alias is no base table (a predicate on it keeps the default)."""
    tables = {**outer, **{alias: table for table, alias in low.tables if table != VIEW}}
    for part in low.selects():
        yield from _plain_atoms(part, {})
    for atom in low.atoms:
        if atom.kind == "plain":
            yield atom, tables
        if atom.sub is not None:
            yield from _plain_atoms(atom.sub, tables)
    for _alias, _how, on in low.joins:
        for atom in on:
            yield atom, tables
