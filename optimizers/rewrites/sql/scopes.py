"""Aliases in nested scopes: every alias of a lowered statement must name one relation (the analyses and the
facts stated at lowering are keyed by alias), so a subquery's, a view's or a set operation branch's FROM item whose
alias an enclosing or earlier scope uses is renamed apart, with the columns that refer to it; and the output names
a scope was written with, which sqlglot's qualification changes (``names_as_written``), a name written back as the
dialect reads it (``identifier``), and the name a written identifier looks up (``folded``): both from sqlglot's
dialect (its name normalization: PostgreSQL folds unquoted names to lower case, MySQL keeps table names as written;
its generator's reserved words, PostgreSQL's list below where sqlglot has none).

>>> import sqlglot
>>> q = sqlglot.parse_one("SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM c WHERE c.id = o.cid)")
>>> unshadow(q, frozenset({"o"}))
>>> q.sql()
'SELECT o_2.id FROM o AS o_2 WHERE EXISTS(SELECT 1 FROM c WHERE c.id = o_2.cid)'
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect


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


def names_as_written(shell: exp.Select, original: exp.Select) -> exp.Select:
    """``shell`` (qualified) with the output names the branch was written with: an alias the qualification gave
    an unaliased item (``_col_0`` for ``a + 1``) is taken off again, so the statement's columns keep their names."""
    out = shell.copy()
    unname(out, original)
    return out


class AmbiguousNames(ValueError):
    """An alias the statement wrote is also the name the qualification gave an unnamed item: a reference to it
    cannot be told apart."""


def unname(select: exp.Select, original: exp.Select) -> None:
    """``names_as_written`` in place. Where a derived table or CTE names its columns (``AS v(x)``), its first items
    take those names, as written (quoted or not); the rest are unnamed like any. ``AmbiguousNames`` when an ORDER BY,
    DISTINCT ON or GROUP BY reads a generated name that the statement also wrote."""
    if len(select.expressions) != len(original.expressions):
        return
    holder = original.parent
    listed = list(holder.args["alias"].columns) if isinstance(holder, (exp.Subquery, exp.CTE)) and \
        holder.args.get("alias") is not None else []
    explicit = {o.alias for o in original.expressions if isinstance(o, exp.Alias)}
    items, dropped = [], {}
    for n, (q, o) in enumerate(zip(select.expressions, original.expressions), 1):
        written = isinstance(o, exp.Alias) or (isinstance(o, exp.Subquery) and o.args.get("alias") is not None)
        if n <= len(listed):
            q = exp.alias_(q.this if isinstance(q, exp.Alias) else q, listed[n - 1].copy())
        elif isinstance(q, exp.Alias) and not written:
            dropped.setdefault(q.alias, n)
            q = q.this
        elif isinstance(q, exp.Subquery) and q.args.get("alias") is not None and not written:
            dropped.setdefault(q.alias, n)  # a scalar subquery's name sits on the subquery itself
            q.set("alias", None)
        items.append(q)
    # what the qualification pointed at such an alias (ORDER BY 2, DISTINCT ON (1)) points at the position again
    distinct = select.args.get("distinct")
    on = distinct.args.get("on") if distinct is not None else None
    refs = [o.this for o in (select.args.get("order") or exp.Order()).expressions]
    refs += list(on.expressions) if isinstance(on, exp.Tuple) else [on] if on is not None else []
    refs += list((select.args.get("group") or exp.Group()).expressions)
    refs = [r for r in refs if isinstance(r, exp.Column) and not r.table and r.name in dropped]
    if any(r.name in explicit for r in refs):
        raise AmbiguousNames(f"the name {next(r.name for r in refs if r.name in explicit)} is written and also "
                             "given to an item")
    select.set("expressions", items)
    for ref in refs:
        ref.replace(exp.Literal.number(dropped[ref.name]))


# PostgreSQL's reserved key words (the SQL key words appendix: reserved, and reserved but allowed as a function or
# type name): an alias spelled like one was quoted where it was written. sqlglot's PostgreSQL generator lists none,
# its MySQL generator lists MySQL's (``RESERVED_KEYWORDS``): a dialect's reserved words are its generator's and these.
RESERVED = frozenset("""all analyse analyze and any array as asc asymmetric both case cast check collate column
constraint create current_catalog current_date current_role current_time current_timestamp current_user default
deferrable desc distinct do else end except false fetch for foreign from grant group having in initially intersect
into lateral leading limit localtime localtimestamp not null offset on only or order placing primary references
returning select session_user some symmetric system_user table then to trailing true union unique user using
variadic when where window with authorization binary collation concurrently cross current_schema freeze full ilike
inner is isnull join left like natural notnull outer overlaps right similar tablesample verbose""".split())
RESERVED_BY_DIALECT = {"postgres": RESERVED}  # reserved words sqlglot's generator of a dialect does not list


def reserved(dialect: str) -> frozenset[str]:
    """The words ``dialect`` (sqlglot's name) reserves, lower case: its generator's and ``RESERVED_BY_DIALECT``'s.

    >>> "order" in reserved("postgres"), "order" in reserved("mysql"), "rlike" in reserved("mysql")
    (True, True, True)
    """
    words = Dialect.get_or_raise(dialect).generator_class.RESERVED_KEYWORDS
    return frozenset(w.lower() for w in words) | RESERVED_BY_DIALECT.get(dialect, frozenset())


def identifier(name: str, dialect: str) -> exp.Identifier:
    """``name`` as ``dialect`` reads it back: quoted where the dialect's lookup would change it (PostgreSQL folds
    to lower case; MySQL keeps it), where it is not a plain word, or where it is a reserved word (quoting a name
    the lookup keeps never changes it).

    >>> [identifier(n, "postgres").sql(dialect="postgres") for n in ("c", "C", "order line", "order")]
    ['c', '"C"', '"order line"', '"order"']
    >>> [identifier(n, "mysql").sql(dialect="mysql") for n in ("c", "C", "order line", "order", "rlike")]
    ['c', 'C', '`order line`', '`order`', '`rlike`']
    """
    plain = (folded(exp.to_identifier(name), dialect) == name and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name)
             is not None and name.lower() not in reserved(dialect))
    return exp.to_identifier(name, quoted=not plain)


def folded(ident: exp.Identifier, dialect: str) -> str:
    """The name ``ident`` (as written, quoted or not) looks up in ``dialect``: PostgreSQL folds an unquoted name to
    lower case; MySQL (and MariaDB) keep table names as written (case-sensitive on Linux; column names compare
    without case there, which the rewriter never needs to fold).

    >>> [folded(exp.to_identifier(n, quoted=q), d) for n, q, d in (("Orders", False, "postgres"),
    ...  ("Orders", True, "postgres"), ("Orders", False, "mysql"))]
    ['orders', 'Orders', 'Orders']
    """
    return Dialect.get_or_raise(dialect).normalize_identifier(ident.copy()).name
