"""Candidate indexes from a workload's statements (Dexter's and Extend's recipe).

Each statement (parameters bound) is parsed with sqlglot and qualified against the schema, so every column is
resolved to its table, through aliases and correlated subqueries. A column is *used* when it is compared with
a constant (``=``, ``IN``, ``IS NULL``: equality; ``<``, ``BETWEEN``, ``LIKE 'x%'``: range), equated with
another table's column (join), or listed in GROUP BY / ORDER BY. Only bare columns count: ``f(col) = 1`` cannot
use a plain B-tree on ``col``.

Per (statement, table), candidates are ordered column lists of width 1 to ``max_width``: equality and join
columns first (any order), then at most one range, GROUP BY or ORDER BY column; every prefix of a candidate is a
candidate too (Extend and IA2 grow an index one trailing column at a time). A candidate that an existing index
already covers as a prefix is left out.

>>> schema = {("public", "t"): ("a", "b", "c")}
>>> uses = column_uses("SELECT * FROM t WHERE a = 1 AND b > 2", schema)
>>> [(u.column, u.kind) for u in uses]
[('a', 'equality'), ('b', 'range')]
>>> [c.index.columns for c in generate({"q": uses}, max_width=2)]
[('a',), ('a', 'b'), ('b',)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import permutations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope

from advisor.core.domain import IndexChange
from advisor.core.errors import BadStatement
from optimizers.indexes.problem import Candidate, ColumnUse, TableRef

EQUALITY_KINDS = ("equality", "join")
Schema = Mapping[TableRef, Sequence[str]]


def _sqlglot_schema(schema: Schema) -> dict:
    out: dict = {}
    for (sch, table), columns in schema.items():
        out.setdefault(sch, {})[table] = {c: "text" for c in columns}
    return out


def _resolve(column: exp.Column, scope: Scope) -> TableRef | None:
    """The table a qualified column belongs to, looking outwards through enclosing scopes (correlation)."""
    alias = column.table
    while scope is not None:
        source = scope.sources.get(alias)
        if isinstance(source, exp.Table):
            return (source.db or "public", source.name)
        if source is not None:
            return None  # a derived table or CTE: not an index target
        scope = scope.parent
    return None


def _own_nodes(root: exp.Expression | None):
    """Nodes of ``root`` without descending into subqueries (each subquery is its own scope)."""
    if root is None:
        return
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed([c for c in node.iter_expressions() if not isinstance(c, exp.Query)]))


def _constant(node: exp.Expression) -> bool:
    return not any(isinstance(n, exp.Column) for n in _own_nodes(node)) and not isinstance(node, exp.Query)


def _predicate_uses(node: exp.Expression, scope: Scope) -> list[tuple[exp.Column, str]]:
    out: list[tuple[exp.Column, str]] = []
    if isinstance(node, exp.EQ):
        left, right = node.this, node.expression
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            if left.table != right.table:  # different aliases: a join, a self-join included
                out += [(left, "join"), (right, "join")]
        elif isinstance(left, exp.Column) and _constant(right):
            out.append((left, "equality"))
        elif isinstance(right, exp.Column) and _constant(left):
            out.append((right, "equality"))
    elif isinstance(node, exp.In) and isinstance(node.this, exp.Column):
        out.append((node.this, "join" if node.args.get("query") else "equality"))
    elif isinstance(node, exp.Is) and isinstance(node.this, exp.Column):
        out.append((node.this, "equality"))
    elif isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE)):
        left, right = node.this, node.expression
        if isinstance(left, exp.Column) and _constant(right):
            out.append((left, "range"))
        elif isinstance(right, exp.Column) and _constant(left):
            out.append((right, "range"))
    elif isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
        out.append((node.this, "range"))
    elif isinstance(node, exp.Like) and isinstance(node.this, exp.Column):
        pattern = node.expression
        if isinstance(pattern, exp.Literal) and pattern.is_string and not pattern.this.startswith(("%", "_")):
            out.append((node.this, "range"))
    return out


def column_uses(statement: str, schema: Schema) -> list[ColumnUse]:
    """How ``statement`` uses the columns of ``schema``'s tables, in order of appearance, without duplicates.

    Raises ``BadStatement`` when sqlglot cannot parse it."""
    try:
        tree = sqlglot.parse_one(statement, dialect="postgres")
        tree = qualify(tree, schema=_sqlglot_schema(schema), dialect="postgres", db="public",
                       validate_qualify_columns=False, identify=False)
    except SqlglotError as e:
        raise BadStatement(f"cannot parse statement for index candidates: {str(e).splitlines()[0]}") from None
    found: list[ColumnUse] = []
    for scope in traverse_scope(tree):
        select = scope.expression
        conditions = [select.args.get("where"), select.args.get("having")]
        conditions += [j.args.get("on") for j in select.args.get("joins") or ()]
        pairs: list[tuple[exp.Column, str]] = []
        for cond in conditions:
            for node in _own_nodes(cond):
                pairs += _predicate_uses(node, scope)
        group = select.args.get("group")
        if group is not None:
            pairs += [(e, "group") for e in group.expressions if isinstance(e, exp.Column)]
        order = select.args.get("order")
        if order is not None:
            # ORDER BY may name an output column: follow it to the expression it stands for
            outputs = {e.alias: e.this for e in select.expressions if isinstance(e, exp.Alias)}
            for o in order.expressions:
                key = o.this
                if isinstance(key, exp.Column) and not key.table and key.name in outputs:
                    key = outputs[key.name]
                if isinstance(key, exp.Column):
                    pairs.append((key, "order"))
        for column, kind in pairs:
            table = _resolve(column, scope)
            if table is None or table not in schema or column.name not in schema[table]:
                continue
            use = ColumnUse(table, column.name, kind)
            if use not in found:
                found.append(use)
    return found


def _orderings(uses: Sequence[ColumnUse], max_width: int) -> set[tuple[str, ...]]:
    """Column lists for one (statement, table): equality/join columns in any order, then at most one other."""
    eq = list(dict.fromkeys(u.column for u in uses if u.kind in EQUALITY_KINDS))
    other = [c for c in dict.fromkeys(u.column for u in uses if u.kind not in EQUALITY_KINDS) if c not in eq]
    out: set[tuple[str, ...]] = set()
    for width in range(1, max_width + 1):
        for head in permutations(eq, min(width, len(eq))):
            if len(head) == width:
                out.add(head)
            elif len(head) == width - 1:
                out.update(head + (c,) for c in other)
    out.update((c,) for c in other)
    closed = {cols[:k] for cols in out for k in range(1, len(cols) + 1)}
    return closed


def generate(uses_by_query: Mapping[str, Iterable[ColumnUse]], *, max_width: int = 3,
             existing: Iterable[IndexChange] = (), tables: Iterable[TableRef] | None = None) -> list[Candidate]:
    """Candidates for a workload, sorted by (table, columns). ``existing`` indexes cover their prefixes;
    ``tables`` (when given) limits candidates to those tables (e.g. tables big enough to index)."""
    allowed = set(tables) if tables is not None else None
    covered = {((i.schema, i.table), i.columns[:k]) for i in existing for k in range(1, len(i.columns) + 1)}
    relevant: dict[tuple[TableRef, tuple[str, ...]], set[str]] = {}
    leading: dict[tuple[TableRef, str], set[str]] = {}
    for qid, uses in uses_by_query.items():
        by_table: dict[TableRef, list[ColumnUse]] = {}
        for u in uses:
            by_table.setdefault(u.table, []).append(u)
            leading.setdefault((u.table, u.column), set()).add(qid)
        for table, table_uses in by_table.items():
            if allowed is not None and table not in allowed:
                continue
            for cols in _orderings(table_uses, max_width):
                relevant.setdefault((table, cols), set()).add(qid)
    out = []
    for (table, cols), qids in sorted(relevant.items()):
        if (table, cols) in covered:
            continue
        # a statement that uses the leading column can use the index, even if this ordering came from another
        qids = qids | leading.get((table, cols[0]), set())
        out.append(Candidate(IndexChange(table[0], table[1], cols), frozenset(qids)))
    return out
