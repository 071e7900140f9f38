"""The size of a B-tree as PostgreSQL (13-16, 8 kB pages) builds it with CREATE INDEX, from what its rows hold:
how many rows, the aligned size of their index tuples, and how often the key repeats. Pure arithmetic; the
caller measures the rows (``TableSample``, a random sample of a table read on a server) or takes them from the
planner's statistics.

The layout follows ``nbtsort.c`` (a sorted build):

- an index tuple is an 8-byte header (16 with a NULL bitmap) then the attributes, each aligned to its type
  (a short varlena, under 127 bytes, is not aligned), the whole MAXALIGNed to 8; each item also takes a 4-byte
  line pointer;
- a leaf takes items while the free space left is at least 819 bytes (``BLCKSZ x (100 - fillfactor 90) / 100``;
  a posting tuple's TID list counts as free there, since its high key drops it), and always holds two; the item
  that overflows moves to the next page, whose copy becomes the high key in the slot kept for it;
- deduplication (no INCLUDE columns, types whose equality is bitwise): equal keys become posting tuples of at most
  812 bytes (``MAXALIGN_DOWN(BLCKSZ / 10)`` less a line pointer), the key once and 6 bytes per heap row; a key
  with one row stays a plain tuple;
- internal pages are filled to 70% with one pivot per page below (the key, as a tuple); page 0 is the metapage.

Keys are assumed to hold 1 + a Poisson count of rows each (as values drawn at random do, ``key_counts``); keys of
exactly the same count (``x % k``) are off by a few percent.

>>> pages(1_000_000, entry=16.0)  # one million int4 keys: 16-byte tuples, 366 to a leaf
2745
>>> pages(1_800_000, entry=16.0, repeat=720.0), pages(300_000, entry=16.0, repeat=120.0)  # dates, posting lists
(1593, 265)
>>> pages(0, entry=16.0), pages(10, entry=16.0)  # an empty index is its metapage; a small one a root leaf too
(1, 2)

(PostgreSQL 15 built 2745 pages for the first; 1585 and 265 over 1.8M and 300k rows of 2,500 dates drawn at
random; 2 for the last.)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

PAGE = 8192  # bytes
ALIGN = 8  # MAXALIGN
LINE_POINTER = 4
HEAP_TID = 6  # one heap row in a posting list
HEADER, NULL_HEADER = 8, 16  # index tuple header, without and with a NULL bitmap (MAXALIGNed)
# free space for items on a new page: page header (24), B-tree special space (16), the high key's line pointer
# (kept from the start) and the new item's own line pointer (PageGetFreeSpace)
FIRST_FREE = PAGE - 24 - 16 - 2 * LINE_POINTER
LEAF_FULL = PAGE * (100 - 90) // 100  # 819: a leaf is full when less is free (default fillfactor 90)
INTERNAL_FULL = PAGE * (100 - 70) // 100  # 2457: internal pages are built 70% full
MAX_POSTING = (PAGE * 10 // 100) // ALIGN * ALIGN - LINE_POINTER  # 812: the largest posting tuple a build makes
KEYS_PER_CYCLE = 50  # keys of the repeating pattern a leaf level is packed from (``key_counts``)
SIMULATED_PAGES = 32  # pages packed one by one; the rest of a long level is extrapolated from them


def aligned(n: float) -> float:
    return math.ceil(n / ALIGN) * ALIGN


def pages(rows: float, entry: float, repeat: float = 1.0, dedup: bool = True, key: float | None = None) -> int:
    """Pages (8 kB each, metapage included) of a B-tree over ``rows`` rows whose index tuples take ``entry``
    bytes on average (header and attributes, MAXALIGNed, no line pointer), each key shared by ``repeat`` rows on
    average; ``dedup``: the index may deduplicate (no INCLUDE columns, every key type allows it); ``key``: the
    tuple of the key columns alone (bytes; defaults to ``entry``), what pivots and posting tuples start with."""
    rows = max(0.0, float(rows))
    key = entry if key is None else key
    if rows < 1:
        return 1
    repeat = min(max(1.0, repeat), rows)
    if dedup and repeat > 1.0:
        cycle, rows_per_cycle = _key_cycle(repeat, key)
    else:
        cycle, rows_per_cycle = [(entry, 0.0, 1)], 1
    cycles = rows / rows_per_cycle
    items = sum(n for _, _, n in cycle) * cycles
    leaves = _pack(_repeat(cycle, cycles), items, LEAF_FULL, int(aligned(HEAP_TID)))  # room for a pivot's heap TID
    total, level = 1 + leaves, leaves
    while level > 1:
        level = _pack(iter([(key, 0.0, level)]), level, INTERNAL_FULL, 0)
        total += level
    return total


def key_counts(repeat: float) -> list[int]:
    """Rows of ``KEYS_PER_CYCLE`` keys averaging ``repeat`` rows, as values drawn at random repeat: 1 + a Poisson
    count of mean ``repeat - 1``, at evenly spaced quantiles.

    >>> set(key_counts(1.0)), sum(key_counts(720.0)) / KEYS_PER_CYCLE
    ({1}, 720.0)
    >>> key_counts(3.0)[::10]  # 1 + Poisson(2)
    [1, 2, 3, 3, 4]
    """
    lam = max(0.0, repeat - 1.0)
    quantiles = [(i + 0.5) / KEYS_PER_CYCLE for i in range(KEYS_PER_CYCLE)]
    if lam > 100:  # the normal approximation
        normal = NormalDist(lam, math.sqrt(lam))
        return [1 + max(0, round(normal.inv_cdf(p))) for p in quantiles]
    out, k, cdf, pmf = [], 0, math.exp(-lam), math.exp(-lam)
    for p in quantiles:
        while cdf < p:
            k += 1
            pmf *= lam / k
            cdf += pmf
        out.append(1 + k)
    return out


def _key_cycle(repeat: float, key: float) -> tuple[list[tuple[float, float, int]], int]:
    """The items of ``KEYS_PER_CYCLE`` consecutive keys (``key_counts``), as runs of (tuple bytes, posting
    bytes, count), and the rows they hold."""
    per_key = max(1, int((MAX_POSTING // ALIGN * ALIGN - aligned(key)) // HEAP_TID))  # heap rows in a full posting
    counts = key_counts(repeat)
    runs: list[tuple[float, float, int]] = []
    for n in (counts[(7 * i) % len(counts)] for i in range(len(counts))):  # keys of all sizes mixed, not sorted
        full, rest = divmod(n, per_key)
        items = [(aligned(key + HEAP_TID * per_key), full)] if full else []
        items += [(key, 1)] if rest == 1 else [(aligned(key + HEAP_TID * rest), 1)] if rest > 1 else []
        for size, count in items:
            extra = size - key if size > key else 0.0
            if runs and runs[-1][:2] == (size, extra):
                runs[-1] = (size, extra, runs[-1][2] + count)
            else:
                runs.append((size, extra, count))
    return runs, sum(counts)


def _repeat(cycle: list[tuple[float, float, int]], times: float) -> Iterator[tuple[float, float, int]]:
    if len(cycle) == 1:  # one kind of item: one run
        size, extra, n = cycle[0]
        yield size, extra, max(1, round(n * times))
        return
    whole = math.floor(times)
    for _ in range(whole):
        yield from cycle
    left = sum(n for _, _, n in cycle) * (times - whole)  # a part of a cycle: its first items
    for size, extra, n in cycle:
        if left <= 0:
            break
        take = min(n, max(1, round(left)))
        yield size, extra, take
        left -= take


def _pack(runs: Iterator[tuple[float, float, int]], items: float, full: int, room_after: int) -> int:
    """Pages one level takes: ``runs`` of (tuple bytes, posting bytes, count) in key order, ``items`` in all;
    a page is finished when the free space (plus the last item's posting bytes) is below ``full`` and it holds
    two items, or when the next item does not fit with ``room_after`` bytes to spare."""
    done = placed = 0  # pages finished, items on them
    used, on_page, last, last_extra = 0.0, 0, 0.0, 0.0
    for size, extra, count in runs:
        step = size + LINE_POINTER
        while count > 0:
            free = FIRST_FREE - used
            if on_page and (free < size + room_after or (on_page >= 2 and free + last_extra < full)):
                done, placed = done + 1, placed + on_page - 1  # the last item moves to the next page
                used, on_page = last + LINE_POINTER, 1
                if done >= SIMULATED_PAGES:
                    return done + math.ceil(max(0.0, items - placed) / (placed / done))
                continue
            take = 1
            if on_page >= 2:  # the items after this one see its posting bytes
                room = min(free - size - room_after, free + extra - full)
                take = min(count, 1 + max(0, int(room // step)))
            used, on_page, count = used + take * step, on_page + take, count - take
            last, last_extra = size, extra
    return done + (1 if on_page else 0)


@dataclass(frozen=True)
class ColumnSample:
    """One column over the sampled rows: the stored size of each value (bytes, ``pg_column_size``; NaN for
    NULL), a hash of each value (equal values, equal hashes), and the type's length (-1: varlena) and alignment."""

    sizes: np.ndarray
    hashes: np.ndarray
    length: int
    align: int


@dataclass(frozen=True)
class TableSample:
    """A random sample of a table's rows (``columns``, all of the same length) and the table's row count."""

    rows: float
    columns: Mapping[str, ColumnSample]

    @property
    def sampled(self) -> int:
        return len(next(iter(self.columns.values())).sizes) if self.columns else 0


def tuple_bytes(sample: TableSample, names: Sequence[str], mask: np.ndarray | None = None) -> np.ndarray:
    """Per sampled row (those of ``mask``), the MAXALIGNed index tuple holding columns ``names`` in order."""
    cols = [sample.columns[n] for n in names]
    n = sample.sampled if mask is None else int(mask.sum())
    off, nulls = np.zeros(n), np.zeros(n, dtype=bool)
    for c in cols:
        sizes = c.sizes if mask is None else c.sizes[mask]
        null = np.isnan(sizes)
        size = np.nan_to_num(sizes)
        start = np.ceil(off / c.align) * c.align
        if c.length == -1:  # a short varlena (1-byte header) is stored unaligned
            start = np.where(size <= 127, off, start)
        off = np.where(null, off, start + size)
        nulls |= null
    return np.ceil((np.where(nulls, NULL_HEADER, HEADER) + off) / ALIGN) * ALIGN


def key_repeat(sample: TableSample, names: Sequence[str], rows: float, mask: np.ndarray | None = None) -> float:
    """Rows per distinct value of the key ``names`` over ``rows`` rows, from the sample (those of ``mask``): the
    number of keys D whose expected count of distinct keys in a sample of this size matches the one seen, each key
    holding 1 + a Poisson count of rows (as ``key_counts`` lays them out): ``d = D (1 - (1 - q) exp(-q (rows / D -
    1)))``, q the sampled share; exact when the sample is the table. (ANALYZE's Haas-Stokes estimator read 26%
    too few keys on TPC-H's (l_orderkey, l_returnflag) at SF 0.3, where a key holds 1-7 rows and few repeat in a
    1.7% sample, and the size came out 12% small; this one 11% too few keys, and the size 3% small.)"""
    keys = np.stack([(c.hashes if mask is None else c.hashes[mask]) for c in (sample.columns[n] for n in names)],
                    axis=1)
    n = len(keys)
    if n == 0 or rows < 1:
        return 1.0
    d = len(np.unique(keys, axis=0))
    if n >= rows:
        return max(1.0, rows / d)
    q = n / rows
    lo, hi = float(d), float(rows)
    for _ in range(60):  # the expected distinct count grows with D: bisection
        mid = (lo + hi) / 2
        if mid * (1 - (1 - q) * math.exp(-q * (rows / mid - 1))) < d:
            lo = mid
        else:
            hi = mid
    return max(1.0, rows / hi)
