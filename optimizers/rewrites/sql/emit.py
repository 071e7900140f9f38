"""The algebra back to SQL in the statement's dialect (``Lowered.dialect``): an extracted term
(``optimizers.rewrites.algebra.terms``) becomes the statement: its core a FROM tree and a WHERE, put into the
statement's shell as written, less the clauses whose operators (``optimizers.rewrites.sql.shell_operators``) a rule
removed (a DISTINCT over a key, an ORDER BY a view need not keep).

Inner joins are written ``JOIN ... ON`` (``CROSS JOIN`` for no condition), a join whose right side is itself a
join is parenthesised, a LEFT JOIN takes its right side's filters into its ON (the same rows: they only filter the
nullable side), semi and anti joins are written ``[NOT] EXISTS (SELECT 1 FROM ... WHERE ...)``.

>>> from optimizers.rewrites.sql.lower import lower
>>> schema = {"t": {"a": "int", "b": "int"}, "u": {"c": "int", "d": "text"}}
>>> low = lower("SELECT a FROM t, u WHERE t.a = u.c AND b > 1", schema, dialect="postgres")
>>> from optimizers.rewrites.search.term import to_term
>>> term, *_ = to_term(low, {}, lambda atom: 0.5)
>>> to_sql(term, low)
'SELECT a FROM t CROSS JOIN u WHERE t.a = u.c AND t.b > 1'
>>> drop = sqlglot.parse_one("SELECT DISTINCT a FROM t ORDER BY a", read="postgres")
>>> _trim(drop, {Rel.project, Rel.sort}).sql(dialect="postgres")
'SELECT a FROM t ORDER BY a'
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from egglog import get_callable_args, get_callable_fn, get_literal_value
from sqlglot import exp

from optimizers.rewrites.algebra.terms import Pred, Rel
from optimizers.rewrites.sql.lowered import Lowered
from optimizers.rewrites.sql.scopes import identifier
from optimizers.rewrites.sql.shell_operators import clause_texts, group_keys


@dataclass(frozen=True)
class Block:
    """A relation as SQL: its FROM tree, whether that is a single table, and the conditions on its rows."""

    source: str
    single: bool
    where: tuple[str, ...]


def to_sql(term: Rel, shell: Lowered) -> str:
    """``term`` (a core extracted from the e-graph) inside the statement's shell, as SQL of its dialect (the whole
    statement: a block, ``shell.nested``, is put back where it was)."""
    sql = _statement(term, shell).sql(dialect=shell.dialect)
    return shell.nested.splice(sql) if shell.nested is not None else sql


SHELL = (Rel.group, Rel.project, Rel.distinct, Rel.sort, Rel.limit)


def _peel(term: Rel, dialect: str) -> tuple[Rel, set, tuple[str, ...], dict[str, str]]:
    """A SELECT's term as (its core, the shell operators it has, the conditions of filters among them: a filter
    moved into a view on its way down to the core reads what the view's WHERE may read, and the texts its select
    list, grouping and ORDER BY operators hold: ``items``, ``group``, ``having``, ``order``)."""
    present: set = set()
    extra: list[str] = []
    pending: list[str] = []
    texts: dict[str, str] = {}
    node = core = term
    while True:
        fn, args = get_callable_fn(node), get_callable_args(node)
        if fn in SHELL:
            present.add(fn)
            extra += pending
            pending = []
            if fn in (Rel.project, Rel.group, Rel.sort):
                names = {Rel.project: ("items",), Rel.group: ("group", "having"), Rel.sort: ("order",)}[fn]
                texts.update(zip(names, (get_literal_value(a) for a in args[1:])))
            node = core = args[0]
        elif fn == Rel.filter:
            pending += atoms(args[1], dialect)
            node = args[0]
        else:
            return core, present, tuple(extra), texts


def _trim(select: exp.Expression, present: set) -> exp.Expression:
    """``select`` less the clauses whose operators are not ``present`` (removed by a rule); a set operation's shell
    has only its ORDER BY and LIMIT as operators (its ``distinct`` is UNION's, not ALL)."""
    for fn, keys in ((Rel.distinct, ("distinct",)), (Rel.sort, ("order",)), (Rel.limit, ("limit", "offset")),
                     (Rel.group, ("group", "having"))):
        if fn not in present and (isinstance(select, exp.Select) or fn in (Rel.sort, Rel.limit)):
            for key in keys:
                select.set(key, None)
    return select


def _reshell(select: exp.Expression, texts: dict[str, str], written: exp.Expression, dialect: str) -> None:
    """``select`` with each clause whose extracted operator holds another text than ``written``'s (the shell with
    its subqueries decorrelated: ``rules.decorrelate_shell``) as the operator holds it."""
    if not isinstance(select, exp.Select) or not isinstance(written, exp.Select):
        return
    was = {**clause_texts(written, dialect=dialect), "group": group_keys(written, dialect=dialect)}
    for key, text in texts.items():
        if text == was[key]:
            continue
        if key == "items":
            select.set("expressions", sqlglot.parse_one(f"SELECT {text}", read=dialect).expressions)
        elif key == "having":
            select.set("having", exp.Having(this=sqlglot.parse_one(text, read=dialect)) if text else None)
        else:
            clause = "GROUP BY" if key == "group" else "ORDER BY"
            parsed = sqlglot.parse_one(f"SELECT 1 {clause} {text}", read=dialect)
            select.set(key, parsed.args[key])


def _statement(term: Rel, low: Lowered) -> exp.Expression:
    """``term`` in ``low``'s shell; a set operation's branches each in their own, in their places."""
    term, present, extra, texts = _peel(term, low.dialect)
    out = _trim(low.shell.copy(), present)
    if low.setop is not None:
        _keyword, left, right = low.setop
        a, b = get_callable_args(term)[1:]
        out.set("this", _statement(a, left))
        out.set("expression", _statement(b, right))
        return out
    if low.qualified is not None and _from_aliases(term) - low.aliases:
        # a relation a rule brought into FROM (a subquery joined in, a decorrelated aggregate) may share a column
        # name the statement wrote unqualified: the statement's clauses are written qualified, names as written
        out = _trim(low.qualified.copy(), present)
    _reshell(out, texts, low.qualified if low.qualified is not None else low.shell, low.dialect)
    if any(isinstance(e, exp.Star) for e in out.expressions):
        # SELECT * reads every FROM item's columns in FROM order: the rewrite may add derived tables and reorder
        # joins, so the star becomes each original table's columns, in the original order
        stars = [exp.Column(this=exp.Star(), table=identifier(alias, low.dialect)) for _table, alias in low.tables]
        out.set("expressions", [x for e in out.expressions for x in (stars if isinstance(e, exp.Star) else [e])])
    block = block_of(term, low.dialect)
    _fill(out, Block(block.source, block.single, block.where + extra), low.dialect)
    return out


def _fill(select: exp.Select, block: Block, dialect: str) -> None:
    """``select`` (a shell) with ``block`` as its FROM, JOINs and WHERE."""
    skeleton = sqlglot.parse_one(f"SELECT 1 FROM {block.source}", read=dialect)
    select.set("from_", skeleton.args["from_"])
    select.set("joins", skeleton.args.get("joins"))
    select.set("where", exp.Where(this=sqlglot.parse_one(" AND ".join(block.where), read=dialect))
               if block.where else None)


def block_of(term: Rel, dialect: str) -> Block:
    """``term`` (a relation) as a ``Block`` of SQL in ``dialect``."""
    fn, args = get_callable_fn(term), get_callable_args(term)
    if fn == Rel.scan:
        table, alias = (get_literal_value(a) for a in args)
        name = ".".join(identifier(part, dialect).sql(dialect=dialect) for part in table.split("."))
        return Block(name if table == alias else f"{name} AS {identifier(alias, dialect).sql(dialect=dialect)}", True, ())
    if fn == Rel.derived:
        sql, alias = (get_literal_value(a) for a in args)
        return Block(f"({sql}) AS {alias}", True, ())
    if fn == Rel.view:
        # a view: its query as written, less the clauses a rule removed, with the extracted core as its FROM / WHERE
        view = sqlglot.parse_one(f"SELECT 1 FROM {get_literal_value(args[2])}", read=dialect).args["from_"].this
        core, present, extra, texts = _peel(args[0], dialect)
        inner = block_of(core, dialect)
        written = view.this.copy()
        _reshell(_trim(view.this, present), texts, written, dialect)
        _fill(view.this, Block(inner.source, inner.single, inner.where + extra), dialect)
        return Block(view.sql(dialect=dialect), True, ())
    if fn == Rel.filter:
        inner = block_of(args[0], dialect)
        return Block(inner.source, inner.single, inner.where + atoms(args[1], dialect))
    left, right, on = block_of(args[0], dialect), block_of(args[1], dialect), atoms(args[2], dialect)
    if fn == Rel.join:
        how = f"JOIN {_paren(right)} ON {' AND '.join(on)}" if on else f"CROSS JOIN {_paren(right)}"
        return Block(f"{left.source} {how}", False, left.where + right.where)
    if fn == Rel.left:
        cond = on + right.where
        return Block(f"{left.source} LEFT JOIN {_paren(right)} ON {' AND '.join(cond) or 'TRUE'}", False,
                     left.where)
    if fn in (Rel.semi, Rel.anti):
        cond = " AND ".join(on + right.where)
        sub = f"EXISTS (SELECT 1 FROM {right.source}{f' WHERE {cond}' if cond else ''})"
        return Block(left.source, left.single, left.where + ((sub,) if fn == Rel.semi else (f"NOT {sub}",)))
    raise ValueError(f"not a relation of the algebra: {fn}")


def atoms(pred: Pred, dialect: str) -> tuple[str, ...]:
    """A predicate's conjuncts as SQL in ``dialect`` (``TRUE`` left out)."""
    fn, args = get_callable_fn(pred), get_callable_args(pred)
    if fn == Pred.both:
        return atoms(args[0], dialect) + atoms(args[1], dialect)
    text = get_literal_value(args[0])
    return () if text == "TRUE" else (f"({text})" if _needs_paren(text, dialect) else text,)


def _paren(block: Block) -> str:
    return block.source if block.single else f"({block.source})"


def _needs_paren(text: str, dialect: str) -> bool:
    """An atom whose top operator binds looser than AND (an OR) is parenthesised."""
    return isinstance(sqlglot.parse_one(text, read=dialect), exp.Or)


def _from_aliases(term: Rel) -> set[str]:
    """The aliases of the relations ``term`` writes in its FROM (a semi- or anti-join's right side goes into an
    EXISTS instead)."""
    fn, args = get_callable_fn(term), get_callable_args(term)
    if fn in (Rel.scan, Rel.derived, Rel.view):
        return {get_literal_value(args[1])}  # scan(table, alias), derived(sql, alias), view(body, alias, written)
    if fn == Rel.filter or fn in (Rel.semi, Rel.anti):
        return _from_aliases(args[0])
    return _from_aliases(args[0]) | _from_aliases(args[1])
