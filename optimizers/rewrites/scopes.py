"""Aliases in nested scopes: every alias of a lowered statement must name one relation (the analyses and the
facts stated at lowering are keyed by alias), so a subquery's, a view's or a set operation branch's FROM item whose
alias an enclosing or earlier scope uses is renamed apart, with the columns that refer to it.

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM c WHERE c.id = o.cid)")
>>> unshadow(q, frozenset({"o"}))
>>> q.sql()
'SELECT o_2.id FROM o AS o_2 WHERE EXISTS(SELECT 1 FROM c WHERE c.id = o_2.cid)'
"""

from __future__ import annotations

from sqlglot import exp


def unshadow(q: exp.Select, outer: frozenset[str]) -> None:
    """Rename the tables of ``q``'s own FROM whose alias an enclosing scope uses, and the columns that refer to
    them (in ``q`` and in its subqueries that do not define the alias again)."""
    if q.args.get("from_") is None:
        return
    own = [t for t in own_items(q) if isinstance(t, exp.Table) or (isinstance(t, exp.Subquery) and t.alias)]
    taken = set(outer) | {t.alias_or_name for t in q.find_all(exp.Table, exp.Subquery)}
    shadowing = {t.alias_or_name for t in own} & outer
    # the columns that refer to q's relations of those aliases, found before any is renamed
    columns = [c for c in q.find_all(exp.Column) if c.table in shadowing and _scope_of(c, c.table) is q]
    renames = {}
    for t in own:
        if t.alias_or_name in shadowing:
            n = 2
            while f"{t.alias_or_name}_{n}" in taken:
                n += 1
            renames[t.alias_or_name] = f"{t.alias_or_name}_{n}"
            taken.add(renames[t.alias_or_name])
            head = t.args.get("alias")  # a derived table keeps its column list
            t.set("alias", exp.TableAlias(this=exp.to_identifier(renames[t.alias_or_name]),
                                          columns=[c.copy() for c in head.columns] if head is not None else []))
    for col in columns:
        col.set("table", exp.to_identifier(renames[col.table]))


def own_items(q: exp.Select) -> list[exp.Expression]:
    """The FROM items of ``q`` (its FROM and each JOIN's)."""
    frm = q.args.get("from_")
    return [frm.this, *(j.this for j in q.args.get("joins") or [])] if frm is not None else []


def _scope_of(col: exp.Column, alias: str) -> exp.Select | None:
    """The innermost SELECT around ``col`` whose FROM defines ``alias`` (where the column's relation is)."""
    scope = col.find_ancestor(exp.Select)
    while scope is not None and not any(t.alias_or_name == alias for t in own_items(scope)):
        scope = scope.find_ancestor(exp.Select)
    return scope
