"""SQL for applying and reverting changes on PostgreSQL. Every identifier goes through psycopg.sql."""

from __future__ import annotations

import hashlib
import re

from psycopg import sql

from advisor.core.domain import IndexChange, KnobChange, KnobSpec
from advisor.core.errors import BadStatement

INDEX_METHODS = frozenset({"btree", "hash", "gin", "gist", "brin", "spgist"})
MAX_IDENTIFIER = 63


def index_name(change: IndexChange) -> str:
    """A deterministic name of at most 63 bytes: ``<table>_<cols>_advisor_idx``, hashed when too long."""
    if change.name:
        return change.name
    raw = f"{change.table}_{'_'.join(change.columns)}_advisor_idx"
    clean = re.sub(r"[^A-Za-z0-9_]", "_", raw).lower()
    if len(clean.encode()) <= MAX_IDENTIFIER:
        return clean
    digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
    return clean[: MAX_IDENTIFIER - 9] + "_" + digest


def index_ddl(change: IndexChange, *, concurrently: bool = True, named: bool = True) -> sql.Composed:
    if change.method not in INDEX_METHODS:
        raise BadStatement(f"unknown index method {change.method!r}; use one of {', '.join(sorted(INDEX_METHODS))}")
    if not change.columns:
        raise BadStatement(f"index on {change.schema}.{change.table} names no column")
    parts = [sql.SQL("CREATE INDEX")]
    if concurrently:
        parts.append(sql.SQL("CONCURRENTLY"))
    if named:
        parts.append(sql.Identifier(index_name(change)))
    parts += [
        sql.SQL("ON"), sql.Identifier(change.schema, change.table), sql.SQL("USING"), sql.SQL(change.method),
        sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in change.columns)),
    ]
    return sql.SQL(" ").join(parts)


def index_drop(change: IndexChange, *, concurrently: bool = True) -> sql.Composed:
    return sql.SQL("DROP INDEX {}IF EXISTS {}").format(
        sql.SQL("CONCURRENTLY " if concurrently else ""), sql.Identifier(change.schema, index_name(change)))


def knob_set(change: KnobChange) -> sql.Composed:
    return sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(change.name), sql.Literal(change.value))


def knob_restore(spec: KnobSpec) -> sql.Composed:
    """What puts ``spec`` back where it is now: its value in postgresql.auto.conf, or a RESET."""
    if spec.sourcefile and spec.sourcefile.endswith("postgresql.auto.conf"):
        # a bare number is read in the knob's own unit (pages for shared_buffers, kB for work_mem)
        return sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(spec.name), sql.Literal(spec.setting))
    return sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(spec.name))
