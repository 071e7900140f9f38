"""Equivalence by execution (issue 15, in progress): a rewrite is kept only if it returns the same multiset of
rows as the original on every small database of ``workloads.edge_data`` (every table empty, one empty at a time,
NULLs, duplicates, a tiny value domain) loaded into a scratch database, and on the shadow itself. A mismatch names
the variant and keeps both SQL texts, so the discarded rewrite can be logged. Row order is not compared yet.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import psycopg

from workloads import edge_data


@dataclass(frozen=True)
class Verdict:
    equivalent: bool
    checked: tuple[str, ...]  # the databases both ran on
    mismatch: str | None = None  # where the rows differed, and how
    original: str = ""
    rewrite: str = ""


def rows(dsn: str, statement: str, timeout_ms: int = 30_000) -> Counter:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("SET statement_timeout = {}").format(psycopg.sql.Literal(timeout_ms)))
        return Counter(tuple(r) for r in conn.execute(statement).fetchall())  # type: ignore[arg-type]


def check(scratch_dsn: str, schema: edge_data.Schema, original: str, rewrite: str, *, seed: int = 0,
          not_null: frozenset[tuple[str, str]] = frozenset(), shadow_dsn: str | None = None,
          timeout_ms: int = 30_000) -> Verdict:
    """Run ``original`` and ``rewrite`` on each edge-case variant (loaded into ``scratch_dsn``, whose tables of
    ``schema``'s names are replaced) and on ``shadow_dsn`` when given (each statement cut at ``timeout_ms`` there);
    the first difference ends the check."""
    checked: list[str] = []
    targets = [(v.name, v) for v in edge_data.variants(schema, seed, not_null)]
    for name, variant in targets:
        edge_data.load(scratch_dsn, schema, variant, not_null)
        verdict = _compare(scratch_dsn, name, original, rewrite, checked)
        if verdict is not None:
            return verdict
    if shadow_dsn is not None:
        verdict = _compare(shadow_dsn, "the shadow", original, rewrite, checked, timeout_ms)
        if verdict is not None:
            return verdict
    return Verdict(True, tuple(checked), original=original, rewrite=rewrite)


def _compare(dsn: str, name: str, original: str, rewrite: str, checked: list[str],
             timeout_ms: int = 30_000) -> Verdict | None:
    try:
        want = rows(dsn, original, timeout_ms)
    except psycopg.Error as e:
        return Verdict(False, tuple(checked), f"{name}: the original failed, so nothing could be compared: "
                       f"{str(e).splitlines()[0]}", original, rewrite)
    try:
        got = rows(dsn, rewrite, timeout_ms)
    except psycopg.Error as e:
        return Verdict(False, tuple(checked), f"{name}: the rewrite failed: {str(e).splitlines()[0]}", original,
                       rewrite)
    checked.append(name)
    if got != want:
        missing, extra = sum((want - got).values()), sum((got - want).values())
        return Verdict(False, tuple(checked), f"{name}: {missing} row(s) of the original missing, {extra} extra",
                       original, rewrite)
    return None
