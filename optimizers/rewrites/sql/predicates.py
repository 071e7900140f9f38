"""Predicates as the algebra sees them: an ``Atom`` (one conjunct's SQL, the aliases it reads, those whose NULLs
make it not true, the columns an equality equates and those whose NULL makes it not true), and how those are read
off a syntax tree. A comparison is strict (rejects NULLs) only through parts that keep a NULL NULL.

>>> import sqlglot
>>> a = plain(sqlglot.parse_one("t.a = u.c + 1", read="postgres"), dialect="postgres")
>>> sorted(a.rejects), sorted(a.nonnull), a.equals[0]
(['t', 'u'], ['t.a', 'u.c'], ('t.a', frozenset({'u'})))
>>> plain(sqlglot.parse_one("5 IN (t.a, t.b)", read="postgres"), dialect="postgres").rejects
frozenset()
"""

from __future__ import annotations

from sqlglot import exp

from optimizers.rewrites.sql.lowered import Atom

def plain(node: exp.Expression, *, dialect: str) -> Atom:
    """A predicate without subqueries as a ``plain`` atom (with the columns an equality equates), its SQL written in
    ``dialect`` (sqlglot's name)."""
    refs = refs_of(node)
    equals = ()
    if isinstance(node, exp.EQ):
        equals = tuple((name(col), refs_of(other))
                       for col, other in ((node.this, node.expression), (node.expression, node.this))
                       if isinstance(col, exp.Column) and col.table)
    return Atom(node.sql(dialect=dialect), refs, rejects(node, refs), equals=equals, nonnull=nonnull(node, refs))


def refs_of(node: exp.Expression) -> frozenset[str]:
    return frozenset(c.table for c in node.find_all(exp.Column) if c.table)


STRICT = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.Between, exp.In)
LENIENT = (exp.Is, exp.Coalesce, exp.Or, exp.Case, exp.If, exp.Not, exp.NullSafeEQ, exp.NullSafeNEQ)
# the parts of a strict comparison through which a NULL stays NULL (a function such as concat, greatest or
# num_nulls may turn a NULL into a value, and a row comparison (a, b) <> (1, 2) is true when b differs, so any
# other part makes the comparison not strict)
NULL_PROPAGATING = (*STRICT, exp.Column, exp.Identifier, exp.Literal, exp.Paren, exp.Cast, exp.DataType, exp.Add,
                    exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Interval, exp.Var, exp.Upper,
                    exp.Lower, exp.Substring, exp.Length, exp.Abs, exp.Extract, exp.Placeholder, exp.Parameter,
                    exp.Escape, exp.Null)


def rejects(node: exp.Expression, refs: frozenset[str]) -> frozenset[str]:
    """Aliases whose all-NULL row makes ``node`` not true: every alias it reads when it is a strict comparison
    whose every part keeps a NULL NULL (columns, constants, arithmetic, casts; no IS [NOT] NULL, COALESCE, OR,
    CASE, NOT, IS DISTINCT FROM or other function); none otherwise."""
    if not isinstance(node, STRICT) or not all(isinstance(n, NULL_PROPAGATING) for n in node.walk()):
        return frozenset()
    if isinstance(node, exp.In) and any(list(e.find_all(exp.Column)) for e in node.expressions):
        return frozenset()  # 5 IN (a, b): true when b = 5 whatever a is
    return refs


def nonnull(node: exp.Expression, refs: frozenset[str]) -> frozenset[str]:
    """The columns ("alias.column") whose NULL makes ``node`` not true: every column of a strict comparison, the
    column of ``column IS NOT NULL``."""
    test = node.this if isinstance(node, exp.Not) else node  # NOT (x IS NULL), or x IS NOT NULL (negated IS)
    if isinstance(test, exp.Is) and isinstance(test.expression, exp.Null) and isinstance(test.this, exp.Column) \
            and test.this.table and (test is not node) != bool(test.args.get("negate")):
        return frozenset({name(test.this)})
    if not rejects(node, refs):
        return frozenset()
    return frozenset(name(c) for c in node.find_all(exp.Column) if c.table)


def name(column: exp.Column) -> str:
    return f"{column.table}.{column.name}"
