"""A grouped derived table joined back to its own table, as a window function: a statement-level rule
(``rules.statement``) that reads the table once instead of twice.

``window_joinback``: ``SELECT ... FROM t a JOIN (SELECT b.k, AVG(b.x) AS m FROM t b [WHERE F] GROUP BY b.k) g
ON a.k = g.k WHERE [F over a AND] a.x > g.m`` (each row compared with its group's aggregate) becomes ``SELECT ...
FROM (SELECT a.<columns read>, AVG(a.x) OVER (PARTITION BY a.k) AS m FROM t a WHERE F [AND a.k IS NOT NULL]) AS a
WHERE a.x > a.m``: one scan, the aggregate computed per partition beside each row. The same for a CTE read once
(``WITH g AS (...) ... JOIN g ...``). Guards that keep the rows:

- the derived table reads the same base table alone (no join, HAVING, DISTINCT, LIMIT, window, subquery) and is
  grouped by plain columns; the join is inner, its ON only equalities ``a.k = g.k`` of the same column, covering
  every grouping column (so each row meets exactly its own group);
- the derived table's WHERE is among the outer WHERE's conditions on ``a`` (equal, or none on both): the rows the
  window sees are the group's rows, and every outer row is one of them; the outer's other conditions on ``a``
  stay outside, over the window's rows;
- NULL keys: the inner join drops a row whose key is NULL (NULL = NULL is not true), a window would give it a
  partition: ``k IS NOT NULL`` is added unless the catalog declares k NOT NULL or F rejects its NULLs;
- the aggregates are COUNT, SUM, AVG, MIN, MAX, none DISTINCT (no engine here takes DISTINCT in a window), a SUM
  or AVG only over an exact type (floating-point sums depend on the order of the rows); the statement around reads
  only columns of ``a`` and of the derived table, no ``*`` and no subquery; it reads a grouping column of the
  derived table only where equal values are the same value (integers, dates: a group of numeric 1.0 and 1.00, or
  of 'a' and 'A' under a case-blind collation, shows one of them).

Window functions: PostgreSQL, MariaDB from 10.2, MySQL from 8.0 (``DIALECTS``: every dialect the rewriter reads);
checked by execution on PostgreSQL and MariaDB (``tests/optimizers/rewrites/rules/test_shapes.py``).

>>> import sqlglot
>>> from optimizers.rewrites.rules.base import Facts
>>> facts = Facts({"t": {"id": "integer", "k": "integer", "x": "numeric"}}, frozenset({("t", "id")}),
...               {"t": (("id",),)}, dialect="postgres")
>>> tree = sqlglot.parse_one("SELECT a.id, a.x FROM t AS a JOIN (SELECT b.k, AVG(b.x) AS m FROM t AS b "
...                          "WHERE b.id > 5 GROUP BY b.k) AS g ON a.k = g.k WHERE a.id > 5 AND a.x > g.m")
>>> print(window_joinback(tree, facts).sql())  # doctest: +NORMALIZE_WHITESPACE
SELECT a.id, a.x FROM (SELECT a.id, a.k, a.x, AVG(a.x) OVER (PARTITION BY a.k) AS m FROM t AS a
WHERE a.id > 5 AND NOT a.k IS NULL) AS a WHERE a.x > a.m
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

from optimizers.rewrites.rules.base import EVERY_DIALECT, Facts
from optimizers.rewrites.rules.eager import EXACT
from optimizers.rewrites.rules.simplify import DIALECTS as SIMPLIFY
from optimizers.rewrites.rules.syntax import conjuncts, inside, join_columns, not_null

# every engine the rewriter reads has window functions over these aggregates, with the same partitions as its
# GROUP BY: PostgreSQL, MariaDB from 10.2, MySQL from 8.0 (an older server would refuse the form, not misread it)
DIALECTS = EVERY_DIALECT

AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)
# types whose equal values are the same value (a group's key may stand for a row's)
SAME_VALUE = ("smallint", "integer", "int", "int2", "int4", "int8", "bigint", "tinyint", "mediumint", "date")


class _Refused(Exception):
    """A part of the statement the rule does not rewrite (raised from inside a tree transform)."""


def _type(facts: Facts, table: str, column: str) -> str:
    return facts.schema.get(table, {}).get(column, "").lower().split("(")[0].strip()


def _sides(tree: exp.Select):
    """(the base table, the derived table, their join) of a SELECT over exactly those two, inner-joined on ON."""
    frm, joins = tree.args.get("from_"), tree.args.get("joins") or []
    if frm is None or len(joins) != 1:
        return None
    join = joins[0]
    if join.side or (join.kind or "").upper() not in ("", "INNER") or join.args.get("using") \
            or join.args.get("method") or not join.args.get("on"):
        return None
    a, g = frm.this, join.this
    if isinstance(a, exp.Subquery) and isinstance(g, exp.Table):
        a, g = g, a
    if not (isinstance(a, exp.Table) and isinstance(g, exp.Subquery)) or a.args.get("catalog"):
        return None
    return a, g, join


def _grouped(g: exp.Subquery, table: exp.Table, facts: Facts):
    """(its alias, its WHERE's conjuncts, grouping columns by output name, aggregate items by output name, the
    alias its FROM names ``table`` under) of a grouped derived table over ``table`` (the same name in the same
    schema) alone; None otherwise."""
    body, alias = g.this, g.args.get("alias")
    if not isinstance(body, exp.Select) or alias is None or alias.columns:
        return None
    if any(body.args.get(k) for k in ("distinct", "having", "order", "limit", "offset", "with_", "joins", "qualify")):
        return None
    frm, group = body.args.get("from_"), body.args.get("group")
    if frm is None or not isinstance(frm.this, exp.Table) or frm.this.name != table.name \
            or frm.this.text("db") != table.text("db") or frm.this.args.get("catalog") \
            or group is None or not group.expressions:
        return None
    inner = frm.this.alias_or_name
    if not all(isinstance(k, exp.Column) and k.table in (inner, "") for k in group.expressions):
        return None
    grouping = {k.name for k in group.expressions}
    keys, aggs = {}, {}
    for item in body.expressions:
        expr = item.unalias() if isinstance(item, exp.Alias) else item
        name = item.alias_or_name
        if isinstance(expr, exp.Column):
            if expr.name not in grouping or expr.table not in (inner, ""):
                return None
            keys[name] = expr.name
            continue
        if not isinstance(item, exp.Alias) or expr.find(exp.Select, exp.Window, exp.Anonymous) \
                or not expr.find(exp.AggFunc):
            return None
        for agg in expr.find_all(exp.AggFunc):
            arg = agg.this
            if not isinstance(agg, AGGREGATES) or agg.find(exp.Distinct) or not (
                    isinstance(arg, exp.Star) and isinstance(agg, exp.Count)
                    or isinstance(arg, exp.Column) and arg.table in (inner, "")):
                return None
            if isinstance(agg, (exp.Sum, exp.Avg)) and _type(facts, table.name, arg.name) not in EXACT:
                return None
        if any(c.table not in (inner, "") or not c.find_ancestor(exp.AggFunc) for c in expr.find_all(exp.Column)):
            return None
        aggs[name] = _to(expr, inner, None)
    if set(keys.values()) != grouping:
        return None
    where = [_to(c, inner, None) for c in conjuncts(body)]
    return alias.name, where, keys, aggs, inner


def _to(node: exp.Expression, inner: str, outer: str | None) -> exp.Expression:
    """``node`` with the columns of ``inner`` (or unqualified) read as ``outer``'s (None: unqualified)."""
    def move(n):
        if isinstance(n, exp.Column) and n.table in (inner, ""):
            return exp.column(n.name, table=outer) if outer else exp.column(n.name)
        return n
    return node.copy().transform(move)


def _cte_inlined(tree: exp.Select) -> exp.Select | None:
    """``tree`` with a CTE that is read once, as a joined source, written as a derived table there; None when it
    has none. The CTE's name may not be a table the statement reads otherwise."""
    with_ = tree.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return None
    new = tree.copy()
    ctes = list(new.args["with_"].expressions)
    for k, cte in enumerate(ctes):
        if not isinstance(cte.this, exp.Select) or cte.args.get("materialized") is not None \
                or cte.args["alias"].columns:
            continue
        readings = [t for t in new.find_all(exp.Table) if not t.args.get("db") and t.name == cte.alias
                    and not any(t is n for n in cte.walk())]
        sources = [j.this for j in new.args.get("joins") or ()] + [new.args["from_"].this] \
            if new.args.get("from_") else []
        if len(readings) != 1 or not any(readings[0] is s for s in sources):
            continue
        t = readings[0]
        t.replace(exp.Subquery(this=cte.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(t.alias_or_name))))
        rest = ctes[:k] + ctes[k + 1:]
        if rest:
            new.args["with_"].set("expressions", rest)
        else:
            new.set("with_", None)
        return new
    return None


def window_joinback(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """A grouped derived table (or a CTE read once) over the same table, joined back on every grouping column,
    as window aggregates over that table's rows partitioned by the grouping columns (one pass)."""
    if tree.args.get("with_"):
        inlined = _cte_inlined(tree)
        if inlined is None:
            return None
        tree = inlined
    found = _sides(tree)
    if found is None:
        return None
    table, sub, join = found
    t, a = table.name, table.alias_or_name
    names = {c.name for c in (tree.args["with_"].expressions if tree.args.get("with_") else ())}
    if t in names or t not in facts.schema:
        return None
    grouped = _grouped(sub, table, facts)
    if grouped is None:
        return None
    g, inner_where, keys, aggs, _ = grouped
    columns = {c.lower() for c in facts.schema[t]}
    if g == a or any(n.lower() in columns for n in aggs):
        return None
    # the ON: a.k = g.k per grouping column
    pairs = join_columns(join.args["on"], a, g)
    if pairs is None or any(keys.get(name) != col.name for col, name in pairs):
        return None
    if {col.name for col, _ in pairs} != set(keys.values()):
        return None
    # the statement around: only a's and g's columns, no subquery, no star
    outside = [n for n in tree.walk() if not inside(n, sub) and not inside(n, join.args["on"])]
    distinct = tree.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        return None
    if any(isinstance(n, exp.Select) and n is not tree for n in outside) or any(
            isinstance(n, exp.Star) and not isinstance(n.parent, exp.Count) for n in outside):
        return None
    read: set[str] = set()
    used: set[str] = set()  # the aggregates read

    def around(n):
        if not isinstance(n, exp.Column):
            return n
        name, owner = n.name, n.table
        if not owner:
            in_t, in_g = name in facts.schema[t], name in aggs or name in keys
            if in_t and in_g:
                raise _Refused
            owner = a if in_t else g if in_g else None
            if owner is None:
                return n  # a select item's name (ORDER BY n)
        if owner == a:
            read.add(name)
            return exp.column(name, table=a)
        if owner == g and name in aggs:
            used.add(name)
            return exp.column(name, table=a)
        if owner == g and name in keys and _type(facts, t, keys[name]) in SAME_VALUE:
            read.add(keys[name])
            return exp.column(keys[name], table=a)
        raise _Refused

    mine = [c for c in conjuncts(tree) if {x.table for x in c.find_all(exp.Column)} == {a}]
    inner = {p for w in inner_where for p in _pieces(_to(w, "", a), facts.dialect)}
    if not inner <= {p for c in mine for p in _pieces(c, facts.dialect)}:
        return None  # the outer rows are not all rows the derived table groups
    kept = {c.sql() for c in mine if _pieces(c, facts.dialect) <= inner}  # applied below the window
    new = tree.copy()
    new.set("joins", None)
    try:
        items = []
        for item in tree.expressions:
            moved = item.copy().transform(around)
            if isinstance(item, exp.Column) and moved.name != item.name:
                moved = exp.alias_(moved, item.name)
            elif not isinstance(item, (exp.Column, exp.Alias)) and moved != item:
                raise _Refused  # its name is its text on MariaDB: reading g's columns, it would change
            items.append(moved)
        new.set("expressions", items)
        outer = [c.copy().transform(around) for c in conjuncts(tree) if c.sql() not in kept]
        outputs = {i.alias for i in tree.expressions if isinstance(i, exp.Alias)}
        for key in ("group", "having"):
            if tree.args.get(key) is not None:
                new.set(key, tree.args[key].copy().transform(around))
        if tree.args.get("order") is not None:  # an unqualified name there is a select item's first
            new.set("order", tree.args["order"].copy().transform(
                lambda n: n if isinstance(n, exp.Column) and not n.table and n.name in outputs else around(n)))
    except _Refused:
        return None
    new.set("where", exp.Where(this=exp.and_(*outer)) if outer else None)
    partition = [exp.column(k, table=a) for k in sorted(set(keys.values()))]
    body_where = [_to(w, "", a) for w in inner_where]
    aliases = {a: (t, False)}
    body_where += [exp.Not(this=exp.Is(this=k.copy(), expression=exp.Null())) for k in partition
                   if not not_null(k, aliases, facts, body_where)]
    windows = [exp.alias_(_to(expr, "", a).transform(
        lambda n: exp.Window(this=n.copy(), partition_by=[p.copy() for p in partition])
        if isinstance(n, exp.AggFunc) else n), name) for name, expr in aggs.items() if name in used]
    listed = [exp.column(c, table=a) for c in facts.schema[t] if c in read | set(keys.values())]
    body = exp.select(*listed, *windows).from_(table.copy())
    if body_where:
        body = body.where(exp.and_(*body_where), copy=False)
    new.set("from_", exp.From(this=exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(a)))))
    return new


def _pieces(condition: exp.Expression, dialect: str) -> frozenset[str]:
    """The conjuncts ``condition`` comes to (as ``rules.simplify`` writes it where it holds: the replacing rule may
    have rewritten the outer WHERE, not the derived table's), for comparing one filter with another."""
    if SIMPLIFY.why_not(dialect) is None:
        condition = simplify(condition.copy(), dialect=dialect)
    parts = condition.flatten() if isinstance(condition, exp.And) else [condition]
    return frozenset(p.unnest().sql(dialect=dialect) for p in parts)
