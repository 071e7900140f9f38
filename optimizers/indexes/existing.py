"""Existing indexes worth dropping: unused ones (no scan since the statistics were last reset) and duplicates (an
index whose key columns are a prefix of another index's on the same table, or whose definition is the same).
Pure: it reads ``IndexInfo`` rows (a snapshot's) and answers ``DropIndexChange`` proposals, which are then
validated on a shadow like any other change.

Never proposed: unique and primary-key indexes (they enforce a constraint), and names in ``protected`` (e.g.
indexes behind exclusion constraints). A duplicate needs the same method and the same partial predicate as the
index covering it; a strict prefix counts for B-trees only (a B-tree on (a, b) serves every lookup on a), and
the covered index's INCLUDE columns must be in the covering one. Of two identical indexes the one with more
scans stays (the earlier name on a tie), so one of them always survives.

>>> from advisor.core.domain import IndexInfo
>>> def info(name, cols, scans=5, unique=False, primary=False):
...     return IndexInfo("public", "t", name, f"({', '.join(cols)})", 8192, scans, unique, primary, "btree",
...                      tuple(cols), ("",) * len(cols))
>>> for d in find_drops([info("t_pkey", ["id"], primary=True, unique=True, scans=0), info("t_a", ["a"]),
...                      info("t_a_b", ["a", "b"]), info("t_c", ["c"], scans=0), info("t_a_b2", ["a", "b"], scans=1)],
...                     since="2026-11-01 00:00"):
...     print(d.name, "|", d.why)
t_a | covered by t_a_b (its columns are a prefix of it)
t_a_b2 | covered by t_a_b (same definition)
t_c | unused: 0 scans since 2026-11-01 00:00
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from advisor.core.domain import DropIndexChange, IndexInfo

@dataclass(frozen=True)
class Shape:
    """What an index says about coverage: method, key elements (a column, or an expression, with its operator
    class and ordering options), INCLUDE columns and the partial predicate ("" when none)."""

    method: str
    keys: tuple[str, ...]
    include: tuple[str, ...] = ()
    where: str = ""


def shape(info: IndexInfo) -> Shape | None:
    """The ``Shape`` of an index from its catalog description; None when the engine gave no key elements.

    >>> shape(IndexInfo("public", "t", "i", "", 0, 0, False, False, "btree", ("a", "lower((b)::text)"),
    ...                 ("", "DESC"), ("c",), "(d > 0)", (False, True)))
    Shape(method='btree', keys=('a', 'lower((b)::text) DESC'), include=('c',), where='(d > 0)')
    """
    if not info.columns:
        return None
    options = info.options or ("",) * len(info.columns)
    keys = tuple(f"{key} {opt}" if opt else key for key, opt in zip(info.columns, options))
    return Shape(info.method.lower(), keys, tuple(info.include), info.predicate)


def covers(big: Shape, small: Shape) -> str | None:
    """How ``big`` makes ``small`` redundant ("same definition" or "prefix"), or None.

    >>> covers(Shape("btree", ("a", "b")), Shape("btree", ("a",))), covers(Shape("hash", ("a",)), Shape("hash", ("a",)))
    ('prefix', 'same definition')
    >>> g = Shape("gist", ("a",))
    >>> covers(Shape("btree", ("b", "a")), Shape("btree", ("a",))), covers(Shape("gist", ("a", "b")), g)
    (None, None)
    >>> covers(Shape("btree", ("a", "b")), Shape("btree", ("a",), where="(c > 0)")) is None
    True
    """
    if big.method != small.method or big.where != small.where or big.keys[:len(small.keys)] != small.keys:
        return None
    if not set(small.include) <= set(big.keys) | set(big.include):
        return None
    if big.keys == small.keys and set(big.include) == set(small.include):
        return "same definition"
    if big.keys == small.keys:  # same keys, ``big`` carries more INCLUDE columns
        return "prefix"
    return "prefix" if small.method == "btree" else None


def find_drops(indexes: Iterable[IndexInfo], *, since: str | None = None,
               protected: Collection[str] = ()) -> list[DropIndexChange]:
    """Every unused or duplicate index of ``indexes`` as a ``DropIndexChange`` (sorted by table and name);
    ``since``: when the scan counts started (the statistics reset), for the reason text."""
    rows = [(i, s) for i in indexes if (s := shape(i)) is not None]
    fixed = {i.name for i, _ in rows if i.is_unique or i.is_primary or i.name in protected}
    covered: dict[str, tuple[str, str]] = {}  # name -> (covering index, how)
    for small, s_shape in rows:
        if small.name in fixed:
            continue
        for big, b_shape in rows:
            if big is small or (big.schema, big.table) != (small.schema, small.table):
                continue
            how = covers(b_shape, s_shape)
            if how == "same definition" and big.name not in fixed and _rank(small) < _rank(big):
                continue  # of identical twins the better-scanned one (earlier name on a tie) stays
            if how and _better_cover(how, big, covered.get(small.name), rows):
                covered[small.name] = (big.name, how)
    # a cover that is itself dropped passes its cover on (prefix-of is transitive), so the reason names a survivor
    for name, (by, how) in list(covered.items()):
        seen = {name}
        while by in covered and by not in seen:
            seen.add(by)
            by, how = covered[by][0], "prefix"
        covered[name] = (by, how)
    out = []
    for info, _ in rows:
        reasons = []
        if info.name in fixed:
            continue
        if info.scans == 0:
            reasons.append(f"unused: 0 scans since {since or 'the statistics were last reset'}")
        if info.name in covered:
            by, how = covered[info.name]
            reasons.append(f"covered by {by} (" + ("same definition)" if how == "same definition"
                                                   else "its columns are a prefix of it)"))
        if reasons:
            out.append(DropIndexChange(info.schema, info.table, info.name, info.definition, "; ".join(reasons)))
    return sorted(out, key=lambda d: (d.schema, d.table, d.name))


def _rank(info: IndexInfo) -> tuple:
    """Which of two identical indexes stays: the more scanned, then the earlier name (smaller rank stays)."""
    return (-info.scans, info.name)


def _better_cover(how: str, big: IndexInfo, current: tuple[str, str] | None, rows) -> bool:
    """Prefer the widest covering index (then the earliest name), so the reason names the one that stays."""
    if current is None:
        return True
    width = {i.name: len(s.keys) for i, s in rows}
    return (-width[big.name], big.name) < (-width[current[0]], current[0])
