"""Training statements generated from a schema, for Aurora: joins along the schema's links, filters, EXISTS and
NOT EXISTS, NOT IN, correlated scalar aggregates and LEFT JOINs filtered on their nullable side: the shapes the
rules act on, over the tables at hand, so the policy is not trained on the very statements it is judged on.

Links between tables are the foreign keys, and where there are none, a column whose name (or its part after the
first underscore, as in ``l_partkey`` / ``p_partkey``) matches a one-column unique key of another table.

>>> schema = {"c": {"c_id": "integer", "c_name": "text"}, "o": {"o_id": "integer", "o_cid": "integer",
...           "o_total": "numeric"}}
>>> links({"c": (("c_id",),), "o": (("o_id",),)}, (("o", ("o_cid",), "c", ("c_id",)),), schema)
[('o', 'o_cid', 'c', 'c_id')]
>>> sql = generate(schema, {"c": (("c_id",),)}, (("o", ("o_cid",), "c", ("c_id",)),), frozenset(), n=5, seed=1)
>>> len(sql) == 5 and all(s.startswith("SELECT") for s in sql)
True
"""

from __future__ import annotations

import random

NUMERIC = ("int", "numeric", "decimal", "real", "double", "float")


def _suffix(column: str) -> str:
    return column.split("_", 1)[1] if "_" in column else column


def links(keys: dict[str, tuple[tuple[str, ...], ...]], foreign_keys, schema: dict[str, dict[str, str]]
          ) -> list[tuple[str, str, str, str]]:
    """(child table, its column, parent table, the parent's key column) pairs a statement can join on."""
    out = [(t, cols[0], ref, ref_cols[0]) for t, cols, ref, ref_cols in foreign_keys
           if len(cols) == 1 and t in schema and ref in schema]
    if out:
        return out
    for parent, parent_keys in keys.items():
        for key in parent_keys:
            if len(key) != 1 or parent not in schema:
                continue
            for child, cols in schema.items():
                for col in cols:
                    if child != parent and (col == key[0] or _suffix(col) == _suffix(key[0])) \
                            and cols[col] == schema[parent][key[0]]:
                        out.append((child, col, parent, key[0]))
    return out


def _filter(rng: random.Random, alias: str, cols: dict[str, str]) -> str:
    col, typ = rng.choice(sorted(cols.items()))
    t = typ.lower()
    if any(w in t for w in NUMERIC):
        return f"{alias}.{col} {rng.choice(['<', '>', '='])} {rng.randint(1, 100)}"
    if "date" in t:
        return f"{alias}.{col} < date '199{rng.randint(2, 8)}-01-01'"
    return f"{alias}.{col} = 'x{rng.randint(1, 9)}'"


def _numeric(cols: dict[str, str]) -> list[str]:
    return [c for c, t in sorted(cols.items()) if any(w in t.lower() for w in NUMERIC)]


def generate(schema: dict[str, dict[str, str]], keys, foreign_keys, not_null: frozenset[tuple[str, str]],
             n: int = 40, seed: int = 0) -> list[str]:
    """``n`` statements over ``schema`` (empty when it has no link between tables)."""
    rng = random.Random(seed)
    edges = links(keys, foreign_keys, schema)
    if not edges:
        return []
    out: list[str] = []
    while len(out) < n:
        child, col, parent, key = rng.choice(edges)
        shape = rng.choice(("join", "join", "exists", "not_exists", "not_in", "scalar", "left"))
        a, b = "t1", "t2"
        filters = [_filter(rng, a, schema[child]) for _ in range(rng.randint(0, 2))]
        if shape == "join":
            tables = [(child, a), (parent, b)]
            conds = [f"{a}.{col} = {b}.{key}"]
            extra = [e for e in edges if e[0] == parent or e[2] == parent]
            if extra and rng.random() < 0.6:  # a third table on a link of the parent's
                c2, col2, p2, key2 = rng.choice(extra)
                other, mine = (p2, f"t3.{key2} = {b}.{col2}") if c2 == parent else (c2, f"t3.{col2} = {b}.{key2}")
                tables.append((other, "t3"))
                conds.append(mine)
            filters += [_filter(rng, b, schema[parent]) for _ in range(rng.randint(0, 2))]
            body = ", ".join(f"{t} {al}" for t, al in tables)
            out.append(f"SELECT {a}.{col} FROM {body} WHERE " + " AND ".join(conds + filters))
            continue
        where = " AND ".join(filters)
        where = f"{where} AND " if where else ""
        inner = _filter(rng, b, schema[parent])
        if shape in ("exists", "not_exists"):
            word = "EXISTS" if shape == "exists" else "NOT EXISTS"
            out.append(f"SELECT {a}.{col} FROM {child} {a} WHERE {where}{word} (SELECT 1 FROM {parent} {b} "
                       f"WHERE {b}.{key} = {a}.{col} AND {inner})")
        elif shape == "not_in" and (child, col) in not_null and (parent, key) in not_null:
            out.append(f"SELECT {a}.{col} FROM {child} {a} WHERE {where}{a}.{col} NOT IN "
                       f"(SELECT {b}.{key} FROM {parent} {b} WHERE {inner})")
        elif shape == "scalar" and _numeric(schema[child]):
            value = rng.choice(_numeric(schema[child]))
            out.append(f"SELECT {b}.{key} FROM {parent} {b} WHERE {inner} AND {b}.{key} > (SELECT "
                       f"{rng.choice(['avg', 'max', 'min', 'sum'])}({a}.{value}) FROM {child} {a} "
                       f"WHERE {a}.{col} = {b}.{key})")
        elif shape == "left":
            out.append(f"SELECT {a}.{col}, {b}.{key} FROM {child} {a} LEFT JOIN {parent} {b} "
                       f"ON {b}.{key} = {a}.{col} WHERE {where}{inner}")
    return out
