"""Predicates pushed into CTEs: statement-level rules (``rules.statement``) for a CTE read more than once, which
PostgreSQL materializes (computes whole, once), so a filter on a reading is applied after the whole CTE is made.

``push_into_ctes``: where every reading of such a CTE is filtered on columns the CTE computes row by row (its
grouping expressions under GROUP BY), the OR of the readings' filters, written over the CTE's own expressions, is
added to its WHERE: a row it removes belongs to a group no reading keeps (a filter on the grouping keeps or drops
whole groups), so each reading sees the rows it kept before; the CTE is still computed once, over fewer rows.

``inline_ctes``: PostgreSQL materializes a CTE that a statement reads twice or more (computed whole, once), so a
filter on one reading (``WHERE g1.k BETWEEN 10 AND 20`` over ``WITH g AS (SELECT k, count(*) ... GROUP BY k)``)
is applied after the whole CTE is computed; written as a derived table at each reading, the planner pushes each
reading's filters into its copy (below the grouping where they read its keys) and plans the copies apart. The
rows are the same: a CTE that is a plain SELECT (no data change, no volatile function, not RECURSIVE, not
written MATERIALIZED) gives the same rows each time it is read within one statement. A derived table (unlike
PostgreSQL's ``NOT MATERIALIZED``) is written the same way on MariaDB and MySQL.

>>> import sqlglot
>>> from optimizers.rewrites.rules.base import Facts
>>> facts = Facts({}, frozenset(), {}, dialect="postgres")
>>> tree = sqlglot.parse_one("WITH g AS (SELECT t.k, count(*) AS n FROM t GROUP BY t.k) SELECT g1.k FROM g AS g1 "
...                          "WHERE g1.k < 3 AND g1.n > (SELECT avg(g2.n) FROM g AS g2)")
>>> print(inline_ctes(tree, facts).sql())  # doctest: +NORMALIZE_WHITESPACE
SELECT g1.k FROM (SELECT t.k, COUNT(*) AS n FROM t GROUP BY t.k) AS g1 WHERE g1.k < 3
AND g1.n > (SELECT AVG(g2.n) FROM (SELECT t.k, COUNT(*) AS n FROM t GROUP BY t.k) AS g2)
>>> tree = sqlglot.parse_one("WITH g AS (SELECT t.k, count(*) AS n FROM t GROUP BY t.k) SELECT g1.k FROM g AS g1 "
...                          "WHERE g1.k < 3 AND g1.n > (SELECT avg(g2.n) FROM g AS g2 WHERE g2.k < 3 AND g2.n > 1)")
>>> print(push_into_ctes(tree, facts).sql())  # doctest: +NORMALIZE_WHITESPACE
WITH g AS (SELECT t.k, COUNT(*) AS n FROM t WHERE t.k < 3 GROUP BY t.k) SELECT g1.k FROM g AS g1 WHERE g1.k < 3
AND g1.n > (SELECT AVG(g2.n) FROM g AS g2 WHERE g2.k < 3 AND g2.n > 1)
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT, Facts
from optimizers.rewrites.rules.syntax import conjuncts, with_conjuncts

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

# functions whose value may change from one reading to the next (PostgreSQL's volatile ones that statements use)
VOLATILE = ("random", "rand", "nextval", "setval", "clock_timestamp", "timeofday", "uuid", "gen_random_uuid",
            "txid_current", "pg_sleep", "sleep")


def _volatile(node: exp.Expression) -> bool:
    names = {f.name.lower() for f in node.find_all(exp.Anonymous)} | {
        f.sql_name().lower() for f in node.find_all(exp.Func) if not isinstance(f, exp.Anonymous)}
    return bool(node.find(exp.Rand)) or any(n in VOLATILE for n in names)


def _readings(tree: exp.Expression, name: str) -> list[exp.Table]:
    return [t for t in tree.find_all(exp.Table) if not t.args.get("db") and t.name == name]


def inline_ctes(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """Every CTE of ``tree`` read twice or more (a plain SELECT: no data change, volatile function or RECURSIVE,
    not written MATERIALIZED) as a derived table at each reading, under the reading's alias (its name where it has
    none); None when there is none."""
    with_ = tree.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return None
    new = tree.copy()
    ctes = list(new.args["with_"].expressions)
    kept, changed = [], False
    for k, cte in enumerate(ctes):
        body, name = cte.this, cte.alias
        earlier = {id(n) for c in ctes[:k + 1] for n in c.walk()}  # this CTE's own and earlier ones' readings
        readings = [t for t in _readings(new, name) if id(t) not in earlier]
        if not isinstance(body, exp.Select) or cte.args.get("materialized") is not None or _volatile(body) \
                or len(readings) < 2 or any(isinstance(n, (exp.Insert, exp.Update, exp.Delete))
                                            for n in body.walk()):
            kept.append(cte)
            continue
        for table in readings:
            alias = table.args.get("alias")
            columns = [c.copy() for c in cte.args["alias"].columns] or None
            target = exp.TableAlias(this=exp.to_identifier(table.alias_or_name), columns=columns) \
                if alias is None or not alias.columns else alias.copy()
            table.replace(exp.Subquery(this=body.copy(), alias=target))
        changed = True
    if not changed:
        return None
    if kept:
        new.args["with_"].set("expressions", kept)
    else:
        new.set("with_", None)
    return new



def _row_by_row(body: exp.Select) -> dict[str, exp.Expression] | None:
    """The CTE's output columns a filter may move into its WHERE, each with its expression: under GROUP BY those
    that are grouping expressions, else every column without an aggregate; None for a body that limits, orders,
    windows or picks rows (DISTINCT ON), or reads no table."""
    if any(body.args.get(k) for k in ("limit", "offset", "having")) or body.args.get("from_") is None \
            or any(e.find(exp.Window) for e in body.expressions):
        return None
    distinct = body.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        return None
    group = body.args.get("group")
    keys = list(group.expressions) if group else None
    if keys is None and any(e.find(exp.AggFunc) for e in body.expressions):
        return None  # one row over all: a filter above it is not a filter below it
    out = {}
    for item in body.expressions:
        expr = item.unalias() if isinstance(item, exp.Alias) else item
        if (keys is None or expr in keys) and not expr.find(exp.AggFunc, exp.Select, exp.Anonymous):
            out[item.alias_or_name] = expr
    return out


def push_into_ctes(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """Each CTE read twice or more, every reading (the FROM of its SELECT) filtered on its row-by-row columns: the
    OR of the readings' filters, over the CTE's own expressions, added to the CTE's WHERE."""
    if tree.args.get("with_") is None or tree.args["with_"].args.get("recursive"):
        return None
    new, changed = tree.copy(), False
    ctes = list(new.args["with_"].expressions)
    for k, cte in enumerate(ctes):
        body, name = cte.this, cte.alias
        if not isinstance(body, exp.Select) or cte.args["alias"].columns or _volatile(body):
            continue
        columns = _row_by_row(body)
        earlier = {id(n) for c in ctes[:k + 1] for n in c.walk()}
        readings = [t for t in _readings(new, name) if id(t) not in earlier]
        if not columns or len(readings) < 2:
            continue
        filters = []
        for table in readings:
            select = table.parent.parent if isinstance(table.parent, exp.From) else None
            alias = table.alias_or_name
            mine = [c for c in (conjuncts(select) if isinstance(select, exp.Select) else [])
                    if {x.table for x in c.find_all(exp.Column)} == {alias} and not c.find(exp.Select)
                    and all(x.name in columns for x in c.find_all(exp.Column))]
            if not mine or any((j.side or "").upper() in ("RIGHT", "FULL") for j in select.args.get("joins") or ()):
                break  # no filter of its own, or NULL-extended by an outer join
            filters.append(exp.and_(*[c.transform(lambda n, a=alias: columns[n.name].copy() if isinstance(
                n, exp.Column) and n.table == a else n) for c in mine]))
        else:
            unique = list({f.sql(): f for f in filters}.values())
            pushed = unique[0] if len(unique) == 1 else exp.or_(*[exp.Paren(this=f) for f in unique])
            cte.set("this", with_conjuncts(body, conjuncts(body) + [pushed]))
            changed = True
    return new if changed else None
