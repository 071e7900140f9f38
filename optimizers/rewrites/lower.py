"""SQL into the algebra (``optimizers.rewrites.algebra``): parse with sqlglot (PostgreSQL dialect), qualify the
columns of a copy with the schema so each predicate knows the relations it reads, and build the statement's
FROM / WHERE core as an egglog term. The shell (SELECT list, GROUP BY, HAVING, ORDER BY, LIMIT, DISTINCT) is
kept from the original text, so output names and positional ORDER BY stay as written.

The subset: one SELECT over base tables (comma joins, [INNER] JOIN ... ON, LEFT JOIN ... ON), a WHERE of
conjuncts, and among them [NOT] EXISTS (SELECT ... FROM base tables WHERE ...) subqueries (correlated or not),
[NOT] IN (SELECT column ...) and
comparisons with a scalar subquery (``x < (SELECT 0.2 * avg(y) FROM ... WHERE ...)``).
Anything else raises ``Unsupported`` with the reason, and the statement passes through untouched, unless it is a
query holding a block inside the subset (a derived table's or a CTE's SELECT, a UNION branch): ``lower_block``
lowers that block, and emission puts its rewrite back into the statement as written around it.

>>> low = lower_block("SELECT count(*) FROM (SELECT a FROM t, u WHERE t.a = u.c) AS x", {"t": {"a": "int"},
...                   "u": {"c": "int"}})
>>> low.nested.what, low.tables, low.nested.splice("SELECT a FROM t")
("the derived table x's query", (('t', 't'), ('u', 'u')), 'SELECT COUNT(*) FROM (SELECT a FROM t) AS x')

>>> schema = {"t": {"a": "int", "b": "int"}, "u": {"c": "int", "d": "text"}}
>>> low = lower("SELECT a FROM t JOIN u ON t.a = u.c WHERE b > 1 AND d IS NULL", schema)
>>> low.tables, [(alias, how, [x.sql for x in on]) for alias, how, on in low.joins]
((('t', 't'), ('u', 'u')), [('u', 'inner', ['t.a = u.c'])])
>>> [(x.sql, sorted(x.refs), sorted(x.rejects)) for x in low.atoms]
[('t.b > 1', ['t'], ['t']), ('u.d IS NULL', ['u'], [])]
>>> try:
...     lower("WITH x AS (SELECT 1) SELECT * FROM x", schema)
... except Unsupported as e:
...     print(e)
WITH (common table expressions) is not in the rewriter's subset yet
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.qualify import qualify

Schema = dict[str, dict[str, str]]  # table -> column -> type


class Unsupported(ValueError):
    """The statement is outside the rewriter's subset (the message says what); it passes through untouched."""


@dataclass(frozen=True)
class Atom:
    """One predicate of the core: its SQL (qualified columns), the aliases it reads and those whose NULLs it
    rejects, and its kind (``plain``, ``exists``, ``not_exists``, ``not_in`` or ``scalar``, with the subquery's
    core)."""

    sql: str
    refs: frozenset[str]
    rejects: frozenset[str]
    kind: str = "plain"
    sub: "Lowered | None" = None
    detail: tuple = ()  # a scalar comparison's (op, outer SQL, the subquery's select SQL, its select expression)


@dataclass(frozen=True)
class Nested:
    """Where a lowered SELECT sits in a statement outside the subset: the statement as written, the block's place
    (its index among the statement's SELECTs, in ``find_all`` order), what it is (a derived table's, a CTE's query
    or a set operation's branch) and why the whole statement is outside the subset."""

    statement: str
    index: int
    what: str
    why: str

    def tables(self) -> set[str]:
        """The names of the tables the whole statement reads (a CTE's name included: a caller keeps those its
        schema has)."""
        return {".".join(p.name for p in t.parts) for t in parse(self.statement).find_all(exp.Table)}

    def splice(self, block_sql: str) -> str:
        """The statement with the block's SELECT replaced by ``block_sql``."""
        tree = parse(self.statement)
        list(tree.find_all(exp.Select))[self.index].replace(parse(block_sql))
        return tree.sql(dialect="postgres")


@dataclass(frozen=True)
class Lowered:
    """A lowered SELECT: its tables as (table, alias), join steps, WHERE atoms, and the shell (the original
    statement with FROM, JOINs and WHERE to be replaced). ``nested``: set when the SELECT is a block of a larger
    statement (``lower_block``); emission puts the block back into it."""

    tables: tuple[tuple[str, str], ...]
    joins: tuple[tuple[str, str, tuple[Atom, ...]], ...]  # (alias, "inner" | "left", ON atoms), FROM order
    atoms: tuple[Atom, ...]
    shell: exp.Select
    nested: Nested | None = None

    @property
    def aliases(self) -> frozenset[str]:
        return frozenset(a for _, a in self.tables)


def parse(sql: str) -> exp.Expression:
    """The statement's syntax tree (``Unsupported`` when sqlglot cannot parse it as PostgreSQL)."""
    try:
        found = sqlglot.parse(sql, read="postgres")
    except ParseError as e:
        raise Unsupported(f"not parsed as PostgreSQL SQL: {str(e).splitlines()[0]}") from None
    if len(found) != 1 or found[0] is None:
        raise Unsupported("not exactly one statement")
    return found[0]


def lower(sql: str, schema: Schema) -> Lowered:
    """``sql`` lowered (see the module); ``Unsupported`` outside the subset."""
    tree = parse(sql)
    if not isinstance(tree, exp.Select):
        raise Unsupported(f"{tree.key.upper()} statements are not rewritten (only SELECT)")
    return _lower_tree(tree, schema)


def lower_block(sql: str, schema: Schema) -> Lowered:
    """``sql`` lowered; when the statement is outside the subset but is a query (a SELECT or a set operation)
    holding a block inside it (a derived table's or a CTE's SELECT, or a UNION / INTERSECT / EXCEPT branch), that
    block, the one of most tables (the first of them), with ``nested`` saying where it goes back. A derived table
    in FROM cannot see the enclosing query's columns (LATERAL is outside the subset), nor can a CTE or a branch, so
    each is a statement of its own. ``Unsupported`` (the statement's reason) when no block is in the subset."""
    try:
        return lower(sql, schema)
    except Unsupported as e:
        why = str(e)
        tree = parse(sql)
        if not isinstance(tree, (exp.Select, exp.SetOperation)):
            raise
    blocks: list[Lowered] = []
    for i, node in enumerate(tree.find_all(exp.Select)):
        what = _block_kind(node) if node is not tree else None
        if what is None:
            continue
        try:
            low = _lower_tree(node.copy(), schema)
        except Unsupported:
            continue
        blocks.append(Lowered(low.tables, low.joins, low.atoms, low.shell, Nested(sql, i, what, why)))
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


def _lower_tree(tree: exp.Select, schema: Schema) -> Lowered:
    if tree.args.get("with_"):
        raise Unsupported("WITH (common table expressions) is not in the rewriter's subset yet")
    try:
        qualified = qualify(tree.copy(), schema=schema, dialect="postgres", quote_identifiers=False,
                            identify=False, expand_stars=False, validate_qualify_columns=True)
    except (OptimizeError, ValueError, KeyError) as e:
        raise Unsupported(f"columns not resolved against the schema: {e}") from None
    return _select(qualified, tree)


def _select(q: exp.Select, original: exp.Select | None, outer: frozenset[str] = frozenset()) -> Lowered:
    """``q`` lowered; ``outer``: the aliases of the enclosing scopes (a subquery's alias that shadows one of
    them is renamed, with the columns of its scope, so every alias names one relation in the whole statement)."""
    if outer:
        _unshadow(q, outer)
    frm = q.args.get("from_")
    if frm is None:
        raise Unsupported("no FROM clause")
    tables = [_table(frm.this)]
    joins: list[tuple[str, str, tuple[Atom, ...]]] = []
    for j in q.args.get("joins") or []:
        side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
        if j.args.get("using"):
            raise Unsupported("JOIN ... USING is not in the rewriter's subset yet")
        if kind in ("CROSS", "") and side == "" and j.args.get("on") is None:
            how = "inner"
        elif side == "" and kind in ("", "INNER"):
            how = "inner"
        elif side == "LEFT" and kind in ("", "OUTER"):
            how = "left"
        else:
            raise Unsupported(f"{' '.join(x for x in (side, kind) if x)} JOIN is not in the rewriter's subset yet")
        tables.append(_table(j.this))
        on = j.args.get("on")
        joins.append((tables[-1][1], how, tuple(_atoms(on, outer)) if on is not None else ()))
    for key in ("laterals", "pivots", "windows", "qualify", "connect", "match"):
        if q.args.get(key):
            raise Unsupported(f"{key.upper()} is not in the rewriter's subset")
    where = q.args.get("where")
    scope = outer | frozenset(a for _, a in tables)
    atoms = tuple(_atoms(where.this, scope)) if where is not None else ()
    shell = (original if original is not None else q).copy()
    return Lowered(tuple(tables), tuple(joins), atoms, shell)


def _table(node: exp.Expression) -> tuple[str, str]:
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise Unsupported("only base tables in FROM (no derived tables, functions or VALUES) for now")
    return (".".join(p.name for p in node.parts), node.alias_or_name)


def _unshadow(q: exp.Select, outer: frozenset[str]) -> None:
    """Rename the tables of ``q``'s own FROM whose alias an enclosing scope uses, and their columns in ``q``."""
    own = [t for t in [q.args["from_"].this, *(j.this for j in q.args.get("joins") or [])] if isinstance(t, exp.Table)]
    taken = set(outer) | {t.alias_or_name for t in own}
    renames = {}
    for t in own:
        if t.alias_or_name in outer:
            n = 2
            while f"{t.alias_or_name}_{n}" in taken:
                n += 1
            renames[t.alias_or_name] = f"{t.alias_or_name}_{n}"
            taken.add(renames[t.alias_or_name])
            t.set("alias", exp.TableAlias(this=exp.to_identifier(renames[t.alias_or_name])))
    if renames:
        for col in q.find_all(exp.Column):
            if col.table in renames and col.find_ancestor(exp.Select) is q:
                col.set("table", exp.to_identifier(renames[col.table]))


def _atoms(node: exp.Expression, scope: frozenset[str] = frozenset()):
    """The conjuncts of ``node``, each as an ``Atom``."""
    for part in node.flatten() if isinstance(node, exp.And) else (node,):
        inner = part.unnest() if isinstance(part, exp.Paren) else part
        if isinstance(inner, exp.And):
            yield from _atoms(inner, scope)
            continue
        negated = isinstance(inner, exp.Not)
        body = inner.this.unnest() if negated else inner
        if isinstance(body, exp.In) and body.args.get("query") is not None:
            yield _in_subquery(part, body, negated, scope)
            continue
        if isinstance(body, exp.Exists):
            sub = body.this
            if not isinstance(sub, exp.Select) or sub.args.get("group") or sub.args.get("limit"):
                raise Unsupported("EXISTS over a subquery outside the subset (GROUP BY, LIMIT or not a SELECT)")
            low = _select(sub, None, scope)
            outer = frozenset().union(*(a.refs for a in low.atoms)) - low.aliases
            yield Atom(part.sql(dialect="postgres"), outer, frozenset(), "not_exists" if negated else "exists", low)
            continue
        scalar = _scalar_comparison(inner, scope)
        if scalar is not None:
            yield scalar
            continue
        if any(isinstance(n, (exp.Subquery, exp.Select)) for n in inner.find_all(exp.Subquery, exp.Select)):
            raise Unsupported("subqueries other than [NOT] EXISTS and scalar comparisons are not in the "
                              "rewriter's subset yet")
        refs = _refs(inner)
        yield Atom(inner.sql(dialect="postgres"), refs, _rejects(inner, refs))


def _in_subquery(part: exp.Expression, body: exp.In, negated: bool, scope: frozenset[str]) -> Atom:
    """``x [NOT] IN (SELECT y FROM ... WHERE ...)`` as the subquery with ``y = x`` among its conditions: an
    ``exists`` atom for IN (the same rows in a WHERE conjunct, where NULL and false both drop the row), a
    ``not_in`` atom for NOT IN, with (x, y) in ``detail`` (an anti-join only where neither can be NULL)."""
    sub = body.args["query"].this if isinstance(body.args["query"], exp.Subquery) else body.args["query"]
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or sub.args.get("group") \
            or sub.args.get("limit") or sub.args.get("having"):
        raise Unsupported("an IN subquery outside the subset (GROUP BY, HAVING, LIMIT or several columns)")
    low = _select(sub, None, scope)
    y = sub.expressions[0].unalias() if isinstance(sub.expressions[0], exp.Alias) else sub.expressions[0]
    x = body.this
    if list(x.find_all(exp.Subquery, exp.Select)):
        raise Unsupported("a subquery on the left of IN")
    refs = _refs(y) | _refs(x)
    match = Atom(f"{y.sql(dialect='postgres')} = {x.sql(dialect='postgres')}", refs, refs)
    low = Lowered(low.tables, low.joins, low.atoms + (match,), low.shell)
    outer = frozenset().union(*(a.refs for a in low.atoms)) - low.aliases
    if not negated:
        return Atom(part.sql(dialect="postgres"), outer, frozenset(), "exists", low)
    return Atom(part.sql(dialect="postgres"), outer, frozenset(), "not_in", low, (x, y))


def _scalar_comparison(node: exp.Expression, scope: frozenset[str]) -> Atom | None:
    """``outer <op> (SELECT expr FROM ... WHERE ...)`` (either side) as a ``scalar`` atom: its SQL as written, the
    outer aliases it reads, and in ``detail`` (op, outer SQL, the subquery's select expression SQL, the subquery
    lowered); None for anything else."""
    if not isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
        return None
    left, right = node.this, node.expression
    flip = {exp.GT: "<", exp.GTE: "<=", exp.LT: ">", exp.LTE: ">=", exp.EQ: "=", exp.NEQ: "<>"}
    ops = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.EQ: "=", exp.NEQ: "<>"}
    if isinstance(right, exp.Subquery) and not isinstance(left, exp.Subquery):
        outer, sub, op = left, right.this, ops[type(node)]
    elif isinstance(left, exp.Subquery) and not isinstance(right, exp.Subquery):
        outer, sub, op = right, left.this, flip[type(node)]
    else:
        return None
    if any(isinstance(n, (exp.Subquery, exp.Select)) for n in outer.find_all(exp.Subquery, exp.Select)):
        return None
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or sub.args.get("group") \
            or sub.args.get("limit") or sub.args.get("having") or sub.args.get("distinct"):
        raise Unsupported("a scalar subquery outside the subset (GROUP BY, HAVING, LIMIT, DISTINCT or several "
                          "columns)")
    low = _select(sub, None, scope)
    inner_outer = frozenset().union(*(a.refs for a in low.atoms)) - low.aliases
    refs = _refs(outer) | inner_outer
    select = sub.expressions[0].unalias() if isinstance(sub.expressions[0], exp.Alias) else sub.expressions[0]
    return Atom(node.sql(dialect="postgres"), refs, frozenset(), "scalar", low,
                (op, outer.sql(dialect="postgres"), select.sql(dialect="postgres"), select))


def _refs(node: exp.Expression) -> frozenset[str]:
    return frozenset(c.table for c in node.find_all(exp.Column) if c.table)


STRICT = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.Between, exp.In)
LENIENT = (exp.Is, exp.Coalesce, exp.Or, exp.Case, exp.If, exp.Not, exp.NullSafeEQ, exp.NullSafeNEQ)


def _rejects(node: exp.Expression, refs: frozenset[str]) -> frozenset[str]:
    """Aliases whose all-NULL row makes ``node`` not true: every alias it reads when it is a strict comparison
    with no NULL-tolerant part (IS [NOT] NULL, COALESCE, OR, CASE, NOT, IS DISTINCT FROM); none otherwise."""
    if not isinstance(node, STRICT) or any(isinstance(n, LENIENT) for n in node.walk()):
        return frozenset()
    return refs
