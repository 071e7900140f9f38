"""Giving a shadow the target's planner statistics, so that it plans as the target does.

A shadow gathers its own statistics (``VACUUM ANALYZE``), and ANALYZE reads a random sample: on a join-heavy
workload two samples of the same data choose different plans for some statements (JOB at SF 0.05: 3 of 33 changed
plan between four ANALYZE runs, with five new indexes), so an index validated on the shadow can regress on the
target. PostgreSQL before 18 has no function to import statistics, but a superuser may write ``pg_statistic``, and
``array_in`` builds its ``anyarray`` columns from text. ``transplant`` reads the target's ``pg_stats`` (any role
sees the columns it may read) and, per column of the same table on the shadow (the same data: the shadow is a full
copy), writes the null fraction, width, distinct count, most common values with their frequencies, histogram and
correlation into the shadow's row, with the operators and collation ANALYZE records for them (the shadow's own,
else the type's default B-tree operators).

Left as the shadow sampled them: columns of array, range, composite or other non-scalar types (element and range
statistics), columns of a type with no default B-tree operators, and extended statistics.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from connectors.postgres.connection import TAG

MCV, HISTOGRAM, CORRELATION = 1, 2, 3
SLOTS = 5

TARGET_STATS = TAG + """
    SELECT s.schemaname, s.tablename, s.attname, s.inherited, s.null_frac, s.avg_width, s.n_distinct,
           s.most_common_vals::text, s.most_common_freqs, s.histogram_bounds::text, s.correlation,
           s.most_common_elems IS NOT NULL OR s.elem_count_histogram IS NOT NULL
    FROM pg_stats s
    WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema') AND s.schemaname NOT LIKE 'pg_toast%'"""

SHADOW_ROW = TAG + """
    SELECT a.atttypid, t.typcategory, a.attcollation, st.stakind1, st.stakind2, st.stakind3, st.stakind4, st.stakind5,
           st.staop1, st.staop2, st.staop3, st.staop4, st.staop5,
           st.stacoll1, st.stacoll2, st.stacoll3, st.stacoll4, st.stacoll5
    FROM pg_statistic st JOIN pg_attribute a ON a.attrelid = st.starelid AND a.attnum = st.staattnum
    JOIN pg_type t ON t.oid = a.atttypid
    WHERE st.starelid = %s::regclass AND a.attname = %s AND st.stainherit = %s"""

DEFAULT_OPERATOR = TAG + """
    SELECT o.amopopr FROM pg_opclass c JOIN pg_am m ON m.oid = c.opcmethod AND m.amname = 'btree'
    JOIN pg_amop o ON o.amopfamily = c.opcfamily AND o.amoplefttype = c.opcintype AND o.amoprighttype = c.opcintype
    WHERE c.opcdefault AND o.amopstrategy = %(strategy)s AND (c.opcintype = %(type)s OR EXISTS (
        SELECT 1 FROM pg_cast k WHERE k.castsource = %(type)s AND k.casttarget = c.opcintype AND k.castmethod = 'b'))
    ORDER BY c.opcintype = %(type)s DESC LIMIT 1"""


@dataclass(frozen=True)
class Transplant:
    copied: int  # columns whose statistics are now the target's
    kept: int  # columns left with the shadow's own sample (see the module docstring)


def transplant(target: psycopg.Connection, shadow: psycopg.Connection) -> Transplant:
    """Copy the target's column statistics into the shadow's ``pg_statistic`` (``shadow`` must be a superuser's
    connection to a full copy of the target's database that has been analyzed). One transaction on the shadow."""
    copied = kept = 0
    rows = target.execute(TARGET_STATS).fetchall()
    with shadow.transaction():
        operators: dict = {}
        for schema, table, column, inherited, null_frac, width, distinct, mcv, freqs, hist, corr, elems in rows:
            relation = sql.Identifier(schema, table).as_string(shadow)
            mine = shadow.execute(SHADOW_ROW, (relation, column, inherited)).fetchone()
            if mine is None or elems or mine[1] in ("A", "R", "C", "P", "X"):  # array, range, composite, ...
                kept += 1
                continue
            type_oid, collation, kinds, ops, colls = mine[0], mine[2], mine[3:8], mine[8:13], mine[13:18]
            wanted = [(MCV, mcv, freqs)] if mcv is not None and freqs else []
            wanted += [(HISTOGRAM, hist, None)] if hist is not None else []
            wanted += [(CORRELATION, None, [corr])] if corr is not None else []
            slots = []
            for kind, values, numbers in wanted:
                have = next(((op, coll) for k, op, coll in zip(kinds, ops, colls) if k == kind), None)
                have = have or _default_operator(shadow, operators, type_oid, kind, collation)
                if have is None:
                    break
                slots.append((kind, have[0], have[1], numbers, values))
            if len(slots) < len(wanted):
                kept += 1
                continue
            try:
                with shadow.transaction():  # a savepoint: a value the type does not read back keeps the column's own
                    _write(shadow, relation, column, inherited, (null_frac, width, distinct), slots, type_oid)
                copied += 1
            except psycopg.DataError:
                kept += 1
    return Transplant(copied, kept)


def _default_operator(shadow: psycopg.Connection, known: dict, type_oid: int, kind: int,
                      collation: int) -> tuple[int, int] | None:
    """The operator ANALYZE would record for ``kind`` (= for most common values, < for a histogram or the
    correlation): the type's default B-tree class, its own or a binary-coercible type's (varchar uses text's)."""
    if (type_oid, kind) not in known:
        row = shadow.execute(DEFAULT_OPERATOR, {"type": type_oid, "strategy": 3 if kind == MCV else 1}).fetchone()
        known[(type_oid, kind)] = (row[0], collation) if row else None
    found = known[(type_oid, kind)]
    return (found[0], collation) if found else None


def _write(shadow: psycopg.Connection, relation: str, column: str, inherited: bool, scalars: tuple,
           slots: list[tuple], type_oid: int) -> None:
    assignments = [sql.SQL("stanullfrac = %s, stawidth = %s, stadistinct = %s")]
    params: list = list(scalars)
    for i in range(1, SLOTS + 1):
        kind, op, coll, numbers, values = slots[i - 1] if i <= len(slots) else (0, 0, 0, None, None)
        names = {f: sql.Identifier(f"{f}{i}") for f in ("stakind", "staop", "stacoll", "stanumbers", "stavalues")}
        value = sql.SQL("array_in(%s::cstring, %s::oid, -1)") if values is not None else sql.SQL("NULL")
        assignments.append(sql.SQL("{stakind} = %s, {staop} = %s, {stacoll} = %s, {stanumbers} = %s::real[], "
                                   "{stavalues} = ").format(**names) + value)
        params += [kind, op, coll, numbers]
        params += [values, type_oid] if values is not None else []
    query = sql.SQL(TAG + "UPDATE pg_statistic st SET {} FROM pg_attribute a WHERE st.starelid = %s::regclass "
                    "AND a.attrelid = st.starelid AND a.attnum = st.staattnum AND a.attname = %s "
                    "AND st.stainherit = %s").format(sql.SQL(", ").join(assignments))
    shadow.execute(query, [*params, relation, column, inherited])
