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

The other repair: a set that is over the budget once built keeps the subset with the most measured saving that
fits (``within_budget``, an exact knapsack, ``optimizers.indexes.knapsack``), never a greedy by saving per byte:
on TPC-H (SF 0.3, budget 109 MB, built 121 MB) that greedy dropped ``lineitem(l_shipdate)``, the index behind a
one-week range on the largest table (108 ms -> ~2 ms a call), and kept indexes saving under 3 ms a call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from advisor.core.domain import IndexChange, StatementEvidence
from optimizers.indexes.knapsack import best_within
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


def measured_savings(live: Sequence[IndexChange], serves: Mapping[IndexChange, Sequence[str]],
                     by_stmt: Mapping[str, StatementEvidence]) -> dict[IndexChange, float]:
    """Per index of ``live``, the weighted time (ms per workload run) it saved on the built set: each statement
    measured faster (the whole interval of its ratio below 1) and not regressed gives ``weight x (baseline ms -
    candidate ms)``, shared evenly among the indexes of ``live`` its plan uses.

    What is approximated: the set was timed whole, so what a statement keeps when only some of the indexes its
    plan used stay is not measured. Sharing is exact for a statement one index serves (most of them) and keeps the
    totals right (a join using two new indexes is not counted twice); a kept subset's saving is taken as the sum
    of its indexes' shares.

    >>> a, b = IndexChange("public", "t", ("a",)), IndexChange("public", "u", ("b",))
    >>> st = lambda q, w, base, cand: StatementEvidence(q, "", w, base, cand, cand / base, (0.1, 0.9), False)
    >>> by_stmt = {"q1": st("q1", 2, 10, 5), "q2": st("q2", 1, 8, 2)}
    >>> out = measured_savings([a, b], {a: ("q1", "q2"), b: ("q2",)}, by_stmt)
    >>> out[a], out[b]  # q1 saved 2 x 5 ms through a alone; q2's 6 ms are shared by a and b
    (13.0, 3.0)
    """
    users: dict[str, int] = {}
    for ix in live:
        for q in serves.get(ix, ()):
            users[q] = users.get(q, 0) + 1
    out = {}
    for ix in live:
        mine = [by_stmt[q] for q in serves.get(ix, ()) if q in by_stmt and not by_stmt[q].regressed]
        out[ix] = sum(s.weight * (s.baseline_ms - s.candidate_ms) / users[s.queryid] for s in mine
                      if s.ratio_ci[1] < 1.0)
    return out


def within_budget(saved: Mapping[IndexChange, float], sizes: Mapping[IndexChange, int],
                  budget_bytes: int) -> list[IndexChange]:
    """The indexes to drop so that the rest fits ``budget_bytes`` (built sizes, bytes) with the largest total
    measured saving (``saved``: ms, see ``measured_savings``): an exact knapsack. An index that saved nothing is
    dropped only when the rest does not fit anyway. Order: as ``saved`` lists them.

    >>> big, small = IndexChange("public", "lineitem", ("l_shipdate",)), IndexChange("public", "part", ("p_size",))
    >>> tiny = IndexChange("public", "part", ("p_brand",))
    >>> saved, sizes = {big: 318.0, small: 5.0, tiny: 4.0}, {big: 40_000_000, small: 2_000_000, tiny: 1_000_000}
    >>> [ix.label() for ix in within_budget(saved, sizes, 41_000_000)]  # a greedy by ms per byte drops big
    ['part(p_size)']
    >>> within_budget(saved, sizes, 43_000_000)
    []
    """
    live = list(saved)
    if sum(sizes.get(ix, 0) for ix in live) <= budget_bytes:
        return []
    kept = {live[i] for i in best_within([saved[ix] for ix in live], [sizes.get(ix, 0) for ix in live],
                                         budget_bytes)}
    return [ix for ix in live if ix not in kept]


# --- choosing what a pass drops and what it tries instead (the validation's judging, advisor.tuning.indexes.validation)


def repairs(culprits, suspects: dict[IndexChange, list[StatementEvidence]], reads: set[str],
             spares: Sequence[Spare], live: list[IndexChange], sizes: dict, estimated: dict,
             budget_bytes: int | None, tried: set[IndexChange]) -> dict[IndexChange, tuple[IndexChange, str]]:
    """Per culprit dropped for a read it misled (its worst), the spare to try in its place
    (``pick``) while the estimates fit the budget next to the built sizes of ``live``, and that
    read's queryid."""
    room = float("inf") if budget_bytes is None else \
        budget_bytes - sum(sizes.get(ix) or estimated.get(ix, 0) for ix in live)
    out: dict[IndexChange, tuple[IndexChange, str]] = {}
    for ix in sorted(culprits, key=repr):
        bad = [s for s in suspects[ix] if s.queryid in reads]
        if not bad:
            continue
        worst = max(bad, key=lambda s: s.ratio if s.ratio == s.ratio else 9.9)
        spare = pick(ix, worst.queryid, spares, tried | {fix for fix, _ in out.values()}, room)
        if spare is not None:
            out[ix] = (spare.index, worst.queryid)
            room -= spare.estimated_bytes
    return out


def mb(n: float) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


def over_budget(live: list[IndexChange], sizes: dict, budget: int, serves: dict[IndexChange, tuple[str, ...]],
                 by_stmt: dict[str, StatementEvidence], estimated: dict | None = None) -> list[IndexChange]:
    """The indexes to drop so that the built sizes (bytes; the estimate where none was read) of the rest fit
    ``budget`` with the most measured saving kept: an exact knapsack over each index's share of the time saved
    (``measured_savings``, ``within_budget``)."""
    size = {ix: sizes.get(ix) or (estimated or {}).get(ix, 0) for ix in live}
    return within_budget(measured_savings(live, serves, by_stmt), size, budget)


def culprits(suspects: dict[IndexChange, list[StatementEvidence]], serves: dict[IndexChange, tuple[str, ...]],
              by_stmt: dict[str, StatementEvidence], every: bool,
              diagnosed: dict[str, IndexChange] | None = None) -> set[IndexChange]:
    """The indexes to drop for the regressions: with ``every``, all suspects, except that a statement ``diagnosed``
    (cured by dropping one index) loses that one only; otherwise per regressed statement
    the suspect ``diagnosed`` for it, else the one that saved the least weighted time on the statements it serves
    that did not regress (its share, ``measured_savings``; ties: the one serving fewer statements,
    then by name, so the choice is deterministic)."""
    diagnosed = diagnosed or {}
    if every:  # the passes after the careful ones: every suspect of a statement without a diagnosis that cures it
        return {ix for ix, bad in suspects.items() if any(st.queryid not in diagnosed for st in bad)} | \
            {diagnosed[q] for q in {st.queryid for bad in suspects.values() for st in bad} if q in diagnosed}

    shares = measured_savings(list(serves), serves, by_stmt)

    def saved(ix: IndexChange) -> float:
        return shares.get(ix, 0.0)

    blamed: dict[str, list[IndexChange]] = {}
    for ix, bad in suspects.items():
        for st in bad:
            blamed.setdefault(st.queryid, []).append(ix)
    return {diagnosed[q] if diagnosed.get(q) in found else min(found, key=lambda ix: (saved(ix), len(serves[ix]),
                                                                                      repr(ix)))
            for q, found in blamed.items()}
