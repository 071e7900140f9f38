"""Index sizes that are true: a correction of the what-if size estimate learnt from indexes that were really
built. HypoPG estimates a B-tree as one leaf entry per row, but PostgreSQL 13+ deduplicates equal keys into
posting lists, so on a column with few distinct values it over-estimates several times (15.7 MB estimated,
4.5 MB built), and a budget runs out on paper. Each observed (estimate, built size) pair of an index is kept;
an estimate is multiplied by built/estimated of the closest observations: the same index, else single-column
indexes of the same method and type whose column repeats its values about as often (deduplication saves more the
more rows share a key: within a factor of ~3 of rows per distinct value), else indexes with the same method,
leading column type and width, else the same method and leading column type.

Before the same index was built, a B-tree's size is computed as PostgreSQL lays it out
(``optimizers.indexes.btree``) from a random sample of its table (``samples``, read on the shadow:
``layout_bytes``): each sampled row's index tuple, aligned per column, and how often the key repeats (its distinct
values estimated from the sample, so correlated columns count as they are), over the rows a partial index's
predicate keeps in the sample. On TPC-H at SF 0.3 (primary keys only) that came within 3.7% of the built size on
all 203 candidates of the application and TPC-H workloads (median 0.13%) and within 2.5% on the 27 indexes the
application bench built; the statistics' answer below was up to 2.2x off on the non-partial ones (median 1.5%,
often too small: numeric widths, read as whole bytes from ``avg_width``, cross an alignment boundary; keys drawn
at random spread their rows over posting lists unevenly; correlated keys deduplicate), and up to 40% off on the
27. Without a sample (no server, another engine) the observations of alike indexes calibrate it, else the
statistics (``btree_bytes``: key widths from ``avg_width``, independent columns); no deduplication for INCLUDE
indexes and the types the engine excludes (``IndexFacts.no_dedup_types``; PostgreSQL's: numeric, floats, jsonb,
arrays, ranges). Partial indexes and keys
without statistics: the estimate as it is until one is built.
The layout model is of 8 kB pages: it applies where the engine's ``IndexFacts`` say its pages are that size,
and deduplicates only where they say the engine does; without facts (or with other pages) only observations
correct the estimate.
Pure: the caller supplies column types, rows per distinct value, samples, observations and the engine's index
facts, and stores ``to_json()``.

>>> from advisor.core.indexfacts import IndexFacts
>>> PG = IndexFacts(page_bytes=8192, deduplication=True, include=True, partial=True, max_key_columns=32,
...                 name_limit=63, cost_unit="cost units", entry_cost=2.0, no_dedup_types=("numeric",))
>>> m = SizeModel({("public", "t", "a"): "integer", ("public", "t", "b"): "integer", ("public", "t", "s"): "text"})
>>> a, b, s = (IndexChange("public", "t", (c,)) for c in "abs")
>>> m.learn(a, estimated=16_000_000, built=4_000_000)
>>> m.calibrate(a, 16_000_000), m.calibrate(b, 8_000_000), m.calibrate(s, 8_000_000)
(4000000, 2000000, 8000000)
>>> SizeModel.from_json(m.to_json(), m.types).calibrate(b, 100_000)
25000
>>> cols = {("public", "u", c): "bigint" for c in "xyz"}
>>> m = SizeModel(cols, repeats={("public", "u", "x"): 5000.0, ("public", "u", "y"): 10.0, ("public", "u", "z"): 12.0})
>>> x, y, z = (IndexChange("public", "u", (c,)) for c in "xyz")
>>> m.learn(x, 1_000_000, 250_000); m.learn(y, 1_000_000, 700_000)
>>> m.calibrate(z, 1_000_000)  # z repeats its values as often as y: y's correction, not x's
700000
>>> d = SizeModel({("public", "l", "day"): "date", ("public", "l", "id"): "integer"},
...               repeats={("public", "l", "day"): 120.0, ("public", "l", "id"): 1.0},
...               widths={("public", "l", "day"): 4, ("public", "l", "id"): 4}, rows={("public", "l"): 300_000},
...               facts=PG)
>>> d.btree_bytes(IndexChange("public", "l", ("day",))), d.btree_bytes(IndexChange("public", "l", ("id",)))
(2170880, 6758400)
>>> d.btree_bytes(IndexChange("public", "l", ("day",), include=("id",)))  # INCLUDE indexes never deduplicate
6758400
>>> SizeModel(d.types, d.repeats, d.widths, d.rows).btree_bytes(IndexChange("public", "l", ("day",))) is None
True
>>> from dataclasses import replace
>>> replace(d, facts=replace(PG, deduplication=False)).btree_bytes(IndexChange("public", "l", ("day",)))
6758400

(PostgreSQL 15 built the first three in 2170880 bytes (2,500 days drawn at random for 300,000 rows), 6758400 and
6766592 bytes. Without the engine's index facts there is no layout model; an engine that does not deduplicate
stores every key: the last two answers.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from advisor.core.domain import IndexChange
from advisor.core.indexfacts import IndexFacts
from optimizers.indexes import btree

ColumnRef = tuple[str, str, str]  # (schema, table, column)
MIN_RATIO, MAX_RATIO = 0.05, 4.0  # a correction outside this is a measuring accident, not a size model


class Samples(Protocol):
    """Random samples of a server's tables (read once per table), and which sampled rows a predicate keeps."""

    def table(self, schema: str, table: str) -> btree.TableSample | None: ...

    def matching(self, schema: str, table: str, where: str) -> np.ndarray | None:
        """A boolean mask over ``table(schema, table)``'s rows: those for which ``where`` (SQL) is true."""


@dataclass
class SizeModel:
    """Observed (estimate, built) sizes by index; the column types and rows per distinct value that group them;
    table samples that lay a B-tree out without building it."""

    types: Mapping[ColumnRef, str] = field(default_factory=dict)
    repeats: Mapping[ColumnRef, float] = field(default_factory=dict)  # rows per distinct value of a column
    widths: Mapping[ColumnRef, float] = field(default_factory=dict)  # average stored width of a column, bytes
    rows: Mapping[tuple[str, str], float] = field(default_factory=dict)  # (schema, table) -> rows
    observed: dict[str, dict] = field(default_factory=dict)  # index key -> {estimated, built, group keys}
    samples: Samples | None = None
    facts: IndexFacts | None = None  # the engine's (``Connector.index_facts``): page size, deduplication

    def learn(self, index: IndexChange, estimated: int, built: int | None) -> None:
        """Record one index's what-if estimate and its real size (bytes); a later pair replaces an earlier one."""
        if not estimated or not built or estimated <= 0 or built <= 0:
            return
        self.observed[_key(index)] = {"estimated": int(estimated), "built": int(built), "groups": self._groups(index)}

    def ratio(self, index: IndexChange, estimated: int | None = None) -> float | None:
        """built / estimated from the closest observations of ``index``; with nothing alike built yet, from the
        statistics (``btree_bytes`` against ``estimated``); None: nothing to go on."""
        exact = self.observed.get(_key(index))
        if exact:
            return _clip(exact["built"] / exact["estimated"])
        groups = self._groups(index)
        alike = groups[:1] if groups and ":r" in groups[0] else []  # single-column, repeating as often
        for group in [*alike, None, *groups[len(alike):]]:
            if group is None:  # nothing alike built yet: the statistics' answer, when there are statistics
                prior = self.btree_bytes(index)
                if prior is not None and estimated:
                    return _clip(prior / estimated)
                continue
            rows = [o for o in self.observed.values() if group in o["groups"]]
            if rows:
                return _clip(sum(o["built"] for o in rows) / sum(o["estimated"] for o in rows))
        return None

    def btree_bytes(self, index: IndexChange) -> int | None:
        """The size of a B-tree over the whole table from its key columns' widths and how often the key repeats
        (independent columns: distinct keys = the product of the columns' distinct values, at most the rows;
        correlated columns repeat more, so this errs large); None for other methods, partial indexes and keys
        without statistics."""
        table = (index.schema, index.table)
        refs = [(index.schema, index.table, c) for c in index.columns]
        n = self.rows.get(table, 0.0)
        if not self._laid_out(index) or index.where or n <= 0 or \
                any(r not in self.repeats or r not in self.widths for r in refs):
            return None
        key = sum(self.widths[r] for r in refs)
        extra = sum(self.widths.get((index.schema, index.table, c), 8.0) for c in index.include)
        repeat = max(1.0, n / max(1.0, min(n, math.prod(n / max(1.0, self.repeats[r]) for r in refs))))
        return btree.PAGE * btree.pages(n, btree.aligned(btree.HEADER + key + extra), repeat, self._dedup(index),
                                        btree.aligned(btree.HEADER + key))

    def layout_bytes(self, index: IndexChange) -> int | None:
        """The size of a B-tree laid out from its table's sample (``optimizers.indexes.btree``): each sampled row's
        tuple, the key's repeats, the rows a partial index keeps; None for other methods, without a sample, or
        for a column the sample lacks."""
        if not self._laid_out(index) or self.samples is None:
            return None
        sample = self.samples.table(index.schema, index.table)
        names = (*index.columns, *index.include)
        if sample is None or not sample.sampled or any(c not in sample.columns for c in names):
            return None
        mask = None
        if index.where:
            mask = self.samples.matching(index.schema, index.table, index.where)
            if mask is None:
                return None
        kept = sample.sampled if mask is None else int(mask.sum())
        rows = sample.rows * kept / sample.sampled
        if kept == 0:  # no sampled row matches: taken as half the rows one sampled row stands for, 8-byte keys
            return btree.PAGE * btree.pages(0.5 * sample.rows / sample.sampled, btree.HEADER + 8.0)
        entry = float(btree.tuple_bytes(sample, names, mask).mean())
        key = float(btree.tuple_bytes(sample, index.columns, mask).mean())
        dedup = self._dedup(index)
        repeat = btree.key_repeat(sample, index.columns, rows, mask) if dedup else 1.0
        return btree.PAGE * btree.pages(rows, entry, repeat, dedup, key)

    def _laid_out(self, index: IndexChange) -> bool:
        """Whether the B-tree layout model fits the engine's index: a B-tree on pages of the size it simulates."""
        return index.method == "btree" and self.facts is not None and self.facts.page_bytes == btree.PAGE

    def _dedup(self, index: IndexChange) -> bool:
        """The engine may deduplicate the index: it deduplicates, no INCLUDE columns, no key type it excludes."""
        if self.facts is None or not self.facts.deduplication:
            return False
        kinds = [self.types.get((index.schema, index.table, c), "") for c in index.columns]
        return not index.include and not any(k in self.facts.no_dedup_types or k.endswith("[]") for k in kinds)

    def calibrate(self, index: IndexChange, estimated: int) -> int:
        """The corrected estimate (bytes), at least one page: the same index's observation, else its layout
        from a sample, else the observations of alike indexes or the statistics (``ratio``)."""
        if _key(index) not in self.observed:
            laid = self.layout_bytes(index)
            if laid is not None:
                return laid
        r = self.ratio(index, estimated)
        page = self.facts.page_bytes if self.facts is not None else 1
        return int(estimated) if r is None else max(page, int(round(estimated * r)))

    def _groups(self, index: IndexChange) -> list[str]:
        lead = (index.schema, index.table, index.columns[0]) if index.columns else None
        kind = self.types.get(lead) if lead else None
        if kind is None:
            return []
        groups = [f"{index.method}:{kind}:{len(index.columns)}", f"{index.method}:{kind}"]
        if len(index.columns) == 1 and lead in self.repeats:
            groups.insert(0, f"{index.method}:{kind}:1:r{round(math.log10(max(1.0, self.repeats[lead])) * 2)}")
        return groups

    def to_json(self) -> dict:
        return {"observed": self.observed}

    @classmethod
    def from_json(cls, doc: Mapping | None, types: Mapping[ColumnRef, str] | None = None,
                  repeats: Mapping[ColumnRef, float] | None = None, widths: Mapping[ColumnRef, float] | None = None,
                  rows: Mapping[tuple[str, str], float] | None = None, samples: Samples | None = None,
                  facts: IndexFacts | None = None) -> "SizeModel":
        observed = {k: dict(v) for k, v in ((doc or {}).get("observed") or {}).items()
                    if isinstance(v, Mapping) and v.get("estimated") and v.get("built")}
        return cls(dict(types or {}), dict(repeats or {}), dict(widths or {}), dict(rows or {}), observed, samples,
                   facts)


class CalibratedSizes:
    """A what-if planner whose ``index_size`` is corrected by a ``SizeModel``; ``raw`` keeps the uncorrected
    estimates it answered, so reports can show both. Planning passes through."""

    def __init__(self, planner, model: SizeModel):
        self.planner = planner
        self.model = model
        self.raw: dict[IndexChange, int] = {}

    def plan(self, sql, indexes, tables):
        return self.planner.plan(sql, indexes, tables)

    def __getattr__(self, name: str):  # the planner's other abilities (``plan_many``, ``expect``) pass through
        if name == "planner":
            raise AttributeError(name)
        return getattr(self.planner, name)

    def index_size(self, index: IndexChange) -> int:
        raw = self.raw[index] = int(self.planner.index_size(index))
        return self.model.calibrate(index, raw)


def _key(index: IndexChange) -> str:
    where = f" WHERE {index.where}" if index.where else ""
    include = f" INCLUDE ({', '.join(index.include)})" if index.include else ""
    return f"{index.schema}.{index.table} USING {index.method} ({', '.join(index.columns)}){include}{where}"


def _clip(r: float) -> float:
    return min(MAX_RATIO, max(MIN_RATIO, r))
