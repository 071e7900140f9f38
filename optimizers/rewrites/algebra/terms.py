"""The relational algebra the rewriter saturates: its terms, as egglog sorts.

A statement is one term (``optimizers.rewrites.search.term`` builds it from ``optimizers.rewrites.sql.lower``'s
lowering): its FROM / WHERE core under its shell's operators (``optimizers.rewrites.sql.shell_operators``);
``optimizers.rewrites.sql.emit`` writes an extracted term back as SQL. What is known of a term (its aliases, rows,
keys, NULLs, cost) is in ``optimizers.rewrites.algebra.analyses``. Scalar expressions are opaque SQL atoms that carry
what rules need to know about them:

- ``Pred.atom(sql, refs, rejects)``: a predicate's text (columns qualified by their relation's alias), the aliases
  it reads, and the aliases whose all-NULL row makes it not true (a strict comparison rejects NULLs of every alias
  it reads; ``IS NULL``, ``COALESCE`` and ``OR`` reject none), what turning an outer join inner needs;
- ``Pred.both(p, q)``: a conjunction.

Relations: ``scan(table, alias)``, ``derived(sql, alias)`` (a subquery in FROM, opaque: what decorrelation
introduces), ``view(body, alias, written)`` (a derived table or grouped IN subquery whose own query ``body`` is
searched with the rest, written back into ``written``: ``optimizers.rewrites.sql.derived``), ``setop(keyword, a,
b)`` (UNION [ALL] / INTERSECT / EXCEPT of two branches: ``optimizers.rewrites.sql.setops``), ``filter``, inner
``join``, ``left`` (LEFT JOIN), ``semi`` (EXISTS) and ``anti`` (NOT EXISTS) joins, each with its ON predicate; a
SELECT's shell: ``group(keys, having)`` (GROUP BY / HAVING, or an aggregate over all rows), ``project(items)`` (the
select list), ``distinct(on)``, ``sort(keys)`` (ORDER BY) and ``limit(clause)``, each holding its clause's text.
"""

from __future__ import annotations

from egglog import Expr, Set, String, StringLike

ALIASES = Set[String]


class Pred(Expr):
    """A predicate: an opaque atom, or a conjunction of two."""

    @classmethod
    def atom(cls, sql: StringLike, refs: ALIASES, rejects: ALIASES) -> Pred: ...

    @classmethod
    def both(cls, p: Pred, q: Pred) -> Pred: ...


class Rel(Expr):
    """A relation: a base table's scan or an operator over relations."""

    @classmethod
    def scan(cls, table: StringLike, alias: StringLike) -> Rel: ...

    @classmethod
    def derived(cls, sql: StringLike, alias: StringLike) -> Rel: ...

    @classmethod
    def view(cls, body: Rel, alias: StringLike, written: StringLike) -> Rel: ...

    @classmethod
    def setop(cls, keyword: StringLike, a: Rel, b: Rel) -> Rel: ...

    def filter(self, pred: Pred) -> Rel: ...

    def join(self, other: Rel, on: Pred) -> Rel: ...

    def left(self, other: Rel, on: Pred) -> Rel: ...

    def semi(self, other: Rel, on: Pred) -> Rel: ...

    def anti(self, other: Rel, on: Pred) -> Rel: ...

    # a SELECT's shell, each clause an operator over the rows below it, its text as written (emission keeps the
    # clauses whose operators the extracted form still has)
    def group(self, keys: StringLike, having: StringLike) -> Rel: ...

    def project(self, items: StringLike) -> Rel: ...

    def distinct(self, on: StringLike) -> Rel: ...

    def sort(self, keys: StringLike) -> Rel: ...

    def limit(self, clause: StringLike) -> Rel: ...


def alias_set(names: frozenset[str]) -> Set[String]:
    """A set of aliases as the algebra's ``Set[String]``."""
    return Set[String](*(String(n) for n in sorted(names))) if names else Set[String].empty()
