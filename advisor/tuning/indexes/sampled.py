"""The index search on a sampled shadow, where the engine's what-if indexes are built for real.

MariaDB has no hypothetical indexes: its what-if session builds every candidate (IGNORED) on the shadow, and on a
large database those builds are most of the advice's time (~140 s of ~290 s at 0.47 GiB, issue 46). So where the
connector's ``IndexFacts.whatif_builds`` says so and the database is larger than ``SAMPLE_ABOVE_MB``, the search
(candidates built, toggled, EXPLAINed) runs on a second shadow holding a repeatable random sample of each table with
more than ``SAMPLE_MIN_ROWS`` rows, sized to about ``SAMPLE_MB`` (``percent``), copied from the run's full shadow
(the target is not read again). Validation (the chosen set built for real and timed) stays on the full shadow.

What the sample changes, and how it is put right:
- index sizes: an index built on a sampled table is ``rows ratio`` times smaller than on the full one, so each
  size the what-if session measures is multiplied by its table's ratio (``ScaledSizes``; tables copied whole: 1)
  before the size model calibrates it, and the budget keeps its meaning;
- costs: the engine's own units on the sample, compared only with each other (index upkeep on written tables, in
  cost units per written row, shrinks with the table's ratio as the reads' costs did: ``Search.fit``) (each statement's weight is its
  observed time per cost unit over the reads', ``optimizers.indexes.problem.time_scales``, so a statement whose
  sampled cost shrank is weighed up by as much); the correction after validation (``correct``) re-plans on the
  same sample, so its costs stay in one unit.
PostgreSQL's HypoPG builds nothing (``whatif_builds`` False): its search stays on the full shadow, unchanged.

``ADVISOR_WHATIF_SAMPLE_MB`` (the sample's size; default 0: never sample; ``SUGGESTED_MB`` = 50 is what was measured),
``ADVISOR_WHATIF_SAMPLE_ABOVE_MB`` (default 200) and ``ADVISOR_WHATIF_SAMPLE_MIN_ROWS`` (default 100,000) set them.
OFF BY DEFAULT: measured with ``advisor bench latency --tune --tune-peers`` (docs/bench/latency-mariadb-*-whatif-sample-*),
the sampled search was 1.6x faster (41 vs 67 s, 155 vs 245 s under load) but its validated gain was lower in 2 of 3
pairs (14.4% vs 14.2%, 22.1% vs 23.5% at 0.47 GiB; 20.6% vs 25.4% at 0.51 GiB, where the full search found
orders(o_orderdate) and the sample did not), so it stays an option until the sample's choice is as good.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace

from advisor.core.domain import IndexChange, Snapshot
from advisor.core.progress import Say, silent
from connectors.base import Connector

MB = 1024 * 1024
SAMPLE_MB = 0.0  # off by default (see above)
SUGGESTED_MB = 50.0
SAMPLE_ABOVE_MB = 200.0
SAMPLE_MIN_ROWS = 100_000


def _env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def percent(facts_builds: bool, data_bytes: int | None, asked: float | None = None,
            target_mb: float | None = None) -> float | None:
    """The share (%) of each large table the search's shadow holds: None (the full shadow) when the engine's what-if
    builds nothing, the run samples its shadow already (``asked``), sampling is off, the database is below the
    threshold, or the sample would hold it all. ``target_mb``: the sample's size (default: the environment's).

    >>> percent(True, 500 * MB, target_mb=50), percent(False, 500 * MB, target_mb=50)
    (10.0, None)
    >>> percent(True, 100 * MB, target_mb=50), percent(True, 500 * MB, 10.0, target_mb=50)
    (None, None)
    """
    target = _env("ADVISOR_WHATIF_SAMPLE_MB", SAMPLE_MB) if target_mb is None else target_mb
    above = _env("ADVISOR_WHATIF_SAMPLE_ABOVE_MB", SAMPLE_ABOVE_MB)
    if not facts_builds or asked or target <= 0 or not data_bytes or data_bytes < above * MB:
        return None
    share = round(100.0 * target * MB / data_bytes, 3)
    return share if share < 100.0 else None


def min_rows() -> int:
    return int(_env("ADVISOR_WHATIF_SAMPLE_MIN_ROWS", SAMPLE_MIN_ROWS))


def ratios(snapshot: Snapshot, share: float, least: int) -> dict[tuple[str, str], float]:
    """Per table, full rows over sampled rows: 100 / ``share`` for a table of more than ``least`` rows (the ones
    the copy samples), 1 for the others."""
    return {(t.schema, t.name): (100.0 / share if t.rows > least else 1.0) for t in snapshot.tables}


class ScaledSizes:
    """A what-if planner whose ``index_size`` is the size on the full table: the size measured on the sample times
    its table's rows ratio (``ratios``). Planning and its other abilities pass through."""

    def __init__(self, planner, ratio: dict[tuple[str, str], float], scaled: dict | None = None):
        self.planner, self.ratio = planner, ratio
        self.scaled: dict[IndexChange, tuple[int, int]] = {} if scaled is None else scaled  # (on the sample, scaled)

    def plan(self, sql, indexes, tables):
        return self.planner.plan(sql, indexes, tables)

    def __getattr__(self, name: str):
        if name == "planner":
            raise AttributeError(name)
        return getattr(self.planner, name)

    def index_size(self, index: IndexChange) -> int:
        measured = int(self.planner.index_size(index))
        size = int(round(measured * self.ratio.get((index.schema, index.table), 1.0)))
        self.scaled[index] = (measured, size)
        return size


class Search:
    """Where a run's index search happens: ``connector`` (the sample's or the full shadow's), the ``ratios`` that
    scale sizes (None on the full shadow), and ``doc()``: the figures the run's what-if report carries."""

    def __init__(self, connector: Connector, share: float | None = None,
                 ratio: dict[tuple[str, str], float] | None = None, rows: dict[tuple[str, str], int] | None = None):
        self.connector, self.share, self.ratio, self.rows = connector, share, ratio, rows or {}
        self.sizes: ScaledSizes | None = None

    def planner(self, planner):
        """``planner`` with its sizes scaled to the full tables, on a sample (as it is otherwise)."""
        if self.ratio is None:
            return planner
        self.sizes = ScaledSizes(planner, self.ratio, self.sizes.scaled if self.sizes else None)
        return self.sizes

    def fit(self, problem):
        """``problem`` (``optimizers.indexes.problem.IndexProblem``) as the sample prices it: each written table's index
        upkeep (cost units per written row, the same whatever the table's size) over the table's rows ratio, as its
        reads' costs shrank on the sample, so that upkeep and reads keep the balance they have on the full tables."""
        if self.ratio is None or not problem.maintenance:
            return problem
        return replace(problem, maintenance=tuple((t, c / self.ratio.get(t, 1.0)) for t, c in problem.maintenance))

    def doc(self) -> dict:
        if self.share is None:
            return {"on": "full shadow"}
        sampled = {f"{s}.{t}": r for (s, t), r in self.ratio.items() if r > 1.0}
        scaled = self.sizes.scaled if self.sizes else {}
        return {"on": "sampled shadow", "percent": self.share, "sampled_tables": sorted(sampled),
                "rows_full": {f"{s}.{t}": n for (s, t), n in self.rows.items() if f"{s}.{t}" in sampled},
                "rows_sampled": {k: int(round(self.rows.get(tuple(k.split(".", 1)), 0) / r))
                                 for k, r in sampled.items()},
                "sizes_scaled": len([1 for m, s in scaled.values() if s != m]),
                "sized_bytes_sample": sum(m for m, _s in scaled.values()),
                "sized_bytes_scaled": sum(s for _m, s in scaled.values())}


@contextlib.contextmanager
def search_on(full: Connector, snapshot: Snapshot, data_bytes: int | None, asked: float | None,
              say: Say = silent) -> Iterator[Search]:
    """The ``Search`` of a run whose full shadow is ``full``: on a sample of it (a second shadow, stopped on
    leaving) where ``percent`` says so, else on ``full`` itself."""
    share = percent(full.index_facts().whatif_builds, data_bytes, asked)
    if share is None:
        yield Search(full)
        return
    from advisor.tuning.shadows import Shadows

    least = min_rows()
    rows = {(t.schema, t.name): int(t.rows) for t in snapshot.tables}
    say(f"the what-if search builds its candidates for real: running it on a {share:g}% sample of the tables over "
        f"{least:,} rows (about {_env('ADVISOR_WHATIF_SAMPLE_MB', SAMPLE_MB):g} MB of "
        f"{(data_bytes or 0) / MB:.0f} MB); validation stays on the full shadow")
    with Shadows().clone(full, sample_percent=share, sample_min_rows=least, say=say) as sample:
        yield Search(sample.connector, share, ratios(snapshot, share, least), rows)
