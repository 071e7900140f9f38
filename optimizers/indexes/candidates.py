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

Given each statement's shapes (:func:`statement_shapes`, from its normalized text), a (statement, table) also
gets at most two variants of its :func:`best_key` (equality and join columns, then one range, else ORDER BY,
else GROUP BY column): one with the statement's few other columns of the table as INCLUDE columns (an
index-only scan), and one partial index whose WHERE is the statement's constant predicates on the table
(``status = 'open'``, ``deleted_at IS NULL``; never a ``$1`` parameter), keyed on the statement's other uses.

>>> schema = {("public", "t"): ("a", "b", "c")}
>>> uses = column_uses("SELECT * FROM t WHERE a = 1 AND b > 2", schema, dialect="postgres", default_schema="public")
>>> [(u.column, u.kind) for u in uses]
[('a', 'equality'), ('b', 'range')]
>>> [c.index.columns for c in generate({"q": uses}, max_width=2)]
[('a',), ('a', 'b'), ('b',)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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


def _resolve(column: exp.Column, scope: Scope, default_schema: str) -> TableRef | None:
    """The table a qualified column belongs to, looking outwards through enclosing scopes (correlation)."""
    alias = column.table
    while scope is not None:
        source = scope.sources.get(alias)
        if isinstance(source, exp.Table):
            return (source.db or default_schema, source.name)
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


def _qualified(statement: str, schema: Schema, dialect: str, default_schema: str) -> exp.Expression:
    try:
        tree = sqlglot.parse_one(statement, dialect=dialect)
        return qualify(tree, schema=_sqlglot_schema(schema), dialect=dialect, db=default_schema,
                       validate_qualify_columns=False, identify=False)
    except SqlglotError as e:
        raise BadStatement(f"cannot parse statement for index candidates: {str(e).splitlines()[0]}") from None


def column_uses(statement: str, schema: Schema, *, dialect: str, default_schema: str) -> list[ColumnUse]:
    """How ``statement`` (in sqlglot's ``dialect``: the connector's; an unqualified table is in ``default_schema``)
    uses the columns of ``schema``'s tables, in order of appearance, without duplicates.

    Raises ``BadStatement`` when sqlglot cannot parse it."""
    found: list[ColumnUse] = []
    for scope in traverse_scope(_qualified(statement, schema, dialect, default_schema)):
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
            table = _resolve(column, scope, default_schema)
            if table is None or table not in schema or column.name not in schema[table]:
                continue
            use = ColumnUse(table, column.name, kind)
            if use not in found:
                found.append(use)
    return found


@dataclass(frozen=True)
class TableShape:
    """What one statement needs from one table besides its key uses: every column it references there (SELECT
    list, predicates, grouping, ordering: what an index-only scan must find in the index) and its constant
    predicates, ``(column, SQL)`` conjuncts of a WHERE's top-level AND that compare a bare column with literals
    (``status = 'open'``, ``deleted_at IS NULL``, a boolean ``flag`` or ``NOT flag``): what a partial index may
    hold. The SQL is over the table's columns only, every identifier quoted."""

    columns: tuple[str, ...]
    constant: tuple[tuple[str, str], ...] = ()
    every_column: bool = False  # the statement reads all of the table's columns (SELECT *): a covering index
                                # would be a second copy of the table


def _literal(node: exp.Expression) -> bool:
    """A literal written in the statement (a ``$1`` parameter is not one: its value changes between calls)."""
    if isinstance(node, exp.Neg):
        node = node.this
        return isinstance(node, exp.Literal) and not node.is_string
    return isinstance(node, (exp.Literal, exp.Boolean))


def _constant_predicate(node: exp.Expression) -> exp.Column | None:
    """The column of a conjunct that is a bare column compared with literals (or IS [NOT] NULL, or a boolean
    column, negated or not); None for anything else."""
    inner = node.this if isinstance(node, exp.Not) else node
    if isinstance(inner, exp.Column):
        return inner
    if isinstance(inner, exp.Is) and isinstance(inner.this, exp.Column) and \
            isinstance(inner.expression, (exp.Null, exp.Boolean)):
        return inner.this
    if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
        if isinstance(node.this, exp.Column) and _literal(node.expression):
            return node.this
    return None


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if node is None:
        return []
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def statement_shapes(statement: str, schema: Schema, *, dialect: str,
                     default_schema: str) -> dict[TableRef, TableShape]:
    """Per table of ``schema`` that ``statement`` reads: its :class:`TableShape`. Give the statement's
    *normalized* text (``$1`` parameters), so that only constants written in the statement make a partial index;
    the predicates are written in ``dialect``; an unqualified table is in ``default_schema``.

    >>> schema = {("public", "t"): ("id", "a", "status", "deleted_at", "note")}
    >>> shape = statement_shapes("SELECT id, note FROM t WHERE a = $1 AND status = 'open' "
    ...                          "AND deleted_at IS NULL", schema, dialect="postgres",
    ...                          default_schema="public")[("public", "t")]
    >>> shape.columns
    ('id', 'note', 'a', 'status', 'deleted_at')
    >>> print(" AND ".join(p for _, p in shape.constant))
    "status" = 'open' AND "deleted_at" IS NULL
    """
    columns: dict[TableRef, dict[str, None]] = {}
    constant: dict[TableRef, dict[tuple[str, str], None]] = {}
    for scope in traverse_scope(_qualified(statement, schema, dialect, default_schema)):
        for node in _own_nodes(scope.expression):
            if isinstance(node, exp.Column) and (table := _resolve(node, scope, default_schema)) in schema \
                    and node.name in schema[table]:
                columns.setdefault(table, {})[node.name] = None
        where = scope.expression.args.get("where")
        for conjunct in _conjuncts(where.this if where is not None else None):
            column = _constant_predicate(conjunct)
            table = _resolve(column, scope, default_schema) if column is not None else None
            if column is None or table not in schema or column.name not in schema[table]:
                continue
            bare = conjunct.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n)
            constant.setdefault(table, {})[(column.name, bare.sql(dialect=dialect, identify=True))] = None
    return {t: TableShape(tuple(cols), tuple(constant.get(t, ())), len(cols) >= len(schema[t]))
            for t, cols in columns.items()}


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


def best_key(uses: Sequence[ColumnUse], max_width: int, leave_out: Iterable[str] = ()) -> tuple[str, ...]:
    """The one key a statement would pick on a table: its equality and join columns in order of appearance,
    then its first range column (else its first ORDER BY, else GROUP BY column), at most ``max_width`` wide.

    >>> use = lambda c, k: ColumnUse(("public", "t"), c, k)
    >>> best_key([use("a", "equality"), use("b", "equality"), use("c", "order")], 3)
    ('a', 'b', 'c')
    >>> best_key([use("d", "range"), use("e", "equality")], 3)
    ('e', 'd')
    """
    skip = set(leave_out)
    eq = [c for c in dict.fromkeys(u.column for u in uses if u.kind in EQUALITY_KINDS) if c not in skip]
    rank = {"range": 0, "order": 1, "group": 2}
    other = sorted((u for u in uses if u.kind in rank and u.column not in eq and u.column not in skip),
                   key=lambda u: rank[u.kind])
    if other and len(eq) < max_width:
        return tuple(eq) + (other[0].column,)
    return tuple(eq[:max_width])


def point_lookup(uses: Sequence[ColumnUse], unique: Iterable[tuple[str, ...]]) -> bool:
    """Whether the statement fixes every column of one of the table's unique keys with an equality on a value:
    it reads at most one row there, so covering it in an index saves one heap fetch per call, not worth a copy.

    >>> use = lambda c, k: ColumnUse(("public", "t"), c, k)
    >>> point_lookup([use("id", "equality")], [("id",)]), point_lookup([use("id", "join")], [("id",)])
    (True, False)
    """
    fixed = {u.column for u in uses if u.kind == "equality"}
    return any(set(key) <= fixed for key in unique)


def _variants(table: TableRef, uses: Sequence[ColumnUse], shape: TableShape | None, max_width: int,
              max_include: int, unique: Iterable[tuple[str, ...]] = ()) -> list[tuple[IndexChange, frozenset[str]]]:
    """At most one INCLUDE variant (the best key, and the statement's other columns of the table when there are
    1 to ``max_include`` of them: an index-only scan; none for a point lookup on a unique key) and one partial
    variant (the key of the statement's other uses, with its constant predicates as the index's WHERE)."""
    if shape is None:
        return []
    out = []
    key = best_key(uses, max_width)
    rest = tuple(c for c in shape.columns if c not in key)
    if key and 1 <= len(rest) <= max_include and not shape.every_column and not point_lookup(uses, unique):
        out.append((IndexChange(table[0], table[1], key, include=rest), frozenset()))
    if shape.constant:
        fixed = {c for c, _ in shape.constant}
        partial_key = best_key(uses, max_width, leave_out=fixed)
        if partial_key:
            where = " AND ".join(p for _, p in shape.constant)
            out.append((IndexChange(table[0], table[1], partial_key, where=where),
                        frozenset(p for _, p in shape.constant)))
    return out


def _sort_key(c: Candidate) -> tuple:
    i = c.index
    return (i.schema, i.table, i.columns, i.include, i.where or "")


def generate(uses_by_query: Mapping[str, Iterable[ColumnUse]], *, max_width: int = 3,
             existing: Iterable[IndexChange] = (), tables: Iterable[TableRef] | None = None,
             shapes: Mapping[str, Mapping[TableRef, TableShape]] | None = None,
             max_include: int = 3, unique: Iterable[tuple[TableRef, tuple[str, ...]]] = ()) -> list[Candidate]:
    """Candidates for a workload, sorted by (table, columns, include, where). ``existing`` indexes cover their
    prefixes; ``tables`` (when given) limits candidates to those tables (e.g. tables big enough to index).
    ``shapes`` (per statement, from :func:`statement_shapes`) adds per (statement, table) at most one INCLUDE
    and one partial variant of the statement's best key; they compete with the others on what-if cost and size.

    A variant serves the statements that use its leading column and, for a partial one, have all its constant
    predicates; an INCLUDE variant whose columns an existing index already has as its leading key is left out, and
    so is one for a statement that fixes a ``unique`` key ((table, columns) of unique indexes) of the table.
    """
    unique_keys: dict[TableRef, list[tuple[str, ...]]] = {}
    for table, cols in unique:
        unique_keys.setdefault(table, []).append(tuple(cols))
    allowed = set(tables) if tables is not None else None
    covered = {((i.schema, i.table), i.columns[:k]) for i in existing for k in range(1, len(i.columns) + 1)}
    relevant: dict[tuple[TableRef, tuple[str, ...]], set[str]] = {}
    leading: dict[tuple[TableRef, str], set[str]] = {}
    variants: dict[IndexChange, set[str]] = {}
    predicates: dict[IndexChange, frozenset[str]] = {}  # a partial variant's conjuncts
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
            shape = (shapes or {}).get(qid, {}).get(table)
            for v, preds in _variants(table, table_uses, shape, max_width, max_include, unique_keys.get(table, ())):
                variants.setdefault(v, set()).add(qid)
                predicates[v] = preds
    out = []
    for (table, cols), qids in sorted(relevant.items()):
        if (table, cols) in covered:
            continue
        # a statement that uses the leading column can use the index, even if this ordering came from another
        qids = qids | leading.get((table, cols[0]), set())
        out.append(Candidate(IndexChange(table[0], table[1], cols), frozenset(qids)))
    for v, qids in variants.items():
        table = (v.schema, v.table)
        if v.include and (table, v.columns + v.include) in covered:
            continue
        users = leading.get((table, v.columns[0]), set())
        if v.where is not None:
            users = {q for q in users if predicates[v] <= {
                p for _, p in (shapes or {}).get(q, {}).get(table, TableShape(())).constant}}
        out.append(Candidate(v, frozenset(qids | users)))
    return sorted(out, key=_sort_key)
