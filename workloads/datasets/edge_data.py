"""Small databases built to expose wrong rewrites (issue 15's equivalence by execution): for a schema, a few
variants whose rows make the usual unnesting and outer-join bugs show: every table empty, one table empty at a
time, NULLs in every nullable column, duplicates, and values drawn from a tiny domain so that joins match
several rows, some rows match nothing (empty groups, empty subqueries) and NOT NULL columns hold no NULL.

>>> schema = {"t": {"a": "integer", "b": "text"}, "u": {"c": "integer"}}
>>> names = [v.name for v in variants(schema, seed=0)]
>>> names[:4]
['all empty', 'empty t', 'empty u', 'nulls']
>>> v = {x.name: x for x in variants(schema, seed=0)}
>>> all(None in col for col in zip(*v["nulls"].rows["t"]))  # each nullable column holds a NULL
True
>>> v["nulls"].rows == variants(schema, seed=0)[3].rows  # seeded: the same rows every time
True
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date, timedelta

from connectors.base import Connector
from workloads.statements.target import loader_connector
from workloads.datasets.sqlsource import all_to_dialect, identifier

SOURCE_DIALECT = "postgres"  # the dialect of the DDL written here and of the schema's type names
Schema = dict[str, dict[str, str]]  # table -> column -> SQL type
ROWS = 12  # rows per table in the non-empty variants


@dataclass(frozen=True)
class Variant:
    name: str
    rows: dict[str, list[tuple]]


Keys = dict[str, tuple[tuple[str, ...], ...]]  # table -> unique keys (their columns)
ForeignKeys = tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...]  # (table, cols, ref table, ref cols)


def variants(schema: Schema, seed: int = 0, not_null: frozenset[tuple[str, str]] = frozenset(),
             keys: Keys | None = None, foreign_keys: ForeignKeys = ()) -> list[Variant]:
    """The variants, each honouring the catalog's constraints: no two rows share a unique key's values, and a
    foreign key's values are the referenced rows' (or NULL where the columns allow; a child row whose parent table
    is empty and whose key columns cannot be NULL is left out). Rewrites that rely on keys are judged on data that
    could exist."""
    rng = random.Random(seed)
    out = [Variant("all empty", {t: [] for t in schema})]
    full = {t: _rows(cols, t, rng, not_null, nulls=0.0) for t, cols in schema.items()}
    out += [Variant(f"empty {t}", {**full, t: []}) for t in schema]
    out.append(Variant("nulls", {t: _rows(cols, t, rng, not_null, nulls=0.4, force_null=True)
                                 for t, cols in schema.items()}))
    out.append(Variant("duplicates", {t: rows[: ROWS // 3] * 3 for t, rows in full.items()}))
    out.append(Variant("small domain", full))
    if keys or foreign_keys:
        out = [Variant(v.name, _constrained(v.rows, schema, not_null, keys or {}, foreign_keys, rng)) for v in out]
    return out


def _constrained(rows: dict[str, list[tuple]], schema: Schema, not_null, keys: Keys, foreign_keys: ForeignKeys,
                 rng: random.Random) -> dict[str, list[tuple]]:
    out = {t: [list(r) for r in rs] for t, rs in rows.items()}
    for table, table_keys in keys.items():
        if table not in schema:
            continue
        names = list(schema[table])
        for key in table_keys:
            first = names.index(key[0]) if key[0] in names else None
            for i, row in enumerate(out.get(table, [])):  # distinct values in the key's first column
                if first is not None and row[first] is not None:
                    row[first] = _distinct(schema[table][key[0]], i)
    for _ in range(2):  # a parent that is itself a child gets its values first
        for table, cols, ref, ref_cols in foreign_keys:
            if table not in schema or ref not in schema:
                continue
            names, ref_names = list(schema[table]), list(schema[ref])
            parents = [tuple(p[ref_names.index(c)] for c in ref_cols) for p in out.get(ref, [])]
            parents = [p for p in parents if None not in p]
            nullable = all((table, c) not in not_null for c in cols)
            kept = []
            for row in out.get(table, []):
                if parents:
                    values = rng.choice(parents)
                elif nullable:
                    values = (None,) * len(cols)
                else:
                    continue
                for c, v in zip(cols, values):
                    row[names.index(c)] = v
                kept.append(row)
            out[table] = kept
    return {t: [tuple(r) for r in rs] for t, rs in out.items()}


def _distinct(typ: str, i: int):
    """The ``i``-th distinct value of ``typ``."""
    t = typ.lower()
    if any(w in t for w in ("int", "serial")):
        return i + 1
    if any(w in t for w in ("numeric", "decimal", "real", "double", "float")):
        return i + 0.5
    if "date" in t or "timestamp" in t:
        return date(1995, 1, 1) + timedelta(days=i)
    width = re.search(r"\((\d+)\)", t)
    return chr(ord("a") + i % 26) if width and int(width.group(1)) < 2 else f"k{i}"


def _rows(cols: dict[str, str], table: str, rng: random.Random, not_null, nulls: float,
          force_null: bool = False) -> list[tuple]:
    rows = []
    for i in range(ROWS):
        row = []
        for col, typ in cols.items():
            nullable = (table, col) not in not_null
            null = nullable and ((force_null and i == 0) or rng.random() < nulls)
            row.append(None if null else _value(typ, rng))
        rows.append(tuple(row))
    return rows


def _value(typ: str, rng: random.Random):
    """A value of ``typ`` from a domain of 4 (so joins and groups collide)."""
    t = typ.lower()
    k = rng.randrange(4)
    if any(w in t for w in ("int", "serial")):
        return k + 1
    if any(w in t for w in ("numeric", "decimal", "real", "double", "float")):
        return k + 0.5
    if "date" in t or "timestamp" in t:
        return date(1995, 1, 1) + timedelta(days=100 * k)
    if "bool" in t:
        return k % 2 == 0
    width = re.search(r"\((\d+)\)", t)  # character(1), varchar(1): one letter fits
    return "abcd"[k] if width and int(width.group(1)) < 2 else f"v{k}"


def load(target: Connector, schema: Schema, variant: Variant,
         not_null: frozenset[tuple[str, str]] = frozenset()) -> None:
    """Create ``schema``'s tables in the database at ``target`` (its connector; dropping any of the same
    name) and insert the variant's rows."""
    connector = loader_connector(target)
    ddl = []
    for table, cols in schema.items():
        columns = ", ".join(f"{identifier(c)} {_type(t)}{' NOT NULL' if (table, c) in not_null else ''}"
                            for c, t in cols.items())
        ddl += [f"DROP TABLE IF EXISTS {identifier(table)} CASCADE", f"CREATE TABLE {identifier(table)} ({columns})"]
    connector.loader().run_script(all_to_dialect(ddl, SOURCE_DIALECT, connector.dialect))
    for table in schema:
        if variant.rows[table]:
            connector.loader().load_rows(table, None, variant.rows[table])


def _type(typ: str) -> str:
    """The schema's type name as DDL: only a known, plain type name passes (never SQL from elsewhere)."""
    t = typ.strip().lower()
    allowed = ("integer", "int", "bigint", "smallint", "numeric", "decimal", "real", "double precision", "text",
               "date", "boolean", "timestamp", "varchar", "character varying", "char", "character", "bpchar")
    base = t.split("(")[0].strip()
    if base not in allowed or not all(ch.isalnum() or ch in " (),_" for ch in t):
        return "text"
    return t
