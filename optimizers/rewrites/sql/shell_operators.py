"""A SELECT's shell as operators of the algebra (``optimizers.rewrites.algebra.terms``): over the FROM / WHERE core, in
the order SQL evaluates them, ``group(keys, having)`` (GROUP BY and HAVING, or an aggregate over all rows: keys
``""``), ``project(items)`` (the select list), ``distinct(on)`` (DISTINCT, ``on`` ``""`` unless DISTINCT ON),
``sort(keys)`` (ORDER BY) and ``limit(clause)`` (LIMIT / OFFSET); a set operation's own ORDER BY and LIMIT sit
above its ``setop``. Each operator holds its clause's text (columns qualified), so it names what it does; emission
(``optimizers.rewrites.sql.emit``) keeps the clauses, as written, whose operators the extracted form still has, and
drops those a rule removed (``rules.shell``).

The facts the analyses start from: a grouping's rows per input row (``group_share``: a tenth without better
knowledge, none for an aggregate over all rows, which gives one row; HAVING keeps a third) or, where the target's
statistics know how many groups its keys make (``groups``, the planner's estimate: ``advisor.tuning.
rewrite_stats``), that count as the grouping's rows; a GROUP BY of one column is unique on it (``group_key``); a
LIMIT's rows at most (``limit_cap``); a select list's output columns (``columns``: a column shown as it is, under
any name, as ``alias.column``, so the keys analysis can read it; any other item by its name), and whether it gives
one row per input row (``row_by_row``: no set-returning function in it).

>>> from optimizers.rewrites.sql.lower import lower
>>> low = lower("SELECT DISTINCT o.cid AS c, count(*) FROM o GROUP BY o.cid ORDER BY 2 LIMIT 5",
...             {"o": {"cid": "int"}}, dialect="postgres")
>>> term, facts = shell(low, Rel.scan("o", "o"), None)
>>> str(term).replace(chr(10), " ")
'Rel.scan("o", "o").group("o.cid", "").project("o.cid AS c, COUNT(*)").distinct("").sort("2").limit("LIMIT 5")'
>>> output_columns(low.qualified, "postgres")
['o.cid', 'count']
"""

from __future__ import annotations

from collections.abc import Callable

from egglog import String, set_
from sqlglot import exp

from optimizers.rewrites.algebra.analyses import (columns, group_key, group_share, limit_cap, per_row, row_by_row,
                                                  rows)
from optimizers.rewrites.algebra.terms import Rel, alias_set
from optimizers.rewrites.sql.expressions import aggregates, output_name, set_returning
from optimizers.rewrites.sql.lowered import Lowered

Groups = Callable[[str], "float | None"]  # a GROUP BY's keys (``group_keys``) -> the groups over its whole input
GROUP_ROWS = 0.1  # a grouping's rows per input row, without better knowledge
HAVING_SHARE = 1 / 3  # the groups a HAVING keeps, without better knowledge
NO_CAP = 1e15


def shell(low: Lowered, core: Rel, groups: Groups | None) -> tuple[Rel, list]:
    """``core`` under ``low``'s shell operators, with the facts they start from."""
    q = low.qualified if low.qualified is not None else low.shell
    facts: list = []
    rel = core
    texts = clause_texts(q, dialect=low.dialect)
    if isinstance(q, exp.Select):
        having = q.args.get("having")
        keys = group_keys(q, dialect=low.dialect)
        if keys or having is not None or aggregates(q):
            cond = texts["having"]
            rel = rel.group(keys, cond)
            kept = HAVING_SHARE if cond else 1.0
            known = groups(keys) if groups is not None and keys else None
            share = 0.0 if not keys else 1.0 if known is not None else GROUP_ROWS
            facts.append(set_(group_share(keys, cond)).to(share * kept))
            if known is not None:
                facts.append(set_(rows(rel)).to(max(known * kept, 1.0)))
            one = q.args["group"].expressions if keys else []
            if len(one) == 1 and isinstance(one[0], exp.Column) and one[0].table:
                facts.append(group_key(String(keys), String(f"{one[0].table}.{one[0].name}")))
        items = texts["items"]
        rel = rel.project(items)
        facts.append(set_(columns(rel)).to(alias_set(frozenset(output_columns(q, low.dialect)))))
        if not any(set_returning(e) for e in q.expressions):
            facts.append(row_by_row(String(items)))
        distinct = q.args.get("distinct")
        if distinct is not None:
            on = distinct.args.get("on")
            rel = rel.distinct(", ".join(e.sql(dialect=low.dialect) for e in on.expressions) if on is not None else "")
    order = q.args.get("order")
    if order is not None:
        rel = rel.sort(texts["order"])
    limit, offset = q.args.get("limit"), q.args.get("offset")
    if limit is not None or offset is not None:
        clause = " ".join(c.sql(dialect=low.dialect) for c in (limit, offset) if c is not None)
        rel = rel.limit(clause)
        count = limit.expression if limit is not None else None
        cap = float(count.this) if isinstance(count, exp.Literal) and count.is_int else NO_CAP
        facts.append(set_(limit_cap(clause)).to(min(cap, NO_CAP)))
    # a clause's correlated subqueries cost nothing here; the term states what they cost (``per_row``)
    facts.extend(set_(per_row(String(t))).to(0.0) for t in texts.values())
    return rel, facts


def clause_texts(q: exp.Expression, *, dialect: str) -> dict[str, str]:
    """The texts a SELECT's shell operators hold: its select list (``items``), its HAVING condition and its ORDER
    BY keys (``""`` where it has none), written in ``dialect``; emission compares an extracted operator's text with these."""
    having, order = q.args.get("having"), q.args.get("order")
    return {"items": ", ".join(e.sql(dialect=dialect) for e in q.expressions) if isinstance(q, exp.Select) else "",
            "having": having.this.sql(dialect=dialect) if having is not None else "",
            "order": ", ".join(o.sql(dialect=dialect) for o in order.expressions) if order is not None else ""}


def group_keys(select: exp.Select, *, dialect: str) -> str:
    """A SELECT's GROUP BY expressions as one text in ``dialect`` (``""`` without GROUP BY): what ``Groups`` is
    asked about."""
    group = select.args.get("group")
    return ", ".join(g.sql(dialect=dialect) for g in group.expressions) if group is not None else ""


def output_columns(select: exp.Select, dialect: str) -> list[str]:
    """A (qualified) select list's columns: ``alias.column`` for a column shown as it is, the name otherwise."""
    out = []
    for e in select.expressions:
        inner = e.unalias() if isinstance(e, exp.Alias) else e
        out.append(f"{inner.table}.{inner.name}" if isinstance(inner, exp.Column) and inner.table else output_name(e, dialect))
    return out
