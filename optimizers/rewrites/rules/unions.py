"""Predicates moved across UNION ALL branches: a statement-level rule (``rules.statement``) that filters each
branch of a union instead of the union's rows.

``push_into_unions``: a filter on a derived table or CTE that is a UNION ALL (``SELECT ... FROM (SELECT c.x AS k
... FROM c UNION ALL SELECT p.y ... FROM p) AS u WHERE u.k BETWEEN 1 AND 9``) is written into each branch, over
that branch's column at the same position (``c.x BETWEEN 1 AND 9``, ``p.y BETWEEN 1 AND 9``), so each branch can
use its own index and no row is made only to be dropped. On a derived table the filter then leaves the outer WHERE;
where a branch holds it already it is not added again, and where every branch holds every filter there is nothing
to do (no rewrite). A CTE read twice or more (PostgreSQL materializes it: computed whole, then filtered) gets the OR
of its readings' filters in each branch; every reading must be filtered (one that is not needs every row), and the
readings keep their filters.

Meaning kept:

- a row of the union is a row of one branch with the branch's values at each position, so a condition on the
  union's row is the same condition on the branch's row, NULLs included (WHERE keeps a row only where it is true,
  in or out of the branch);
- positions, not names, map the columns (the union's names are its first branch's, or the alias's column list);
- a filtered column must be a plain table column of the same declared type in every branch: a union of an integer
  and a text column has one type, and ``u.k = '01'`` compares as text there but as a number in the integer branch
  (and a type widened by the union changes arithmetic); other columns may be anything;
- not under ORDER BY / LIMIT on the union or in a branch, window, set-returning or volatile items, DISTINCT ON,
  or a filter with a subquery or a volatile function; a branch with aggregates only under GROUP BY, the filtered
  columns among its grouping columns;
- UNION (distinct), a DISTINCT branch and a grouped branch keep one row of several equal ones: there only a plain
  column predicate moves (comparisons, BETWEEN, IN, IS NULL of columns and constants, AND / OR / NOT): it gives the
  same answer for every row the engine takes as equal (the equality DISTINCT uses is the one it compares with; under
  a case-blind collation 'a' and 'A' are both kept or both dropped), where a function of the value (``upper``, a
  cast to text of 1.0 and 1.00) need not.

``union_to_or``: a UNION (distinct) of one table's filters, the same items in each branch, as one SELECT DISTINCT
of the table under the OR of the filters (its docstring says why it keeps the rows).

Both hold in every dialect (``DIALECTS``): checked by execution on PostgreSQL and MariaDB
(``tests/optimizers/rewrites/rules/test_shapes.py``).

>>> import sqlglot
>>> from optimizers.rewrites.rules.base import Facts
>>> facts = Facts({"c": {"x": "integer", "v": "numeric"}, "p": {"y": "integer"}}, frozenset(), {},
...               dialect="postgres")
>>> tree = sqlglot.parse_one("SELECT u.k, count(*) AS n FROM (SELECT c.x AS k FROM c UNION ALL SELECT p.y FROM p) "
...                          "AS u WHERE u.k BETWEEN 1 AND 9 GROUP BY u.k")
>>> print(push_into_unions(tree, facts).sql())  # doctest: +NORMALIZE_WHITESPACE
SELECT u.k, COUNT(*) AS n FROM (SELECT c.x AS k FROM c WHERE c.x BETWEEN 1 AND 9 UNION ALL SELECT p.y FROM p
WHERE p.y BETWEEN 1 AND 9) AS u GROUP BY u.k
>>> tree = sqlglot.parse_one("SELECT c.x FROM c WHERE c.v > 2 UNION SELECT d.x FROM c AS d WHERE d.x IS NULL "
...                          "ORDER BY 1 LIMIT 5")
>>> print(union_to_or(tree, facts).sql())
SELECT DISTINCT c.x FROM c WHERE (c.v > 2) OR (c.x IS NULL) ORDER BY 1 LIMIT 5
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.rules.base import EVERY_DIALECT, Facts
from optimizers.rewrites.rules.ctes import _readings, _volatile
from optimizers.rewrites.rules.syntax import aliases_of, conjuncts, with_conjuncts
from optimizers.rewrites.sql.expressions import output_name, set_returning

DIALECTS = EVERY_DIALECT  # the dialects these rules keep a statement's meaning in (``rules.base.Dialects``)

# the nodes of a plain column predicate: one that gives the same answer for every value DISTINCT takes as equal
PLAIN = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In, exp.Is, exp.And, exp.Or, exp.Not,
         exp.Paren, exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Neg, exp.DataType)


def _plain(pred: exp.Expression) -> bool:
    return all(isinstance(n, PLAIN) or isinstance(n, exp.Cast) and isinstance(n.this, exp.Literal)
               for n in pred.walk())


def _branches(node: exp.Expression) -> tuple[list[exp.Select], bool] | None:
    """The branches of a chain of UNIONs (left to right) and whether any UNION is distinct; None for another
    query, a UNION ordered or limited, or a branch that is not a plain SELECT."""
    if isinstance(node, exp.Select):
        return [node], False
    if not isinstance(node, exp.Union) or any(node.args.get(k) for k in ("order", "limit", "offset", "with_")):
        return None
    left, right = _branches(node.this), _branches(node.expression)
    if left is None or right is None:
        return None
    return left[0] + right[0], left[1] or right[1] or bool(node.args.get("distinct"))


def _columns(branch: exp.Select, facts: Facts) -> tuple[list[tuple[exp.Expression, str | None]], bool] | None:
    """Per item of ``branch``: (its expression, the declared type where it is a plain column of a base table,
    else None), and whether the branch keeps one row of equal ones (DISTINCT, GROUP BY); None for a branch no
    filter may enter."""
    if any(branch.args.get(k) for k in ("limit", "offset", "order", "with_", "having")):
        return None
    distinct = branch.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        return None
    if any(e.find(exp.Window) or set_returning(e) or _volatile(e) for e in branch.expressions):
        return None
    group = branch.args.get("group")
    keys = list(group.expressions) if group else None
    if keys is None and any(e.find(exp.AggFunc) for e in branch.expressions):
        return None
    aliases = aliases_of(branch)
    out = []
    for item in branch.expressions:
        expr = item.unalias() if isinstance(item, exp.Alias) else item
        kind = None
        if isinstance(expr, exp.Column) and aliases is not None and (keys is None or expr in keys):
            owner = expr.table or (next(iter(aliases)) if len(aliases) == 1 else None)
            if owner in aliases:
                kind = facts.schema.get(aliases[owner][0], {}).get(expr.name)
        out.append((expr, kind.lower().replace(" ", "") if kind else None))
    return out, distinct is not None or keys is not None


def _mapped(preds: list[exp.Expression], alias: str, names: list[str], branches, dedup: bool):
    """Per branch, ``preds`` (over ``alias``'s columns) written over the branch's columns at the same position;
    None where one may not move."""
    out = [[] for _ in branches]
    for pred in preds:
        cols = list(pred.find_all(exp.Column))
        if not cols or any(c.table != alias or c.name not in names for c in cols) or pred.find(exp.Select) \
                or _volatile(pred) or dedup and not _plain(pred):
            return None
        for n in {names.index(c.name) for c in cols}:
            kinds = {b[0][n][1] for b in branches}
            if len(kinds) != 1 or None in kinds:
                return None
        for k, (items, _) in enumerate(branches):
            out[k].append(pred.copy().transform(
                lambda x, items=items: items[names.index(x.name)][0].copy() if isinstance(x, exp.Column) else x))
    return out


def _union_of(body: exp.Expression, facts: Facts, names: list[str] | None):
    """(branches, each branch's columns, the union's column names, whether it keeps one row of equal ones) of a
    union a filter may enter; None otherwise."""
    found = _branches(body)
    if found is None or len(found[0]) < 2:
        return None
    selects, dedup = found
    columns = [_columns(b, facts) for b in selects]
    if any(c is None for c in columns):
        return None
    names = names or [output_name(e, facts.dialect) for e in selects[0].expressions]
    return selects, columns, names, dedup or any(c[1] for c in columns)


def _filtered(union: exp.Expression, selects, parts) -> bool:
    """Each branch of ``union`` (its SELECTs ``selects``, in order) with the predicates ``parts`` of its own added
    to its WHERE (those it holds already left out); whether any was added."""
    added = False
    for select, mine in zip(selects, parts):
        have = {c.sql() for c in conjuncts(select)}
        new = [p for p in mine if p.sql() not in have]
        if new:
            select.replace(with_conjuncts(select, conjuncts(select) + new))
            added = True
    return added


def push_into_unions(tree: exp.Select, facts: Facts) -> exp.Select | None:
    """A filter on a UNION derived table moved into each branch (over its column at the same position); the OR of
    its readings' filters into each branch of a UNION CTE every reading filters."""
    with_ = tree.args.get("with_")
    if with_ is not None and any(c.alias in facts.schema for c in with_.expressions):
        return None  # a CTE named as a table: a branch's columns would not be the catalog's
    new = tree.copy()
    changed = _into_derived(new, facts)
    with_ = new.args.get("with_")
    if with_ is not None and not with_.args.get("recursive"):
        changed = _into_ctes(new, facts) or changed
    return new if changed else None


def _outer_joins(select: exp.Select) -> bool:
    return any((j.side or "").upper() in ("RIGHT", "FULL") for j in select.args.get("joins") or ())


def _into_derived(tree: exp.Select, facts: Facts) -> bool:
    if _outer_joins(tree):
        return False
    sources = [tree.args["from_"].this] if tree.args.get("from_") else []
    sources += [j.this for j in tree.args.get("joins") or () if not j.side]
    changed = False
    for sub in sources:
        alias = sub.args.get("alias") if isinstance(sub, exp.Subquery) else None
        if alias is None:
            continue
        found = _union_of(sub.this, facts, [c.name for c in alias.columns] or None)
        if found is None:
            continue
        selects, columns, names, dedup = found
        parts = conjuncts(tree)
        mine = [c for c in parts if {x.table for x in c.find_all(exp.Column)} == {alias.name}]
        moved = [c for c in mine if _mapped([c], alias.name, names, columns, dedup) is not None]
        if not moved:
            continue
        if _filtered(sub.this, selects, _mapped(moved, alias.name, names, columns, dedup)):
            changed = True  # every branch holds them now: the outer WHERE need not
            kept = [c for c in parts if not any(c is m for m in moved)]
            tree.set("where", with_conjuncts(tree, kept).args.get("where"))
    return changed


def _into_ctes(tree: exp.Select, facts: Facts) -> bool:
    changed = False
    ctes = list(tree.args["with_"].expressions)
    for k, cte in enumerate(ctes):
        if cte.args.get("materialized") is not None or _volatile(cte.this):
            continue
        found = _union_of(cte.this, facts, [c.name for c in cte.args["alias"].columns] or None)
        if found is None:
            continue
        selects, columns, names, dedup = found
        earlier = {id(n) for c in ctes[:k + 1] for n in c.walk()}
        readings = [t for t in _readings(tree, cte.alias) if id(t) not in earlier]
        filters = []
        for table in readings:
            holder = table.parent.parent if isinstance(table.parent, (exp.From, exp.Join)) else None
            if isinstance(table.parent, exp.Join) and table.parent.side:
                break
            alias = table.alias_or_name
            mine = [c for c in (conjuncts(holder) if isinstance(holder, exp.Select) else [])
                    if {x.table for x in c.find_all(exp.Column)} == {alias}]
            mapped = _mapped(mine, alias, names, columns, dedup) if mine and not _outer_joins(holder) else None
            if mapped is None:
                break  # a reading not filtered, or by what may not move: it needs every row
            filters.append(mapped)
        else:
            if not filters:
                continue
            parts = []
            for b in range(len(selects)):
                each = list({exp.and_(*f[b]).sql(): exp.and_(*f[b]) for f in filters}.values())
                parts.append([each[0] if len(each) == 1 else exp.or_(*[exp.Paren(this=x) for x in each])])
            changed = _filtered(cte.this, selects, parts) or changed
    return changed


def _chain(node: exp.Expression, top: bool = True) -> list[exp.Select] | None:
    """The branches of a chain of UNIONs (distinct, each of them) of plain SELECTs; the outermost may order and
    limit, no other."""
    if isinstance(node, exp.Select):
        return [node]
    if not isinstance(node, exp.Union) or not node.args.get("distinct") or node.args.get("with_") or (
            not top and any(node.args.get(k) for k in ("order", "limit", "offset"))):
        return None
    left, right = _chain(node.this, False), _chain(node.expression, False)
    return None if left is None or right is None else left + right


def union_to_or(tree: exp.Expression, facts: Facts) -> exp.Select | None:
    """A UNION (distinct) of SELECTs of one table alone, with the same items, each its own WHERE, as one SELECT
    DISTINCT of that table under the OR of the WHEREs (one scan instead of one per branch). A row of the table is
    in the UNION's input exactly when one branch's WHERE is true for it (NULL is not true in either form), and both
    keep one row per distinct item values; which of several equal values (1.0 and 1.00, 'a' and 'A' under a
    case-blind collation) is shown is the engine's choice in both. Not for UNION ALL (a row true in two branches is
    there twice), INTERSECT or EXCEPT, nor for branches that group, aggregate, window, limit, or hold a subquery or
    a volatile function. The UNION's ORDER BY and LIMIT (by position or output name) stay around the new SELECT."""
    branches = _chain(tree)
    if branches is None or len(branches) < 2:
        return None
    first = branches[0]
    table = first.args.get("from_").this if first.args.get("from_") else None
    if not isinstance(table, exp.Table):
        return None
    wheres, items = [], None
    for b in branches:
        frm = b.args.get("from_")
        if frm is None or not isinstance(frm.this, exp.Table) or frm.this.name != table.name \
                or frm.this.args.get("db") != table.args.get("db") or b.args.get("joins") \
                or any(b.args.get(k) for k in ("group", "having", "order", "limit", "offset", "with_", "laterals")):
            return None
        distinct = b.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            return None
        if any(n is not b and isinstance(n, (exp.Select, exp.Subquery)) for n in b.walk()) or _volatile(b):
            return None
        if any(e.find(exp.AggFunc, exp.Window) or set_returning(e) for e in b.expressions):
            return None
        mine = frm.this.alias_or_name
        renamed = [_renamed(e, mine, table.alias_or_name) for e in b.expressions]
        if items is None:
            items = [e.sql() for e in renamed]
        elif [e.sql() for e in renamed] != items:
            return None
        where = b.args.get("where")
        wheres.append(_renamed(where.this, mine, table.alias_or_name) if where is not None else None)
    new = first.copy()
    new.set("distinct", exp.Distinct())
    new.set("where", None if any(w is None for w in wheres) else
            exp.Where(this=exp.or_(*[exp.Paren(this=w) for w in wheres])))
    for key in ("order", "limit", "offset"):
        if tree.args.get(key) is not None:
            new.set(key, tree.args[key].copy())
    return new


def _renamed(node: exp.Expression, alias: str, to: str) -> exp.Expression:
    return node.copy().transform(lambda n: exp.column(n.name, table=to) if isinstance(n, exp.Column)
                                 and n.table == alias and alias != to else n)
