"""Semi- and anti-joins from IN and NOT IN, with the right NULL semantics: statement-level rules
(``rules.statement``) over a SELECT's WHERE conjuncts, written so PostgreSQL and MariaDB plan them as joins.

- ``correlated_in_to_exists``: ``x IN (SELECT y FROM f WHERE w)`` whose subquery reads the outer query is
  ``EXISTS (SELECT 1 FROM f WHERE w AND y = x)``: as a WHERE conjunct a NULL and a false IN both drop the row, so
  the two keep the same rows; PostgreSQL pulls an uncorrelated IN up into a semi-join but runs a correlated one as a
  subplan per outer row, while the EXISTS becomes a (hash) semi-join.
- ``not_in_to_not_exists``: ``x NOT IN (SELECT y FROM f WHERE w)`` is not an anti-join when x or y can be NULL (a
  NULL y makes NOT IN drop every row without a match; a NULL x drops its row unless the subquery is empty). It is
  ``NOT EXISTS (... AND y = x)`` [``AND NOT EXISTS (... AND y IS NULL)`` unless y is never NULL] [``AND (x IS NOT
  NULL OR NOT EXISTS (SELECT 1 FROM f WHERE w))`` unless x is never NULL]: the anti-join the planner can hash, and
  where y may be NULL a check it evaluates once (uncorrelated) or as a second anti-join. PostgreSQL never runs NOT
  IN as an anti-join: a hashed subplan, or over a large subquery a plain one, scanning it once per outer row.

- ``exists_to_left_join``: an ``[NOT] EXISTS (SELECT ... FROM f WHERE f.y = x AND w)`` inside an OR (or NOT) of
  WHERE, whose correlation is equalities alone, is ``f_k.y IS [NOT] NULL`` over ``LEFT JOIN (SELECT f.y FROM f
  WHERE w GROUP BY f.y) AS f_k ON f_k.y = x``: grouped on its join columns the derived table meets each row at most
  once, so the join keeps the rows as they are, and a match is there exactly where the EXISTS is true (its test
  is never NULL either). Inside an OR neither engine makes a semi-join of the EXISTS (a subplan per row, which
  under ORDER BY ... LIMIT may scan the subquery's table for each row); the LEFT JOIN is one hash join.

The IN rules rewrite only a WHERE conjunct of the statement's top SELECT, over a subquery whose FROM holds base tables and whose rows are
plain (no grouping, aggregate, LIMIT, window or DISTINCT ON), and whose aliases the compared expression does not
read (it would be captured). One column (NOT IN of a row of columns only where every column is never NULL).

>>> from optimizers.rewrites.rules.base import Facts
>>> facts = Facts({"t": {"id": "int", "k": "int"}, "u": {"id": "int", "k": "int"}}, frozenset({("t", "id")}), {},
...               dialect="postgres")
>>> tree = parse("SELECT t.id FROM t WHERE t.id NOT IN (SELECT u.k FROM u WHERE u.id > 2)", "postgres")
>>> not_in_to_not_exists(tree, facts).sql()
'SELECT t.id FROM t WHERE NOT EXISTS(SELECT 1 FROM u WHERE u.id > 2 AND u.k = t.id) AND NOT EXISTS(SELECT 1 FROM u \
WHERE u.id > 2 AND u.k IS NULL)'
>>> tree = parse("SELECT t.id FROM t WHERE t.k IN (SELECT u.k FROM u WHERE u.id = t.id)", "postgres")
>>> correlated_in_to_exists(tree, facts).sql()
'SELECT t.id FROM t WHERE EXISTS(SELECT 1 FROM u WHERE u.id = t.id AND u.k = t.k)'
>>> tree = parse("SELECT t.id FROM t WHERE t.k = 1 OR EXISTS (SELECT 1 FROM u WHERE u.k = t.id AND u.id > 2)",
...              "postgres")
>>> exists_to_left_join(tree, facts).sql()
'SELECT t.id FROM t LEFT JOIN (SELECT u.k AS y1 FROM u WHERE u.id > 2 GROUP BY u.k) AS u_k1 ON u_k1.y1 = t.id \
WHERE t.k = 1 OR NOT u_k1.y1 IS NULL'
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT, Facts
from optimizers.rewrites.rules.syntax import (aliases_of, conjuncts, correlated, not_null, parse, plain_subquery,
                                              reads, with_conjuncts)

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

__all__ = ["DIALECTS", "correlated_in_to_exists", "exists_to_left_join", "not_in_to_not_exists", "parse"]


def _pairs(left: exp.Expression, sub: exp.Select) -> list[tuple[exp.Expression, exp.Expression]] | None:
    """(x, y) per compared column: ``x IN (SELECT y ...)`` or ``(x1, x2) IN (SELECT y1, y2 ...)``; None when the
    sides do not match up or a side holds a subquery."""
    xs = left.expressions if isinstance(left, exp.Tuple) else [left]
    ys = [e.unalias() if isinstance(e, exp.Alias) else e for e in sub.expressions]
    if len(xs) != len(ys) or any(x.find(exp.Select, exp.Subquery) for x in xs):
        return None
    if reads(exp.Tuple(expressions=[x.copy() for x in xs])) & set(aliases_of(sub) or {}):
        return None  # the outer expression reads an alias the subquery defines again: it would be captured
    if any(isinstance(y, exp.Star) or y.find(exp.Star) for y in ys):
        return None
    return list(zip(xs, ys))


def _exists(sub: exp.Select, extra: list[exp.Expression], negated: bool) -> exp.Expression:
    """``[NOT] EXISTS (SELECT 1 FROM <sub's FROM> WHERE <sub's WHERE> AND extra)``."""
    body = with_conjuncts(sub, conjuncts(sub) + extra)
    body.set("expressions", [exp.Literal.number(1)])
    body.set("distinct", None)
    node = exp.Exists(this=body)
    return exp.Not(this=node) if negated else node


def _in_of(node: exp.Expression) -> tuple[exp.In, exp.Select] | None:
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        sub = plain_subquery(node.args["query"])
        if sub is not None:
            return node, sub
    return None


def correlated_in_to_exists(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """A correlated ``x IN (SELECT y FROM f WHERE w)`` in WHERE becomes ``EXISTS (SELECT 1 FROM f WHERE w AND
    y = x)``: the same rows (a NULL and a false IN both drop the row there), planned as a semi-join instead of a
    subplan per outer row."""
    parts, changed = conjuncts(tree), False
    for i, part in enumerate(parts):
        found = _in_of(part)
        if found is None or not correlated(found[1]):
            continue
        node, sub = found
        pairs = _pairs(node.this, sub)
        if pairs is None:
            continue
        parts[i] = _exists(sub, [exp.EQ(this=y.copy(), expression=x.copy()) for x, y in pairs], False)
        changed = True
    return with_conjuncts(tree, parts) if changed else None


def not_in_to_not_exists(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """``x NOT IN (SELECT y FROM f WHERE w)`` in WHERE becomes the anti-join ``NOT EXISTS (... AND y = x)``, with
    what NOT IN's NULLs add: ``NOT EXISTS (... AND y IS NULL)`` unless y is never NULL, and ``(x IS NOT NULL OR
    NOT EXISTS (SELECT 1 FROM f WHERE w))`` unless x is never NULL (the catalog's NOT NULL, no LEFT JOIN, or a
    strict condition beside it)."""
    outer = aliases_of(tree)
    if outer is None:
        return None
    parts, changed = conjuncts(tree), False
    out: list[exp.Expression] = []
    for part in parts:
        found = _in_of(part.this.unnest()) if isinstance(part, exp.Not) else None
        pairs = _pairs(found[0].this, found[1]) if found else None
        if pairs is None:
            out.append(part)
            continue
        sub = found[1]
        inner = aliases_of(sub) or {}
        rest = [p for p in parts if p is not part]
        x_ok = [not_null(x, outer, facts, rest) for x, _ in pairs]
        y_ok = [not_null(y, inner, facts, conjuncts(sub)) for _, y in pairs]
        if len(pairs) > 1 and not (all(x_ok) and all(y_ok)):
            out.append(part)  # a row of columns NOT IN: its NULL semantics are per column; left as written
            continue
        x, y = pairs[0]
        out.append(_exists(sub, [exp.EQ(this=yy.copy(), expression=xx.copy()) for xx, yy in pairs], True))
        if len(pairs) == 1 and not y_ok[0]:
            out.append(_exists(sub, [exp.Is(this=y.copy(), expression=exp.Null())], True))
        if len(pairs) == 1 and not x_ok[0]:
            out.append(exp.Paren(this=exp.Or(this=exp.Not(this=exp.Is(this=x.copy(), expression=exp.Null())),
                                              expression=_exists(sub, [], True))))
        changed = True
    return with_conjuncts(tree, out) if changed else None


def _correlation(sub: exp.Select) -> tuple[list[tuple[exp.Column, exp.Expression]], list[exp.Expression]] | None:
    """A subquery's WHERE as (inner column, outer expression) equalities and the conjuncts that read only its own
    aliases; None when any other conjunct reads the outer query."""
    own = set(aliases_of(sub) or {})
    pairs, rest = [], []
    for part in conjuncts(sub):
        if reads(part) <= own:
            rest.append(part)
            continue
        if isinstance(part, exp.EQ):
            for inner, outer in ((part.this, part.expression), (part.expression, part.this)):
                if isinstance(inner, exp.Column) and inner.table in own and reads(outer) and not reads(outer) & own \
                        and not outer.find(exp.Select):
                    pairs.append((inner, outer))
                    break
            else:
                return None
            continue
        return None
    return (pairs, rest) if pairs else None


def exists_to_left_join(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """An [NOT] EXISTS inside an OR or NOT of WHERE, correlated by equalities alone, as a LEFT JOIN to its subquery
    grouped on the correlated columns (each row meets at most one of its rows) and ``IS [NOT] NULL`` on the join's
    column."""
    outer = aliases_of(tree)
    if outer is None or tree.args.get("where") is None:
        return None
    new, joins, taken = tree.copy(), [], set(outer)
    top = {id(p) for p in conjuncts(new)}
    for node in list(new.args["where"].find_all(exp.Exists)):
        parent = node.parent.unnest() if isinstance(node.parent, exp.Paren) else node.parent
        if id(node) in top or (isinstance(parent, exp.Not) and id(parent) in top) or not node.find_ancestor(exp.Or):
            continue  # a conjunct of its own: already a semi- or anti-join
        sub = plain_subquery(node.this)
        found = _correlation(sub) if sub is not None else None
        if found is None or set(aliases_of(sub)) & taken:
            continue
        pairs, rest = found
        name = next(f"{sub.args['from_'].this.alias_or_name}_k{n}" for n in range(1, 99)
                    if f"{sub.args['from_'].this.alias_or_name}_k{n}" not in taken)
        taken |= {name, *aliases_of(sub)}
        body = with_conjuncts(sub, rest)
        body.set("expressions", [exp.alias_(col.copy(), f"y{n + 1}") for n, (col, _) in enumerate(pairs)])
        body.set("distinct", None)
        body.set("group", exp.Group(expressions=[col.copy() for col, _ in pairs]))
        on = exp.and_(*[exp.EQ(this=exp.column(f"y{n + 1}", table=name), expression=x.copy())
                        for n, (_, x) in enumerate(pairs)])
        joins.append(exp.Join(this=exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(name))),
                              side="LEFT", on=on))
        test = exp.Is(this=exp.column("y1", table=name), expression=exp.Null())
        negated = isinstance(parent, exp.Not)
        (parent if negated else node).replace(test if negated else exp.Not(this=test))
    if not joins:
        return None
    new.set("joins", [*(new.args.get("joins") or []), *joins])
    return new
