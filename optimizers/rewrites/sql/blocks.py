"""Blocks: a statement outside the rewriter's subset (a WITH, a UNION, a RIGHT JOIN...) that holds a SELECT
inside the subset (a CTE's query, a set operation's branch, a derived table's query) is searched over that block,
and emission (``optimizers.rewrites.sql.emit``) splices the block's rewrite back into the statement as written.

>>> low = lower_block("WITH x AS MATERIALIZED (SELECT a FROM t, u WHERE t.a = u.c) SELECT count(*) FROM x",
...                   {"t": {"a": "int"}, "u": {"c": "int"}}, dialect="postgres")
>>> low.nested.what, low.tables, low.nested.splice("SELECT a FROM t")
("the CTE x's query", (('t', 't'), ('u', 'u')), 'WITH x AS MATERIALIZED (SELECT a FROM t) SELECT COUNT(*) FROM x')
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from optimizers.rewrites.sql.derived import settle_order
from optimizers.rewrites.sql.lower import lower_tree
from optimizers.rewrites.sql.lowered import Lowered, Nested, Schema
from optimizers.rewrites.sql.parsing import Unsupported, parse
from optimizers.rewrites.sql.setops import lower_query

def lower_block(sql: str, schema: Schema, *, dialect: str) -> Lowered:
    """``sql`` (in ``dialect``) lowered (a SELECT or a set operation of SELECTs: ``setops.lower_query``); when the
    statement is outside the subset but is a query (a SELECT or a set operation) holding a block inside it (a derived
    table's or a CTE's SELECT, or a UNION / INTERSECT / EXCEPT branch), that block, the one of most tables (the first
    of them), with ``nested`` saying where it goes back. A derived table in FROM cannot see the enclosing query's
    columns (LATERAL is outside the subset), nor can a CTE or a branch, so each is a statement of its own (a derived
    table of a statement inside the subset is a view of its term instead: ``optimizers.rewrites.sql.derived``).
    ``Unsupported`` (the statement's reason) when no block is in the subset."""
    try:
        return lower_query(sql, schema, dialect=dialect)
    except Unsupported as e:
        why = str(e)
        tree = parse(sql, dialect=dialect)
        if not isinstance(tree, (exp.Select, exp.SetOperation)):
            raise
    blocks: list[Lowered] = []
    # a block reading a CTE would take it for the base table of that name (its rows, keys and NULLs)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for i, node in enumerate(tree.find_all(exp.Select)):
        what = _block_kind(node) if node is not tree else None
        if what is None:
            continue
        try:
            low = lower_tree(node.copy(), schema, dialect=dialect)
        except Unsupported:
            continue
        if {t.lower() for t in low.base_tables()} & ctes:
            continue
        # the statement around the block is not lowered: it may read the order of the block's rows
        blocks.append(replace(settle_order(low, False), nested=Nested(sql, i, what, why, dialect)))
    if not blocks:
        raise Unsupported(why)
    return max(blocks, key=lambda b: len(b.tables))  # max() keeps the first of the largest


def _block_kind(node: exp.Select) -> str | None:
    """What a SELECT inside a statement is, when it is a block that can be rewritten on its own; None otherwise
    (a subquery in an expression may read the enclosing query's columns)."""
    parent = node.parent
    if isinstance(parent, exp.Subquery) and isinstance(parent.parent, (exp.From, exp.Join)):
        name = parent.alias_or_name
        return f"the derived table {name}'s query" if name else "a derived table's query"
    if isinstance(parent, exp.CTE):
        return f"the CTE {parent.alias_or_name}'s query"
    if isinstance(parent, exp.SetOperation):
        return f"a branch of the {parent.key.upper()}"
    return None
