"""Repairs during index validation: when a chosen index is dropped because it misled a statement's plan, a wider
candidate of the pool with the same leading column is tried in its place.

Why: on JOB the single-column foreign-key indexes (``movie_info(movie_id)`` ...) carry most of the gain, and each
misleads one to three plans: a nested loop under a misestimated join fetches every heap row the index points to
and filters it there (31 ms -> 613 ms). The same join through ``movie_info(movie_id, info_type_id, info)`` filters
inside the index, so a misestimate costs index entries, not heap fetches; Dexter's composite indexes passed
validation nearly whole where the single-column ones did not. Dropping the index throws the gain away; trying the
wider one keeps it when the real measurement says so (the repair is validated like any other index: built,
measured, pruned).

A *spare* is a candidate the optimizer did not choose, with the statements whose columns it covers and its
calibrated size estimate. ``spares`` lists those that could repair a chosen index; ``pick`` chooses one for an
index dropped for a regressed statement.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.core.domain import IndexChange
from optimizers.indexes.problem import IndexProblem


@dataclass(frozen=True)
class Spare:
    index: IndexChange
    queries: frozenset[str]  # the statements whose columns it covers
    estimated_bytes: int


def width(ix: IndexChange) -> int:
    """Key and INCLUDE columns.

    >>> width(IndexChange("public", "t", ("a", "b"), include=("c",)))
    3
    """
    return len(ix.columns) + len(ix.include)


def could_repair(spare: IndexChange, ix: IndexChange) -> bool:
    """``spare`` is on ``ix``'s table, leads with its first column, is wider and is not partial (a partial index
    serves fewer statements, not the same ones better).

    >>> a = IndexChange("public", "mi", ("movie_id",))
    >>> could_repair(IndexChange("public", "mi", ("movie_id", "info")), a)
    True
    >>> could_repair(IndexChange("public", "mi", ("info", "movie_id")), a), could_repair(a, a)
    (False, False)
    """
    return (spare.schema, spare.table) == (ix.schema, ix.table) and spare.columns[:1] == ix.columns[:1] \
        and width(spare) > width(ix) and spare.where is None and spare != ix


def spares(problem: IndexProblem, chosen: Iterable[IndexChange]) -> tuple[Spare, ...]:
    """The candidates of ``problem`` not in ``chosen`` that could repair one of ``chosen``, with their size
    estimates (asked of the what-if coster: call it inside its session)."""
    chosen = tuple(chosen)
    return tuple(Spare(c.index, c.queries, problem.whatif.size(c.index)) for c in problem.candidates
                 if c.index not in chosen and any(could_repair(c.index, ix) for ix in chosen))


def pick(ix: IndexChange, statement: str, pool: Sequence[Spare], tried: set[IndexChange],
         room: float) -> Spare | None:
    """The spare to try in place of ``ix``, dropped for misleading ``statement``'s plan: one that could repair it,
    covers ``statement``, was not tried before and whose estimate fits ``room`` bytes; the widest, then the
    smallest, then by name. None when there is none."""
    fits = [s for s in pool if could_repair(s.index, ix) and statement in s.queries and s.index not in tried
            and s.estimated_bytes <= room]
    return min(fits, key=lambda s: (-width(s.index), s.estimated_bytes, repr(s.index)), default=None)
