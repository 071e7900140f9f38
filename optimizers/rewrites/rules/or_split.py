"""OR-of-joins split: a statement-level rule (``rules.statement``) that turns a disjunction no join method can use
into a UNION ALL of branches each planned on its own.

``or_split``: a SELECT (no DISTINCT, grouping, aggregate, window or OFFSET) whose inner join's ON is an OR (``c.a =
p.k OR c.b = p.k``: PostgreSQL and MariaDB can only nest loops over it), or whose WHERE holds an OR with a subquery
or an ORDER BY ... LIMIT (a filter OR an EXISTS: a subplan per row), becomes one branch per disjunct: branch k keeps
the disjunct and ``(d_j) IS NOT TRUE`` for every earlier disjunct j, so each row is taken by exactly one branch (the
first disjunct it makes true) and the UNION ALL returns the rows of the OR, each as often. With ORDER BY (and LIMIT)
the branches are wrapped: each selects the items (and the sort keys) under names of their own, and the SELECT
around them names the items as written, orders and limits. A WHERE OR with neither a subquery nor an
ORDER BY is ``rules.statement``'s ``or_to_union_all``.

>>> import sqlglot
>>> from optimizers.rewrites.rules.base import Facts
>>> facts = Facts({}, frozenset(), {}, dialect="postgres")
>>> tree = sqlglot.parse_one("SELECT p.k, c.v FROM c JOIN p ON c.a = p.k OR c.b = p.k WHERE p.x = 1 "
...                          "ORDER BY p.k, c.v LIMIT 10")
>>> print(or_split(tree, facts).sql())  # doctest: +NORMALIZE_WHITESPACE
SELECT u._c1 AS k, u._c2 AS v FROM (SELECT p.k AS _c1, c.v AS _c2 FROM c JOIN p ON c.a = p.k WHERE p.x = 1
UNION ALL SELECT p.k AS _c1, c.v AS _c2 FROM c JOIN p ON c.b = p.k WHERE p.x = 1
AND (c.a = p.k) IS NOT TRUE) AS u ORDER BY u._c1, u._c2 LIMIT 10
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT, Facts
from optimizers.rewrites.rules.syntax import aliases_of, conjuncts, with_conjuncts
from optimizers.rewrites.sql.expressions import output_name

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)


def _not_true(d: exp.Expression) -> exp.Expression:
    return exp.Is(this=exp.Paren(this=d.copy()), expression=exp.Not(this=exp.true()))


def _branches(tree: exp.Select) -> list[exp.Select] | None:
    """One SELECT per disjunct of the first inner join's OR ON (else of the first OR in WHERE that holds a
    subquery, or any OR where the statement orders), each guarded by the earlier disjuncts' ``IS NOT TRUE``."""
    for i, join in enumerate(tree.args.get("joins") or ()):
        on = join.args.get("on")
        if on is None or (join.side or "") != "" or not isinstance(on.unnest(), exp.Or):
            continue
        disjuncts = list(on.unnest().flatten())
        out = []
        for k, d in enumerate(disjuncts):
            branch = with_conjuncts(tree, conjuncts(tree) + [_not_true(x) for x in disjuncts[:k]])
            branch.args["joins"][i].set("on", d.copy())
            out.append(branch)
        return out
    parts = conjuncts(tree)
    ordered = tree.args.get("order") is not None
    for i, part in enumerate(parts):
        if isinstance(part, exp.Or) and (ordered or part.find(exp.Select)):
            disjuncts = list(part.flatten())
            rest = parts[:i] + parts[i + 1:]
            return [with_conjuncts(tree, rest + [d] + [_not_true(x) for x in disjuncts[:k]])
                    for k, d in enumerate(disjuncts)]
    return None


def _sort_key(key: exp.Expression, items: list[exp.Expression], names: list[str]) -> int | None:
    """The index of the select item an ORDER BY key names (by position, output name or the same expression)."""
    if isinstance(key, exp.Literal) and key.is_int:
        n = int(key.this) - 1
        return n if 0 <= n < len(items) else None
    if isinstance(key, exp.Column) and not key.table and key.name in names:
        return names.index(key.name)
    for n, item in enumerate(items):
        if (item.unalias() if isinstance(item, exp.Alias) else item) == key:
            return n
    return None


def or_split(tree: exp.Select, facts: Facts) -> exp.Select | exp.Union | None:
    """An OR in an inner join's ON (or in WHERE with a subquery, or where the statement orders) as a UNION ALL of
    one branch per disjunct, each keeping only the rows the earlier disjuncts did not take; ORDER BY and LIMIT
    applied around them."""
    if any(tree.args.get(k) for k in ("distinct", "group", "having", "offset", "with_")) or aliases_of(tree) is None:
        return None
    items = list(tree.expressions)
    if any(e.find(exp.AggFunc, exp.Window, exp.Star) for e in items):
        return None
    order, limit = tree.args.get("order"), tree.args.get("limit")
    if (tree.args.get("where") is None and not tree.args.get("joins")) or (
            order is None and limit is not None):
        return None
    branches = _branches(tree)
    if branches is None:
        return None
    if order is None:
        out = branches[0]
        for b in branches[1:]:
            out = exp.union(out, b, distinct=False)
        return out
    names = [output_name(e, facts.dialect) for e in items]
    exprs = [e.unalias() if isinstance(e, exp.Alias) else e for e in items]
    inner = [exp.alias_(e.copy(), f"_c{n + 1}") for n, e in enumerate(exprs)]
    outer_keys = []
    for key in order.expressions:
        n = _sort_key(key.this, items, names)
        if n is None:  # a sort key not selected: selected under a name of its own
            inner.append(exp.alias_(key.this.copy(), f"_o{len(inner) + 1}"))
            n = len(inner) - 1
        outer_keys.append(_sorted_by(key, exp.column(inner[n].alias, table="u")))
    parts = []
    for b in branches:  # no ORDER BY ... LIMIT inside: a branch limited alone invites a nested loop walking an
        b.set("expressions", [e.copy() for e in inner])  # index in order, probing the other table per row
        b.set("order", None)
        b.set("limit", None)
        parts.append(b)
    union = parts[0]
    for p in parts[1:]:
        union = exp.union(union, p, distinct=False)
    around = exp.select(*[exp.alias_(exp.column(f"_c{n + 1}", table="u"), name, quoted=_quoted(name))
                          for n, name in enumerate(names)])
    around = around.from_(exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier("u"))))
    around.set("order", exp.Order(expressions=outer_keys))
    if limit is not None:
        around.set("limit", limit.copy())
    return around


def _sorted_by(key: exp.Ordered, this: exp.Expression) -> exp.Ordered:
    """``key`` (an ORDER BY item: direction and NULLs as written) over ``this``."""
    out = key.copy()
    out.set("this", this)
    return out


def _quoted(name: str) -> bool:
    return not name.isidentifier() or name.lower() != name
