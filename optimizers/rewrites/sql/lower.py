"""SQL into the algebra (``optimizers.rewrites.algebra.terms``): parse with sqlglot (in the target's dialect, passed
in as data: ``Lowered.dialect``, which emission writes back in), qualify the columns of a copy with the schema so each
predicate knows the relations it reads, and take the statement apart: its tables, joins and WHERE conditions (the
core) and its shell (SELECT list, GROUP BY, HAVING, ORDER BY, LIMIT, DISTINCT), kept from the original text so output
names and positional ORDER BY stay as written (``optimizers.rewrites.search.term`` makes the term: the core under the
shell's operators, ``optimizers.rewrites.sql.shell_operators``).

The subset: one SELECT over base tables and derived tables (comma joins, [INNER] JOIN ... ON, LEFT JOIN ... ON),
a WHERE of conjuncts, and among them [NOT] EXISTS (SELECT ... FROM base tables WHERE ...) subqueries (correlated
or not), [NOT] IN (SELECT column ...) (grouped or not) and comparisons with a scalar subquery
(``x < (SELECT 0.2 * avg(y) FROM ... WHERE ...)``). A derived table in FROM, and an uncorrelated grouped IN
subquery, is a view (``optimizers.rewrites.sql.derived``): its own query is lowered the same way, inside the
statement's term. A subquery of the select list, HAVING or ORDER BY stays in the shell's text, and is lowered too
where it can be (``optimizers.rewrites.sql.subqueries``: what its decorrelation reads). Anything else raises
``Unsupported`` with the reason; ``optimizers.rewrites.sql.blocks`` then looks for a block inside the statement to
search on its own.

>>> schema = {"t": {"a": "int", "b": "int"}, "u": {"c": "int", "d": "text"}}
>>> low = lower("SELECT a FROM t JOIN u ON t.a = u.c WHERE b > 1 AND d IS NULL", schema, dialect="postgres")
>>> low.tables, [(alias, how, [x.sql for x in on]) for alias, how, on in low.joins]
((('t', 't'), ('u', 'u')), [('u', 'inner', ['t.a = u.c'])])
>>> [(x.sql, sorted(x.refs), sorted(x.rejects)) for x in low.atoms]
[('t.b > 1', ['t'], ['t']), ('u.d IS NULL', ['u'], [])]
>>> try:
...     lower("WITH x AS (SELECT 1) SELECT * FROM x", schema, dialect="postgres")
... except Unsupported as e:
...     print(e)
WITH (common table expressions) is not in the rewriter's subset yet
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from functools import partial

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify

from optimizers.rewrites.sql.derived import describe, push, reads_order, settle_order
from optimizers.rewrites.sql.expressions import has_aggregate, output_name, set_returning as _set_returning
from optimizers.rewrites.sql.lowered import VIEW, Atom, Lowered, Schema, View
from optimizers.rewrites.sql.parsing import Unsupported, parse
from optimizers.rewrites.sql.predicates import plain, refs_of
from optimizers.rewrites.sql.scopes import AmbiguousNames, names_as_written, own_items, unname, unshadow
from optimizers.rewrites.sql.subqueries import find as shell_subqueries

def lower(sql: str, schema: Schema, *, dialect: str) -> Lowered:
    """``sql`` (in ``dialect``) lowered (see the module); ``Unsupported`` outside the subset."""
    tree = parse(sql, dialect=dialect)
    if not isinstance(tree, exp.Select):
        raise Unsupported(f"{tree.key.upper()} statements are not rewritten (only SELECT)")
    return settle_order(lower_tree(tree, schema, dialect=dialect), True)


def lower_tree(tree: exp.Select, schema: Schema, *, dialect: str) -> Lowered:
    if tree.args.get("with_"):
        raise Unsupported("WITH (common table expressions) is not in the rewriter's subset yet")
    return lower_select(qualified(tree, schema, dialect=dialect), tree, dialect=dialect)


def qualified(tree: exp.Expression, schema: Schema, *, dialect: str) -> exp.Expression:
    """A copy of ``tree`` with every column qualified by its relation's alias. A JOIN ... USING or NATURAL JOIN is
    refused first: the qualification turns it into ON, and ``SELECT *`` or an unqualified merged column would
    then read both sides' columns."""
    if any(j.args.get("using") or j.args.get("method") for j in tree.find_all(exp.Join)):
        raise Unsupported("JOIN ... USING and NATURAL JOIN are not in the rewriter's subset yet")
    try:
        out = qualify(tree.copy(), schema=schema, dialect=dialect, quote_identifiers=False,
                      identify=False, expand_stars=False, validate_qualify_columns=True)
    except (OptimizeError, ValueError, KeyError) as e:
        raise Unsupported(f"columns not resolved against the schema: {e}") from None
    except Exception as e:  # noqa: BLE001  (sqlglot's qualification fails on some valid SQL with an assertion)
        raise Unsupported(f"the statement could not be qualified ({type(e).__name__}: {e})") from None
    # every SELECT's items keep the names they were written with (a derived table's ``count(*)`` is ``count``, as
    # PostgreSQL names it, not the qualification's ``_col_1``)
    originals, copies = list(tree.find_all(exp.Select)), list(out.find_all(exp.Select))
    if len(originals) == len(copies):
        try:
            for original, select in zip(originals, copies):
                unname(select, original)
        except AmbiguousNames as e:
            raise Unsupported(f"{e}: its references cannot be told apart") from None
    return out


def lower_select(q: exp.Select, original: exp.Select | None, outer: frozenset[str] = frozenset(),
                 views: bool = True, *, dialect: str) -> Lowered:
    """``q`` lowered; ``outer``: the aliases of the enclosing scopes (a subquery's alias that shadows one of
    them is renamed, with the columns of its scope, so every alias names one relation in the whole statement);
    ``views``: whether derived tables in its FROM are lowered as views (not inside a subquery of a condition)."""
    if outer:
        unshadow(q, outer)
    frm = q.args.get("from_")
    if frm is None:
        raise Unsupported("no FROM clause")
    for key in ("laterals", "pivots", "windows", "qualify", "connect", "match"):
        if q.args.get(key):
            raise Unsupported(f"{key.upper()} is not in the rewriter's subset")
    used = set(outer) | {n.alias_or_name for n in own_items(q)}
    found: list[View] = []

    def item(node: exp.Expression) -> tuple[str, str]:
        if views and isinstance(node, exp.Subquery):
            found.append(_view(node, used, dialect))
            return VIEW, found[-1].alias
        return _table(node)

    tables = [item(frm.this)]
    joins: list[tuple[str, str, tuple[Atom, ...]]] = []
    for j in q.args.get("joins") or []:
        side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
        if kind in ("CROSS", "") and side == "" and j.args.get("on") is None:
            how = "inner"
        elif side == "" and kind in ("", "INNER"):
            how = "inner"
        elif side == "LEFT" and kind in ("", "OUTER"):
            how = "left"
        else:
            raise Unsupported(f"{' '.join(x for x in (side, kind) if x)} JOIN is not in the rewriter's subset yet")
        tables.append(item(j.this))
        on = j.args.get("on")
        joins.append((tables[-1][1], how, tuple(_atoms(on, dialect, outer)) if on is not None else ()))
    where = q.args.get("where")
    scope = outer | frozenset(a for _, a in tables)
    atoms = tuple(_atoms(where.this, dialect, scope)) if where is not None else ()
    shell = (original if original is not None else q).copy()
    every = [*atoms, *(a for _, _, on in joins for a in on)]
    # a view's ORDER BY may go where the query around it reads no order of its rows (``settle_order`` looks
    # further out), unless it is what makes the view aggregate (``ORDER BY count(*)``) or picks its DISTINCT ON rows
    free = not reads_order(q)
    found = [replace(v, unordered=free and not _sort_matters(v.query.shell)) for v in found]
    # the subqueries of its select list, HAVING and ORDER BY (a condition's subquery has no shell of its own here)
    used |= set(scope).union(*(a.sub.every_alias() for a in atoms if a.sub is not None))
    subs = shell_subqueries(q, used, partial(_lowered_or_none, dialect=dialect), dialect=dialect) if views else ()
    return Lowered(tuple(tables), tuple(joins), atoms, shell, views=tuple(_pushes(v, every, dialect) for v in found),
                   qualified=names_as_written(q, original) if original is not None else None, subqueries=subs,
                   dialect=dialect)


def _lowered_or_none(sub: exp.Select, scope: frozenset[str], *, dialect: str) -> Lowered | None:
    """A shell's subquery lowered like a condition's, or None outside the subset (it stays as written, and the
    statement stays in the subset: whatever stops its lowering only keeps it from being decorrelated)."""
    try:
        return lower_select(sub, None, scope, views=False, dialect=dialect)
    except Exception:  # noqa: BLE001
        return None


def _view(node: exp.Subquery, used: set[str], dialect: str) -> View:
    """A derived table in FROM as a view; its aliases are renamed apart from every alias ``used`` so far (which
    then holds them too)."""
    sub, alias = node.this, node.alias_or_name
    if not isinstance(sub, exp.Select) or not alias or sub.args.get("with_"):
        raise Unsupported("only base tables and derived tables (one SELECT with an alias) in FROM: no nested joins, "
                          "set operations or WITH inside")
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in sub.expressions):
        raise Unsupported("a derived table that selects * (its columns are not known by name)")
    low = lower_select(sub, None, frozenset(used), dialect=dialect)
    written = node.args["alias"]
    columns = [c.name for c in written.columns] or [output_name(e, dialect) for e in low.shell.expressions]
    if len(columns) != len(low.shell.expressions):
        raise Unsupported(f"the derived table {alias} names a different number of columns than it selects")
    used |= low.every_alias()
    view_sql = exp.Subquery(this=low.shell.copy(), alias=written.copy()).sql(dialect=dialect)
    return View(low, alias, view_sql, describe(low.shell, columns, dialect=dialect), tuple(columns))


def _pushes(view: View, atoms: list[Atom], dialect: str) -> View:
    """``view`` with the conditions above it that read only its columns and may move into it, as they become
    inside (``optimizers.rewrites.sql.derived.push``)."""
    out = []
    for atom in atoms:
        if atom.kind == "plain" and atom.refs == {view.alias}:
            inner = push(atom.sql, view.alias, dict(view.shape.pushable), view.shape.grouped, dialect=dialect)
            if inner is not None:
                out.append((atom.sql, plain(sqlglot.parse_one(inner, read=dialect), dialect=dialect)))
    return replace(view, pushes=tuple(out))


def _table(node: exp.Expression) -> tuple[str, str]:
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        raise Unsupported("only base tables in FROM here (no derived tables inside a condition's subquery, no "
                          "functions or VALUES)")
    alias = node.args.get("alias")
    if alias is not None and alias.columns:
        raise Unsupported("a table alias that renames its columns is not in the subset")
    return (".".join(p.name for p in node.parts), node.alias_or_name)


def _atoms(node: exp.Expression, dialect: str, scope: frozenset[str] = frozenset(), seen: set[str] | None = None):
    """The conjuncts of ``node``, each as an ``Atom``; ``seen``: the aliases in use so far (the enclosing scopes'
    and those of the subqueries lowered before: sibling subqueries are renamed apart too, so a rule that joins
    two of them into one FROM never meets the same alias twice)."""
    seen = set(scope) if seen is None else seen
    for part in node.flatten() if isinstance(node, exp.And) else (node,):
        inner = part.unnest() if isinstance(part, exp.Paren) else part
        if isinstance(inner, exp.And):
            yield from _atoms(inner, dialect, scope, seen)
            continue
        negated = isinstance(inner, exp.Not)
        body = inner.this.unnest() if negated else inner
        atom = None
        if isinstance(body, exp.In) and body.args.get("query") is not None:
            atom = _in_subquery(part, body, negated, frozenset(seen), dialect)
        elif isinstance(body, exp.Exists):
            sub = body.this
            if not isinstance(sub, exp.Select) or _shaped(sub) or has_aggregate(sub.expressions):
                raise Unsupported("EXISTS over a subquery outside the subset (GROUP BY, HAVING, LIMIT, OFFSET, "
                                  "DISTINCT ON, an aggregate, or not a SELECT)")
            low = lower_select(sub, None, frozenset(seen), views=False, dialect=dialect)
            outer = frozenset().union(*(a.refs for a in low.atoms)) - low.aliases
            atom = Atom(part.sql(dialect=dialect), outer, frozenset(), "not_exists" if negated else "exists", low)
        else:
            atom = _scalar_comparison(inner, frozenset(seen), dialect)
        if atom is not None:
            seen |= atom.sub.every_alias()
            yield atom
            continue
        if any(isinstance(n, (exp.Subquery, exp.Select)) for n in inner.find_all(exp.Subquery, exp.Select)):
            raise Unsupported("subqueries other than [NOT] EXISTS and scalar comparisons are not in the "
                              "rewriter's subset yet")
        yield plain(inner, dialect=dialect)


def _shaped(sub: exp.Select) -> bool:
    """Whether a subquery's shell changes which rows it has beyond its FROM / WHERE (GROUP BY, HAVING, LIMIT,
    OFFSET, DISTINCT ON): then it is not a semi-join's plain right side."""
    distinct = sub.args.get("distinct")
    return any(sub.args.get(k) is not None for k in ("group", "having", "limit", "offset")) or \
        (distinct is not None and distinct.args.get("on") is not None)


def _sort_matters(select: exp.Select) -> bool:
    """Whether a SELECT's own ORDER BY changes its rows (not only their order): it holds an aggregate (the query
    aggregates because of it) or picks the rows of a DISTINCT ON."""
    distinct = select.args.get("distinct")
    return has_aggregate((select.args.get("order") or exp.Order()).expressions) or (
        distinct is not None and distinct.args.get("on") is not None)


def _in_subquery(part: exp.Expression, body: exp.In, negated: bool, scope: frozenset[str], dialect: str) -> Atom:
    """``x [NOT] IN (SELECT y FROM ... WHERE ...)`` as the subquery with ``y = x`` among its conditions: an
    ``exists`` atom for IN (the same rows in a WHERE conjunct, where NULL and false both drop the row), a
    ``not_in`` atom for NOT IN, with (x, y) in ``detail`` (an anti-join only where neither can be NULL)."""
    sub = body.args["query"].this if isinstance(body.args["query"], exp.Subquery) else body.args["query"]
    if not isinstance(sub, exp.Select) or len(sub.expressions) != 1 or sub.args.get("limit") \
            or sub.args.get("offset"):
        raise Unsupported("an IN subquery outside the subset (LIMIT, OFFSET, several columns or not a SELECT)")
    x = body.this
    if list(x.find_all(exp.Subquery, exp.Select)):
        raise Unsupported("a subquery on the left of IN")
    distinct = sub.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise Unsupported("an IN subquery with DISTINCT ON (it picks rows) is not in the subset")
    if sub.args.get("group") or sub.args.get("having") or has_aggregate(sub.expressions):
        low, y = _grouped_in(sub, x, scope, dialect)
    elif any(isinstance(n, exp.Window) or _set_returning(n) for n in sub.expressions[0].walk()):
        raise Unsupported("an IN subquery selecting a window or set-returning function is not in the subset")
    else:
        low = lower_select(sub, None, scope, views=False, dialect=dialect)
        y = sub.expressions[0].unalias() if isinstance(sub.expressions[0], exp.Alias) else sub.expressions[0]
        low = Lowered(low.tables, low.joins,
                      low.atoms + (plain(exp.EQ(this=y.copy(), expression=x.copy()), dialect=dialect),), low.shell,
                      dialect=dialect)
    outer = frozenset().union(*(a.refs for a in low.atoms)) - low.aliases
    if not negated:
        return Atom(part.sql(dialect=dialect), outer, frozenset(), "exists", low)
    return Atom(part.sql(dialect=dialect), outer, frozenset(), "not_in", low, (x, y))


def _grouped_in(sub: exp.Select, x: exp.Expression, scope: frozenset[str],
                dialect: str) -> tuple[Lowered, exp.Expression]:
    """An uncorrelated grouped (or aggregating) IN subquery as a semi-join's right side: a view of its query, and
    ``view.column = x`` as the condition; with the inner expression it selects."""
    # named after what it holds: two such subqueries of one statement get names of their own (an identical one
    # is the same relation), and no alias of the statement is taken
    digest = hashlib.sha1(f"{sub.sql(dialect=dialect)} = {x.sql(dialect=dialect)}".encode()).hexdigest()
    name = next(f"sq_{digest[:n]}" for n in range(6, 41) if f"sq_{digest[:n]}" not in scope)
    item = sub.expressions[0]
    y = item.unalias() if isinstance(item, exp.Alias) else item
    column = item.alias if isinstance(item, exp.Alias) else y.name if isinstance(y, exp.Column) else "k"
    query = sub.copy()
    query.set("expressions", [exp.alias_(y.copy(), column)])
    low = lower_select(query, None, scope | {name}, dialect=dialect)
    if {c.table for c in low.shell.find_all(exp.Column) if c.table} - low.every_alias():
        raise Unsupported("a grouped IN subquery that reads the outer query (in WHERE, HAVING or its select list)")
    view_sql = exp.Subquery(this=low.shell.copy(), alias=exp.TableAlias(this=exp.to_identifier(name)))
    view = View(low, name, view_sql.sql(dialect=dialect), describe(low.shell, [column], dialect=dialect), (column,),
                not _sort_matters(low.shell))
    match = plain(exp.EQ(this=exp.column(column, table=name), expression=x.copy()), dialect=dialect)
    return (Lowered(((VIEW, name),), (), (match,), exp.select("1"), views=(view,), dialect=dialect),
            low.shell.expressions[0].unalias())


def _scalar_comparison(node: exp.Expression, scope: frozenset[str], dialect: str) -> Atom | None:
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
    low = lower_select(sub, None, scope, views=False, dialect=dialect)
    inner_outer = frozenset().union(*(a.refs for a in low.atoms)) - low.aliases
    refs = refs_of(outer) | inner_outer
    select = sub.expressions[0].unalias() if isinstance(sub.expressions[0], exp.Alias) else sub.expressions[0]
    return Atom(node.sql(dialect=dialect), refs, frozenset(), "scalar", low,
                (op, outer.sql(dialect=dialect), select.sql(dialect=dialect), select))
