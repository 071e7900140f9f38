"""What-if costs corrected by measured time: where the planner's estimate for a statement under an index set and
the time measured on a shadow disagree, the disagreement is learned and the choice is made again on corrected
costs (``CorrectedWhatIf``, a ``WhatIf`` any optimizer takes unchanged: Extend, the ILP, IA2's reward).

The planner's units are already turned into time across statements (``problem.time_scales``); what remains wrong is
a statement's cost *under a set of indexes relative to none*: a nested loop it expects to fetch 10 rows through an
index fetches 100,000 (the index makes it slower), or a range it expects to read through the heap is answered
inside the index (faster than estimated). Validation measures exactly that ratio for every statement whose plan uses
a new index; each such measurement is a ``Measured`` point: the statement, the new indexes its plan used, its
median time without them and with them.

Corrected ratio of a statement ``q`` under a configuration ``C`` (relevant indexes only), where ``est(q, X)`` is the
planner's cost and ``r(X) = est(q, X) / est(q, {})``:

- the measured point of ``q`` whose indexes ``U`` all lie in ``C`` and whose estimate is closest to ``C``'s (the
  plan most like ``C``'s): ``measured(U) x (est(q, C) / est(q, U)) ^ beta``, the rest of the way corrected by the
  *shape* model below (equal estimates: the measured ratio itself);
- no such point: ``r(C) ^ beta``.

``beta`` belongs to an index shape, ``(how the statement uses the index's leading column, single or wide)``: the
fitted exponent relating log measured ratios to log estimated ones over every point of that shape (this run's and
earlier runs' on the same target, ``history``), shrunk toward 1 (the planner believed) by ``PRIOR`` pseudo-points and
clipped to ``[0, MAX_BETA]``; a statement's own points enter the fit like
any other, so a shape whose indexes the planner keeps overrating (a join column under a misestimated nested loop)
loses credit everywhere, not only where it was measured.

>>> from advisor.core.domain import Costed
>>> from optimizers.indexes.problem import ColumnUse
>>> ix = IndexChange("public", "t", ("a",))
>>> class Fake:
...     calls = hits = 0
...     def cost(self, q, config): return Costed(10.0 if config else 100.0)
...     def size(self, index): return 8192
>>> q = Query("q1", "SELECT 1 FROM t WHERE a = 1", 1.0, frozenset({("public", "t")}))
>>> uses = ((("q1", ColumnUse(("public", "t"), "a", "equality"))),)
>>> c = Correction.fit([Measured("q1", frozenset({ix}), 50.0, 40.0)], Fake(), {"q1": q}, uses)
>>> w = CorrectedWhatIf(Fake(), c)
>>> round(w.cost(q, frozenset({ix})).total, 1), w.cost(q, frozenset()).total   # measured 0.8x, not 0.1x
(80.0, 100.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from advisor.core.domain import Costed, IndexChange
from optimizers.indexes.problem import ColumnUse, Config, Query, WhatIf, relevant

PRIOR = 3.0  # pseudo-points at beta = 1 that a shape's fit is shrunk by (``fit_beta``)
MAX_BETA = 1.5  # the planner may underrate an index's benefit, by this power at most
MIN_RATIO, MAX_RATIO = 1e-4, 10.0  # a corrected ratio is clipped here (a measured 30x regression stays "10x worse")
FLOOR_EST = 0.05  # points estimated at this ratio or less measure the floor (``Correction.floor_ms``)
USED = 0.98  # an estimate at or under this ratio means the plan uses the index (a point to learn from)
SAME_PLAN = 0.01  # estimates within this relative difference: taken as the same plan
HISTORY_POINTS = 2_000  # points kept across runs (the newest)


@dataclass(frozen=True)
class Measured:
    """One statement timed on a shadow with new indexes built (``used``: those its plan scanned) and without any:
    medians in ms."""

    queryid: str
    used: frozenset[IndexChange]
    baseline_ms: float
    candidate_ms: float

    @property
    def ratio(self) -> float:
        return self.candidate_ms / self.baseline_ms if self.baseline_ms > 0 else float("nan")


Shape = tuple[str, bool]  # (how the statement uses the index's leading column, wider than one column)


def shape(query: str, index: IndexChange, uses: Mapping[str, Sequence[ColumnUse]]) -> Shape:
    """The index shape for one statement: the strongest use the statement makes of the leading column
    (equality > range > join > group > order; "none" when it names it otherwise) and whether the index is wide.

    >>> u = {"q": [ColumnUse(("s", "t"), "a", "join"), ColumnUse(("s", "t"), "a", "range")]}
    >>> shape("q", IndexChange("s", "t", ("a", "b")), u)
    ('range', True)
    """
    order = ("equality", "range", "join", "group", "order")
    kinds = {u.kind for u in uses.get(query, ()) if u.table == (index.schema, index.table)
             and u.column.lower() == index.columns[0].lower()}
    return next((k for k in order if k in kinds), "none"), len(index.columns) > 1


def fit_beta(points: Iterable[tuple[float, float]]) -> float:
    """The exponent ``b`` of ``measured = estimated ^ b`` over (log estimated, log measured) ratios: least squares
    through the origin, shrunk toward 1 (the planner believed) by ``PRIOR`` pseudo-points as far from 1 as the
    data's average, so one measured statement moves a shape only part of the way; clipped to ``[0, MAX_BETA]``.

    >>> fit_beta([]), round(fit_beta([(math.log(0.1), math.log(0.5))]), 3)
    (1.0, 0.825)
    >>> round(fit_beta([(math.log(0.1), math.log(0.5))] * 20), 3)   # many agree: the data decides
    0.392
    >>> fit_beta([(math.log(0.1), math.log(2.0))] * 20)   # the index kept making it slower: no credit left
    0.0
    """
    n = sxy = sxx = 0.0
    for x, y in points:
        n += 1
        sxy += x * y
        sxx += x * x
    if not sxx > 0:
        return 1.0
    prior = PRIOR * sxx / n
    return min(MAX_BETA, max(0.0, (sxy + prior) / (sxx + prior)))


@dataclass
class Correction:
    """The fitted correction: per statement its measured points with their estimated costs and its baseline time
    (ms), per shape its exponent, and the machine's floor (``floor_ms``: what a statement the planner expects to
    become ~free still takes: the round trip, planning, executor start; the median time with the indexes of the
    points estimated at ``FLOOR_EST`` or less). ``points``: the (shape, log estimated, log measured) data the
    exponents were fitted on, the floor taken out (for ``history``)."""

    measured: dict[str, list[tuple[Config, float, float]]] = field(default_factory=dict)  # q -> (U, est, ratio)
    betas: dict[Shape, float] = field(default_factory=dict)
    uses: Mapping[str, Sequence[ColumnUse]] = field(default_factory=dict)
    points: list[tuple[Shape, float, float]] = field(default_factory=list)
    baseline_ms: dict[str, float] = field(default_factory=dict)
    floor_ms: float = 0.0

    @classmethod
    def fit(cls, measured: Iterable[Measured], whatif: WhatIf, queries: Mapping[str, Query],
            uses: Iterable[tuple[str, ColumnUse]], history: Iterable[tuple[Shape, float, float]] = ()) -> "Correction":
        """From this run's ``measured`` points (a statement with no index used gives its baseline time only; one not
        in ``queries`` or without a time is skipped) and earlier runs' ``history`` points; ``whatif`` gives the
        estimates (cached: no planner call for a configuration validation's search already costed)."""
        by_q: dict[str, list[ColumnUse]] = {}
        for qid, use in uses:
            by_q.setdefault(qid, []).append(use)
        out = cls(uses=by_q, points=[(tuple(s), float(x), float(y)) for s, x, y in history])  # type: ignore[misc]
        latest = {(m.queryid, m.used): m for m in measured}  # a read a later pass reused counts once
        bases: dict[str, list[float]] = {}
        found: list[tuple[Query, Config, float, float, Measured]] = []  # (query, used, est, base cost, point)
        for m in latest.values():
            q = queries.get(m.queryid)
            if q is None or not m.ratio > 0 or not math.isfinite(m.ratio):
                continue
            bases.setdefault(q.queryid, []).append(m.baseline_ms)
            used = relevant(q, m.used)
            base = whatif.cost(q, frozenset()).total
            if used and base > 0:
                found.append((q, used, whatif.cost(q, used).total, base, m))
        out.baseline_ms = {q: sorted(v)[len(v) // 2] for q, v in bases.items()}
        floors = sorted(m.candidate_ms for _q, _u, est, base, m in found if est / base <= FLOOR_EST)
        out.floor_ms = floors[len(floors) // 2] if floors else 0.0
        for q, used, est, base, m in found:
            out.measured.setdefault(q.queryid, []).append((used, est, m.ratio))
            if est / base > USED or (out.floor_ms and est / base <= FLOOR_EST):
                continue  # no benefit expected, or one the floor hides: nothing to learn about the shape
            y = math.log(m.ratio)
            if m.baseline_ms > out.floor_ms > 0:
                y = math.log(max(m.candidate_ms - out.floor_ms, 1e-3) / (m.baseline_ms - out.floor_ms))
            for ix in used:
                out.points.append((shape(q.queryid, ix, by_q), math.log(est / base), y))
        out.points = out.points[-HISTORY_POINTS:]
        grouped: dict[Shape, list[tuple[float, float]]] = {}
        for sh, x, y in out.points:
            grouped.setdefault(sh, []).append((x, y))
        out.betas = {sh: fit_beta(xy) for sh, xy in grouped.items()}
        return out

    def floored(self, query: str, ratio: float, start: float = 1.0) -> float:
        """``ratio`` (a model's, of the time above the floor) as a ratio of the whole time: the floor is not scaled
        (for a statement whose baseline time is known and above the floor). ``start``: the ratio measured where the
        model's ratio starts (1: from no index)."""
        b = self.baseline_ms.get(query, 0.0)
        if not self.floor_ms or not b > self.floor_ms or b * start <= self.floor_ms:
            return start * ratio
        return (self.floor_ms + (b * start - self.floor_ms) * ratio) / b

    def beta(self, query: str, config: Config) -> float:
        """The mean exponent of the shapes of ``config``'s indexes for ``query`` (1 for a shape never measured)."""
        if not config:
            return 1.0
        return sum(self.betas.get(shape(query, ix, self.uses), 1.0) for ix in config) / len(config)

    def ratio(self, query: Query, config: Config, whatif: WhatIf) -> float:
        """The corrected ratio of ``query``'s time under ``config`` (its relevant indexes) to its time without."""
        base = whatif.cost(query, frozenset()).total
        if not config or not base > 0:
            return 1.0
        est = whatif.cost(query, config).total
        near = [(u, e, r) for u, e, r in self.measured.get(query.queryid, ()) if u <= config]
        if near:
            used, e, r = min(near, key=lambda p: (abs(math.log(max(est, 1e-9) / max(p[1], 1e-9))), len(p[0])))
            if abs(est - e) <= SAME_PLAN * max(e, 1e-9):
                return min(MAX_RATIO, max(MIN_RATIO, r))
            step = max(est, 1e-9) / max(e, 1e-9)
            beta = self.beta(query.queryid, config - used or config)
            return min(MAX_RATIO, max(MIN_RATIO, self.floored(query.queryid, step ** beta, r)))
        return min(MAX_RATIO, max(MIN_RATIO, self.floored(query.queryid, (est / base) ** self.beta(query.queryid,
                                                                                                    config))))

    def report(self) -> dict:
        """What was learned, for the run's details: statements measured, points, exponents per shape."""
        return {"statements": len(self.measured), "points": len(self.points), "floor_ms": round(self.floor_ms, 3),
                "betas": {f"{k}{'/wide' if wide else ''}": round(b, 3) for (k, wide), b in sorted(self.betas.items())}}


class CorrectedWhatIf:
    """A ``WhatIf`` whose costs are ``inner``'s no-index cost times ``correction``'s ratio; sizes, counters and
    ``prefetch`` are ``inner``'s (it plans the same configurations)."""

    def __init__(self, inner: WhatIf, correction: Correction):
        self.inner = inner
        self.correction = correction

    @property
    def calls(self) -> int:
        return self.inner.calls

    @property
    def hits(self) -> int:
        return self.inner.hits

    def cost(self, query: Query, config: Config) -> Costed:
        costed = self.inner.cost(query, config)
        if not config:
            return costed
        base = self.inner.cost(query, frozenset()).total
        return Costed(base * self.correction.ratio(query, frozenset(config), self.inner), costed.seq_scans)

    def size(self, index: IndexChange) -> int:
        return self.inner.size(index)

    def prefetch(self, pairs) -> int:
        ahead = getattr(self.inner, "prefetch", None)
        return ahead(pairs) if ahead is not None else 0

    def counters(self) -> dict:
        found = getattr(self.inner, "counters", None)
        return found() if found is not None else {"whatif_calls": self.calls, "cache_hits": self.hits}
